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


def frozen_groupnorm(gn: nn.GroupNorm, x_calib: torch.Tensor) -> Callable[[torch.Tensor], Any]:
    """GroupNorm with its mean and variance frozen to those of one sample ``x_calib [1, C, ...]``.

    This is what folding GroupNorm into a neighbouring linear layer would require: a per-channel
    scale and shift that do not depend on the input. Returns ``x -> s * x + t``.
    """
    if x_calib.shape[0] != 1:
        raise ValueError("frozen_groupnorm: calibrate on one sample ([1, C, ...])")
    c, g = gn.num_channels, gn.num_groups
    xs = x_calib.double().reshape(g, -1)
    mean = xs.mean(1).repeat_interleave(c // g)
    var = xs.var(1, unbiased=False).repeat_interleave(c // g)
    gamma = torch.ones(c, dtype=torch.float64) if gn.weight is None else gn.weight.double()
    beta = torch.zeros(c, dtype=torch.float64) if gn.bias is None else gn.bias.double()
    scale = gamma / torch.sqrt(var + gn.eps)
    shift = beta - mean * scale
    shape = (1, c, *([1] * (x_calib.dim() - 2)))

    def apply(x: torch.Tensor) -> torch.Tensor:
        return (x.double() * scale.reshape(shape) + shift.reshape(shape)).to(x.dtype)

    return apply


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
        b = torch.zeros(w.shape[0], dtype=torch.float64) if lin.bias is None else lin.bias.double()
        new_b = b + w @ beta
        lin.weight.copy_((w * gamma[None, :]).to(lin.weight.dtype))
        if lin.bias is None:
            lin.bias = nn.Parameter(new_b.to(lin.weight.dtype))
        else:
            lin.bias.copy_(new_b.to(lin.bias.dtype))
    attn.group_norm = nn.GroupNorm(gn.num_groups, gn.num_channels, eps=gn.eps, affine=False)


def fuse_unet_attention(unet: nn.Module, *, fold_norm_affine: bool = True) -> int:
    """Fuse Q/K/V of every self-attention block of a diffusers ``UNet2DModel`` (in place).

    Per block: optionally :func:`fold_attention_norm_affine`, then diffusers'
    ``Attention.fuse_projections()`` (one ``to_qkv`` Linear) and ``FusedAttnProcessor2_0``.
    Returns the number of blocks fused.
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
