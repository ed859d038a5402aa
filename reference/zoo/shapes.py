"""Production shapes: diffusers' own model classes, built from configs with random weights.

Idea
----
The zoo's models are small enough to train on digits; the models people deploy are not. To
show that a technique applies to a real model, and to time it where compute rather than Python
overhead decides the latency, we build diffusers' production classes from their configs:

* **tiny** shapes (``tiny(kind)``): every production class at a few thousand parameters, for
  tests. Same code paths as the real model (cross-attention, AdaLN, joint attention, rotary
  embeddings), a forward pass in milliseconds.
* **real** shapes (``real(kind)``): the published configs of Stable Diffusion 1.5's U-Net and of
  DiT-XL/2, for latency and FLOP measurements. Random weights: enough for cost, never for
  quality.

`example_inputs` builds the keyword arguments each class's ``forward`` expects, so a caller
never spells them per class.

Sources
-------
* Rombach et al., "High-Resolution Image Synthesis with Latent Diffusion Models", CVPR 2022,
  arXiv:2112.10752 (the SD U-Net: channels 320/640/1280/1280, cross-attention width 768).
* Peebles and Xie, "Scalable Diffusion Models with Transformers", ICCV 2023, arXiv:2212.09748
  (DiT-XL/2: 28 layers, width 1152, 16 heads, patch 2, on 32x32x4 latents).

Pitfalls
--------
* Random weights make every quality figure meaningless at these shapes; only cost is measured.
* ``sample_size`` is the latent side, not the pixel side (SD 1.5: 64 latents for 512 px).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

KINDS = ("unet2d", "unet2d-condition", "dit", "pixart", "sd3", "flux")
"""Every production class the reference implementations are tested on."""

CLASS_OF = {
    "unet2d": "UNet2DModel",
    "unet2d-condition": "UNet2DConditionModel",
    "dit": "DiTTransformer2DModel",
    "pixart": "PixArtTransformer2DModel",
    "sd3": "SD3Transformer2DModel",
    "flux": "FluxTransformer2DModel",
}

_TINY: dict[str, dict[str, Any]] = {
    "unet2d": {
        "sample_size": 8,
        "in_channels": 3,
        "out_channels": 3,
        "block_out_channels": (8, 16),
        "layers_per_block": 1,
        "norm_num_groups": 4,
        "down_block_types": ("DownBlock2D", "AttnDownBlock2D"),
        "up_block_types": ("AttnUpBlock2D", "UpBlock2D"),
        "attention_head_dim": 8,
    },
    "unet2d-condition": {
        "sample_size": 8,
        "in_channels": 4,
        "out_channels": 4,
        "block_out_channels": (8, 16),
        "layers_per_block": 1,
        "norm_num_groups": 4,
        "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"),
        "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D"),
        "cross_attention_dim": 12,
        "attention_head_dim": 4,
    },
    "dit": {
        "num_attention_heads": 2,
        "attention_head_dim": 8,
        "in_channels": 4,
        "out_channels": 8,
        "num_layers": 2,
        "sample_size": 8,
        "patch_size": 2,
        "num_embeds_ada_norm": 10,
        "norm_type": "ada_norm_zero",
    },
    "pixart": {
        "num_attention_heads": 2,
        "attention_head_dim": 8,
        "in_channels": 4,
        "out_channels": 8,
        "num_layers": 2,
        "cross_attention_dim": 16,
        "sample_size": 8,
        "patch_size": 2,
        "caption_channels": 12,
        "use_additional_conditions": False,
    },
    "sd3": {
        "sample_size": 8,
        "patch_size": 2,
        "in_channels": 4,
        "num_layers": 2,
        "attention_head_dim": 8,
        "num_attention_heads": 2,
        "joint_attention_dim": 12,
        "caption_projection_dim": 16,
        "pooled_projection_dim": 10,
        "out_channels": 4,
        "pos_embed_max_size": 16,
    },
    "flux": {
        "patch_size": 1,
        "in_channels": 16,
        "num_layers": 1,
        "num_single_layers": 1,
        "attention_head_dim": 8,
        "num_attention_heads": 2,
        "joint_attention_dim": 12,
        "pooled_projection_dim": 10,
        "axes_dims_rope": (2, 2, 4),
    },
}

_REAL: dict[str, dict[str, Any]] = {
    # Stable Diffusion 1.5's U-Net (runwayml/stable-diffusion-v1-5, unet/config.json)
    "unet2d-condition": {
        "sample_size": 64,
        "in_channels": 4,
        "out_channels": 4,
        "block_out_channels": (320, 640, 1280, 1280),
        "layers_per_block": 2,
        "down_block_types": (
            "CrossAttnDownBlock2D",
            "CrossAttnDownBlock2D",
            "CrossAttnDownBlock2D",
            "DownBlock2D",
        ),
        "up_block_types": (
            "UpBlock2D",
            "CrossAttnUpBlock2D",
            "CrossAttnUpBlock2D",
            "CrossAttnUpBlock2D",
        ),
        "cross_attention_dim": 768,
        "attention_head_dim": 8,
        "norm_num_groups": 32,
    },
    # DiT-XL/2 at 256 px (facebook/DiT-XL-2-256, transformer/config.json)
    "dit": {
        "num_attention_heads": 16,
        "attention_head_dim": 72,
        "in_channels": 4,
        "out_channels": 8,
        "num_layers": 28,
        "sample_size": 32,
        "patch_size": 2,
        "num_embeds_ada_norm": 1000,
        "norm_type": "ada_norm_zero",
    },
}
REAL_KINDS = tuple(_REAL)
TEXT_TOKENS = {"unet2d-condition": 77, "pixart": 120, "sd3": 77, "flux": 77}
"""Prompt length of each text-conditioned class at real shape (tiny shapes use 5 tokens)."""


def config(kind: str, real: bool = False) -> dict[str, Any]:
    """The constructor keywords of ``kind`` (a copy), tiny or at its published real shape."""
    table = _REAL if real else _TINY
    if kind not in table:
        shapes = "real" if real else "tiny"
        raise KeyError(f"no {shapes} shape {kind!r}; known: {', '.join(table)}")
    return dict(table[kind])


def build(
    kind: str, real: bool = False, seed: int = 0, sample_size: int | None = None
) -> nn.Module:
    """``kind``'s diffusers class from `config`, random weights from ``seed``, in eval mode.

    ``sample_size`` (a latent side) replaces the config's: DiT-XL/2's 512-pixel model is the
    256-pixel one at ``sample_size=64``, with position embeddings laid out for 64x64 latents.
    """
    import diffusers

    torch.manual_seed(seed)
    keywords = config(kind, real) | ({"sample_size": sample_size} if sample_size else {})
    model = getattr(diffusers, CLASS_OF[kind])(**keywords)
    return model.eval()


def tiny(kind: str, seed: int = 0) -> nn.Module:
    """A tiny ``kind`` for tests (a forward pass in milliseconds)."""
    return build(kind, real=False, seed=seed)


def real(kind: str, seed: int = 0) -> nn.Module:
    """``kind`` at its published real shape, random weights (cost only, never quality)."""
    return build(kind, real=True, seed=seed)


def example_inputs(
    model: nn.Module,
    batch: int = 1,
    timestep: float = 500.0,
    seed: int = 0,
    side: int | None = None,
) -> dict[str, Any]:
    """Keyword arguments of one ``model(**inputs)`` call for any class in `CLASS_OF`, beside
    ``model``'s parameters: on their device, floating inputs other than the timestep in their
    dtype (drawn on the CPU from ``seed`` first, so the values do not depend on the device).

    ``side`` is the latent side (default: the config's ``sample_size``); prompts have the real
    length of `TEXT_TOKENS` from a side of 32 up, 5 tokens below.
    """
    with torch.device("cpu"):  # whatever the default device is
        inputs = _cpu_inputs(model, batch, timestep, seed, side)
    first = next(model.parameters())

    def placed(key: str, value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        floating = value.is_floating_point() and key != "timestep"
        return value.to(first.device, first.dtype if floating else value.dtype)

    return {key: placed(key, value) for key, value in inputs.items()}


def _cpu_inputs(
    model: nn.Module, batch: int, timestep: float, seed: int, side: int | None
) -> dict[str, Any]:
    kind = kind_of(model)
    cfg = model.config
    g = torch.Generator().manual_seed(seed)
    t = torch.full((batch,), float(timestep))
    if kind == "flux":
        side = 4
        tokens = 5
        return {
            "hidden_states": torch.randn(batch, side * side, cfg.in_channels, generator=g),
            "encoder_hidden_states": torch.randn(
                batch, tokens, cfg.joint_attention_dim, generator=g
            ),
            "pooled_projections": torch.randn(batch, cfg.pooled_projection_dim, generator=g),
            "timestep": t / 1000.0,
            "img_ids": _flux_ids(side),
            "txt_ids": torch.zeros(tokens, 3),
            "return_dict": False,
        }
    side = side or cfg.sample_size
    channels = cfg.in_channels
    out: dict[str, Any] = {
        "hidden_states": torch.randn(batch, channels, side, side, generator=g),
        "timestep": t.long() if kind in ("dit", "pixart") else t,
        "return_dict": False,
    }
    tokens = TEXT_TOKENS.get(kind, 0) if side >= 32 else 5
    if kind == "unet2d":
        out["sample"] = out.pop("hidden_states")
    elif kind == "unet2d-condition":
        out["sample"] = out.pop("hidden_states")
        width = cfg.cross_attention_dim
        out["encoder_hidden_states"] = torch.randn(batch, tokens, width, generator=g)
    elif kind == "dit":
        out["class_labels"] = torch.zeros(batch, dtype=torch.long)
    elif kind == "pixart":
        width = cfg.caption_channels
        out["encoder_hidden_states"] = torch.randn(batch, tokens, width, generator=g)
        out["added_cond_kwargs"] = {"resolution": None, "aspect_ratio": None}
    elif kind == "sd3":
        width = cfg.joint_attention_dim
        out["encoder_hidden_states"] = torch.randn(batch, tokens, width, generator=g)
        out["pooled_projections"] = torch.randn(batch, cfg.pooled_projection_dim, generator=g)
    return out


def _flux_ids(side: int) -> torch.Tensor:
    rows = torch.arange(side).repeat_interleave(side)
    cols = torch.arange(side).repeat(side)
    return torch.stack([torch.zeros_like(rows), rows, cols], dim=1).float()


def kind_of(model: nn.Module) -> str:
    """The `KINDS` name of ``model``'s class (``KeyError`` naming it when it is none of them)."""
    name = type(model).__name__
    for kind, cls in CLASS_OF.items():
        if cls == name:
            return kind
    raise KeyError(f"{name} is not a production class; known: {', '.join(CLASS_OF.values())}")
