"""Why GroupNorm cannot be folded, and what a GroupNorm U-Net can fuse instead (Q/K/V)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

# --------------------------------------------------------------------------- GroupNorm


@dataclass
class GroupNormFoldError:
    """Relative error of a GroupNorm whose statistics were frozen on one input."""

    on_calibration_input: float
    on_other_input: float


class FrozenGroupNorm(nn.Module):
    """A GroupNorm whose statistics were frozen: ``y = scale * x + shift`` per channel.

    This is what folding a GroupNorm into a neighbouring linear layer would require (a fixed
    per-channel affine map, like an eval-mode BatchNorm). It is exact only for the input its
    statistics came from.
    """

    def __init__(self, scale: torch.Tensor, shift: torch.Tensor, spatial_dims: int) -> None:
        super().__init__()
        shape = (1, -1, *([1] * spatial_dims))
        self.register_buffer("scale", scale.reshape(shape))
        self.register_buffer("shift", shift.reshape(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.double() * self.scale + self.shift).to(x.dtype)


def frozen_groupnorm(gn: nn.GroupNorm, x_calib: torch.Tensor) -> FrozenGroupNorm:
    """GroupNorm with its mean and variance frozen to those of one sample ``x_calib [1, C, ...]``.

    Returns a [`FrozenGroupNorm`][reference.conv_fusion.groupnorm.FrozenGroupNorm]: ``s * x + t``
    with ``s = gamma / sqrt(var + eps)`` and ``t = beta - mean * s`` computed from ``x_calib``'s
    group statistics.
    """
    if x_calib.shape[0] != 1:
        raise ValueError("frozen_groupnorm: calibrate on one sample ([1, C, ...])")
    c, g = gn.num_channels, gn.num_groups
    xs = x_calib.detach().double().reshape(g, -1)
    mean = xs.mean(1).repeat_interleave(c // g)
    var = xs.var(1, unbiased=False).repeat_interleave(c // g)
    gamma = xs.new_ones(c) if gn.weight is None else gn.weight.double()
    beta = xs.new_zeros(c) if gn.bias is None else gn.bias.double()
    scale = gamma.detach() / torch.sqrt(var + gn.eps)
    return FrozenGroupNorm(scale, beta.detach() - mean * scale, x_calib.dim() - 2)


@torch.no_grad()
def freeze_groupnorms(model: nn.Module, run: Callable[[nn.Module], Any]) -> nn.Module:
    """A copy of ``model`` with every GroupNorm frozen to its statistics during ``run(model)``.

    ``run`` must feed exactly one sample (statistics are per sample). The copy is what a
    "GroupNorm-folded" network would compute.
    """
    import copy

    out = copy.deepcopy(model).eval()
    seen: dict[str, torch.Tensor] = {}

    def record(name: str, inputs: tuple[torch.Tensor, ...]) -> None:
        seen.setdefault(name, inputs[0].detach())  # a hook must return None

    hooks = [
        m.register_forward_hook(lambda mod, i, o, n=n: record(n, i))
        for n, m in out.named_modules()
        if isinstance(m, nn.GroupNorm)
    ]
    try:
        run(out)
    finally:
        for h in hooks:
            h.remove()
    for name, x in seen.items():
        parent, _, child = name.rpartition(".")
        gn = out.get_submodule(name)
        setattr(out.get_submodule(parent) if parent else out, child, frozen_groupnorm(gn, x))
    return out


@torch.no_grad()
def groupnorm_fold_error(
    gn: nn.GroupNorm, x_calib: torch.Tensor, x_other: torch.Tensor
) -> GroupNormFoldError:
    """Relative L2 error ``||frozen(x) - gn(x)|| / ||gn(x)||`` on ``x_calib`` and ``x_other``."""
    frozen = frozen_groupnorm(gn, x_calib)

    def rel(x: torch.Tensor) -> float:
        ref = gn(x)
        return float((frozen(x) - ref).norm() / ref.norm().clamp_min(1e-30))

    return GroupNormFoldError(rel(x_calib), rel(x_other))


def _attention_modules(model: nn.Module) -> list[nn.Module]:
    from diffusers.models.attention_processor import Attention

    return [m for m in model.modules() if isinstance(m, Attention)]


@torch.no_grad()
def fold_attention_norm_affine(attn: nn.Module) -> None:
    """Fold the affine ``gamma, beta`` of a diffusers ``Attention.group_norm`` into Q, K, V.

    ``to_q(gamma * n + beta) = (W diag(gamma)) n + (W beta + b)`` for the normalised input ``n``:
    the projections absorb the affine, and the GroupNorm keeps only its (input-dependent)
    normalisation (``affine=False``). In place; self-attention blocks only.
    """
    gn = getattr(attn, "group_norm", None)
    if gn is None or not gn.affine:
        return
    if attn.is_cross_attention or attn.spatial_norm is not None:
        raise ValueError("fold_attention_norm_affine: only plain self-attention blocks")
    gamma, beta = gn.weight.double(), gn.bias.double()
    for lin in (attn.to_q, attn.to_k, attn.to_v):
        w = lin.weight.double()
        b = w.new_zeros(w.shape[0]) if lin.bias is None else lin.bias.double()
        new_b = b + w @ beta
        lin.weight.copy_((w * gamma[None, :]).to(lin.weight.dtype))
        if lin.bias is None:
            lin.bias = nn.Parameter(new_b.to(lin.weight.dtype))
        else:
            lin.bias.copy_(new_b.to(lin.bias.dtype))
    attn.group_norm = nn.GroupNorm(gn.num_groups, gn.num_channels, eps=gn.eps, affine=False)


def fuse_unet_attention(unet: nn.Module, *, fold_norm_affine: bool = True) -> int:
    """Fuse Q/K/V of every self-attention block of a diffusers ``UNet2DModel`` (in place).

    Per block: optionally
    [`fold_attention_norm_affine`][reference.conv_fusion.groupnorm.fold_attention_norm_affine], then
    diffusers' ``Attention.fuse_projections()`` (one ``to_qkv`` Linear) and
    ``FusedAttnProcessor2_0``. Returns the number of blocks fused.
    """
    from diffusers.models.attention_processor import FusedAttnProcessor2_0

    blocks = [a for a in _attention_modules(unet) if not a.is_cross_attention]
    for attn in blocks:
        if fold_norm_affine:
            fold_attention_norm_affine(attn)
        attn.fuse_projections()
        attn.set_processor(FusedAttnProcessor2_0())
        # The separate projections are no longer used by the fused processor.
        for name in ("to_q", "to_k", "to_v"):
            getattr(attn, name).requires_grad_(False)
    return len(blocks)
