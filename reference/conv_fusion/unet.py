"""The GroupNorm U-Net side of the conv-fusion benchmark: Q/K/V + GroupNorm-affine fusion of the
zoo teacher (what can be fused) and its GroupNorms frozen on one input (what cannot)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .denoiser import noisy_digits
from .fold import max_abs_diff
from .groupnorm import GroupNormFoldError, freeze_groupnorms, fuse_unet_attention


@dataclass
class UNetRun:
    """QKV (+ GroupNorm affine) fusion on the zoo teacher U-Net."""

    blocks: int
    eager_ms: float
    fused_ms: float
    eager_iqr: float
    fused_iqr: float
    max_diff: float
    groupnorm: GroupNormFoldError
    lat: Any = None


@torch.no_grad()
def unet_groupnorm_freeze_error(unet: nn.Module) -> GroupNormFoldError:
    """Relative error of the whole U-Net's predicted noise when every GroupNorm is frozen to
    its statistics on input 1 (a test digit at t = 50): on input 1 and on input 2 (another
    digit at t = 900)."""
    from reference.data import load_digits_tensors
    from reference.zoo.specs import noise_scheduler

    x0, y = load_digits_tensors("test")
    gen = torch.Generator().manual_seed(0)
    sched = noise_scheduler()

    def point(i: int, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tt = torch.tensor([t])
        x = sched.add_noise(x0[i : i + 1], torch.randn(1, 1, 16, 16, generator=gen), tt)
        return x, tt, y[i : i + 1]

    first, second = point(0, 50), point(1, 900)
    frozen = freeze_groupnorms(unet, lambda m: m(*first[:2], class_labels=first[2]))

    def rel(p: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> float:
        ref = unet(p[0], p[1], class_labels=p[2]).sample
        out = frozen(p[0], p[1], class_labels=p[2]).sample
        return float((out - ref).norm() / ref.norm().clamp_min(1e-30))

    return GroupNormFoldError(rel(first), rel(second))


def measure_unet(batch: int, cfg: Any) -> UNetRun:
    """Eager teacher vs teacher with fused attention projections (one denoiser call)."""
    from reference import zoo
    from reference.harness import compare_latency

    unet = zoo.load_teacher()
    fused = copy.deepcopy(unet)
    blocks = fuse_unet_attention(fused)
    x = noisy_digits(batch, seed=2)
    t = torch.randint(0, 1000, (batch,), generator=torch.Generator().manual_seed(0))
    y = torch.arange(batch) % 11

    def call(net: nn.Module) -> Callable[[], None]:
        def run() -> None:
            with torch.inference_mode():
                net(x, t, class_labels=y)

        return run

    with torch.inference_mode():
        diff = max_abs_diff(unet(x, t, class_labels=y).sample, fused(x, t, class_labels=y).sample)
    lat = compare_latency(
        {"eager": call(unet), "fused": call(fused)},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
    )
    return UNetRun(
        blocks,
        lat.median_ms("eager"),
        lat.median_ms("fused"),
        lat.iqr_ms("eager"),
        lat.iqr_ms("fused"),
        diff,
        unet_groupnorm_freeze_error(unet),
        lat,
    )
