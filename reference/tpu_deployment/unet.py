"""The zoo teacher's forward pass (diffusers ``UNet2DModel``) in plain ``jax.numpy`` / ``lax``.

Parameters are a flat ``dict[str, jax.Array]`` keyed by the torch ``state_dict`` names, so every
line of [`unet_apply`][reference.tpu_deployment.unet.unet_apply] can be checked against the
diffusers module of the same name. Layouts are converted once, at load time
([`convert_state_dict`][reference.tpu_deployment.unet.convert_state_dict]):

* activations are NHWC (channels last, the layout XLA:TPU tiles best); the torch model is NCHW;
* convolution kernels ``OIHW -> HWIO``; linear weights ``[out, in] -> [in, out]``.

Mixed precision: with ``dtype=bfloat16`` weights and activations are bfloat16, but GroupNorm
statistics, the attention softmax and the time embedding are computed in float32 (their
reductions lose too much in an 8-bit mantissa). In float32 every dot/convolution runs at
``lax.Precision.HIGHEST``: on a TPU the *default* precision of a float32 matmul is a single
bfloat16 pass, which would silently break parity with the torch model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

Params = dict[str, jax.Array]

SUPPORTED_DOWN = ("DownBlock2D", "AttnDownBlock2D")
SUPPORTED_UP = ("UpBlock2D", "AttnUpBlock2D")
_DEFAULTS: dict[str, Any] = {
    "center_input_sample": False,
    "time_embedding_type": "positional",
    "flip_sin_to_cos": True,
    "freq_shift": 0,
    "mid_block_type": "UNetMidBlock2D",
    "resnet_time_scale_shift": "default",
    "act_fn": "silu",
    "add_attention": True,
    "class_embed_type": None,
    "downsample_type": "conv",
    "upsample_type": "conv",
    "downsample_padding": 1,
    "mid_block_scale_factor": 1,
    "norm_eps": 1e-5,
    "attn_norm_num_groups": None,
    "time_embedding_dim": None,
    "layers_per_block": 2,
    "norm_num_groups": 32,
    "attention_head_dim": 8,
}
_FIXED = [
    k
    for k in _DEFAULTS
    if k
    not in (
        "layers_per_block",
        "norm_num_groups",
        "attention_head_dim",
        "norm_eps",
        "flip_sin_to_cos",
        "freq_shift",
    )
]


def check_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Fill diffusers defaults and reject features this port does not implement (ValueError)."""
    cfg = {**_DEFAULTS, **{k: v for k, v in config.items() if not k.startswith("_")}}
    for key in _FIXED:
        if cfg[key] != _DEFAULTS[key]:
            raise ValueError(f"UNet2DModel config: {key}={cfg[key]!r} is not supported by the port")
    for kind in cfg["down_block_types"]:
        if kind not in SUPPORTED_DOWN:
            raise ValueError(f"UNet2DModel config: down block {kind!r} is not supported")
    for kind in cfg["up_block_types"]:
        if kind not in SUPPORTED_UP:
            raise ValueError(f"UNet2DModel config: up block {kind!r} is not supported")
    return cfg


def convert_state_dict(state: Mapping[str, Any], dtype: Any = jnp.float32) -> Params:
    """torch/safetensors ``state_dict`` (NumPy or torch tensors) -> JAX parameters (NHWC layout)."""
    params: Params = {}
    for name, value in state.items():
        arr = np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value)
        arr = arr.astype(np.float32)
        if name.endswith(".weight") and arr.ndim == 4:
            arr = arr.transpose(2, 3, 1, 0)  # OIHW -> HWIO
        elif arr.ndim == 2 and name != "class_embedding.weight":
            arr = arr.T  # Linear [out, in] -> [in, out]; the class table stays [rows, dim]
        params[name] = jnp.asarray(arr, dtype=dtype)
    return params


def cast_params(params: Params, dtype: Any) -> Params:
    """The same parameters in ``dtype`` (e.g. ``jnp.bfloat16``)."""
    return {k: v.astype(dtype) for k, v in params.items()}


# --------------------------------------------------------------------------- layers


def _precision(x: jax.Array) -> lax.Precision:
    return lax.Precision.HIGHEST if x.dtype == jnp.float32 else lax.Precision.DEFAULT


def conv2d(p: Params, name: str, x: jax.Array, stride: int = 1) -> jax.Array:
    """``nn.Conv2d`` with ``padding = k // 2`` on NHWC input."""
    w = p[f"{name}.weight"]
    pad = w.shape[0] // 2
    y = lax.conv_general_dilated(
        x,
        w,
        window_strides=(stride, stride),
        padding=[(pad, pad), (pad, pad)],
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision=_precision(x),
    )
    return y + p[f"{name}.bias"]


def linear(p: Params, name: str, x: jax.Array) -> jax.Array:
    """``nn.Linear`` (weight stored ``[in, out]``)."""
    return jnp.dot(x, p[f"{name}.weight"], precision=_precision(x)) + p[f"{name}.bias"]


def group_norm(p: Params, name: str, x: jax.Array, groups: int, eps: float) -> jax.Array:
    """``nn.GroupNorm`` over the last (channel) axis; statistics in float32."""
    shape = x.shape
    x32 = x.astype(jnp.float32).reshape(*shape[:-1], groups, shape[-1] // groups)
    axes = (*range(1, x32.ndim - 2), x32.ndim - 1)
    mean = x32.mean(axis=axes, keepdims=True)
    var = jnp.square(x32 - mean).mean(axis=axes, keepdims=True)
    y = ((x32 - mean) * lax.rsqrt(var + eps)).reshape(shape).astype(x.dtype)
    return y * p[f"{name}.weight"] + p[f"{name}.bias"]


def timestep_embedding(t: jax.Array, dim: int, flip_sin_to_cos: bool, shift: float) -> jax.Array:
    """Sinusoidal embedding of ``t`` [N] (diffusers ``get_timestep_embedding``), float32."""
    half = dim // 2
    freqs = jnp.exp(-math.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / (half - shift))
    args = t.astype(jnp.float32)[:, None] * freqs[None, :]
    sin, cos = jnp.sin(args), jnp.cos(args)
    return jnp.concatenate([cos, sin] if flip_sin_to_cos else [sin, cos], axis=-1)


def resnet_block(
    p: Params, name: str, x: jax.Array, temb: jax.Array, groups: int, eps: float
) -> jax.Array:
    """``ResnetBlock2D``: GN-SiLU-conv, + projected time embedding, GN-SiLU-conv, + shortcut."""
    h = conv2d(p, f"{name}.conv1", jax.nn.silu(group_norm(p, f"{name}.norm1", x, groups, eps)))
    h = h + linear(p, f"{name}.time_emb_proj", jax.nn.silu(temb))[:, None, None, :]
    h = conv2d(p, f"{name}.conv2", jax.nn.silu(group_norm(p, f"{name}.norm2", h, groups, eps)))
    if f"{name}.conv_shortcut.weight" in p:
        x = conv2d(p, f"{name}.conv_shortcut", x)
    return x + h


def attention_block(
    p: Params, name: str, x: jax.Array, head_dim: int, groups: int, eps: float
) -> jax.Array:
    """diffusers ``Attention`` on a feature map: GN, multi-head self-attention, residual."""
    b, hh, ww, c = x.shape
    heads = c // head_dim
    h = group_norm(p, f"{name}.group_norm", x, groups, eps).reshape(b, hh * ww, c)

    def split(v: jax.Array) -> jax.Array:
        return v.reshape(b, hh * ww, heads, head_dim)

    q, k, v = (split(linear(p, f"{name}.to_{n}", h)) for n in "qkv")
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=_precision(q)) / math.sqrt(head_dim)
    weights = jax.nn.softmax(logits.astype(jnp.float32), axis=-1).astype(v.dtype)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v, precision=_precision(v))
    out = linear(p, f"{name}.to_out.0", out.reshape(b, hh * ww, c))
    return out.reshape(b, hh, ww, c) + x


def upsample_nearest(x: jax.Array) -> jax.Array:
    """2x nearest-neighbour upsampling (``F.interpolate(scale_factor=2, mode="nearest")``)."""
    return jnp.repeat(jnp.repeat(x, 2, axis=1), 2, axis=2)


# --------------------------------------------------------------------------- the U-Net


def unet_apply(
    params: Params, cfg: Mapping[str, Any], x: jax.Array, t: jax.Array, labels: jax.Array
) -> jax.Array:
    """Epsilon prediction of ``UNet2DModel`` for NHWC ``x`` [N,H,W,C], timesteps ``t`` [N] and
    int ``labels`` [N]; ``cfg`` from [`check_config`][reference.tpu_deployment.unet.check_config].
    Returns NHWC, in ``x``'s dtype."""
    groups, eps = cfg["norm_num_groups"], cfg["norm_eps"]
    head_dim, layers = cfg["attention_head_dim"], cfg["layers_per_block"]
    dtype = x.dtype
    t_emb = timestep_embedding(
        t, cfg["block_out_channels"][0], cfg["flip_sin_to_cos"], cfg["freq_shift"]
    ).astype(dtype)
    emb = linear(params, "time_embedding.linear_1", t_emb)
    emb = linear(params, "time_embedding.linear_2", jax.nn.silu(emb))
    if "class_embedding.weight" in params:
        emb = emb + params["class_embedding.weight"][labels]

    h = conv2d(params, "conv_in", x)
    skips = [h]
    n_down = len(cfg["down_block_types"])
    for i, kind in enumerate(cfg["down_block_types"]):
        for j in range(layers):
            h = resnet_block(params, f"down_blocks.{i}.resnets.{j}", h, emb, groups, eps)
            if kind.startswith("Attn"):
                name = f"down_blocks.{i}.attentions.{j}"
                h = attention_block(params, name, h, head_dim, groups, eps)
            skips.append(h)
        if i < n_down - 1:
            h = conv2d(params, f"down_blocks.{i}.downsamplers.0.conv", h, stride=2)
            skips.append(h)

    h = resnet_block(params, "mid_block.resnets.0", h, emb, groups, eps)
    h = attention_block(params, "mid_block.attentions.0", h, head_dim, groups, eps)
    h = resnet_block(params, "mid_block.resnets.1", h, emb, groups, eps)

    n_up = len(cfg["up_block_types"])
    for i, kind in enumerate(cfg["up_block_types"]):
        for j in range(layers + 1):
            h = jnp.concatenate([h, skips.pop()], axis=-1)
            h = resnet_block(params, f"up_blocks.{i}.resnets.{j}", h, emb, groups, eps)
            if kind.startswith("Attn"):
                h = attention_block(
                    params, f"up_blocks.{i}.attentions.{j}", h, head_dim, groups, eps
                )
        if i < n_up - 1:
            h = conv2d(params, f"up_blocks.{i}.upsamplers.0.conv", upsample_nearest(h))

    h = jax.nn.silu(group_norm(params, "conv_norm_out", h, groups, eps))
    return conv2d(params, "conv_out", h).astype(dtype)


def nchw_to_nhwc(x: Any) -> Any:
    """``[N,C,H,W] -> [N,H,W,C]`` (NumPy or JAX)."""
    return x.transpose(0, 2, 3, 1)


def nhwc_to_nchw(x: Any) -> Any:
    """``[N,H,W,C] -> [N,C,H,W]`` (NumPy or JAX)."""
    return x.transpose(0, 3, 1, 2)
