"""The GroupNorm U-Net side of the conv-fusion benchmark: Q/K/V + GroupNorm-affine fusion of the
zoo teacher (what can be fused: two variants of the comparison, the fused one judged by its
deviation from the eager teacher on the same inputs, `reference.conv_fusion.measure` (1)) and its
GroupNorms frozen on one input (what cannot: two reference rows, measured once)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import nn

from reference.harness import sizes
from reference.harness.compare import Variant
from reference.harness.results import Row

from .denoiser import noisy_digits
from .groupnorm import GroupNormFoldError, freeze_groupnorms, fuse_unet_attention


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


def unet_variants(unet: nn.Module, batch: int) -> tuple[list[Variant], int]:
    """The eager teacher (its own baseline) and the teacher with fused attention projections
    (timed against it), one denoiser call on ``batch`` noisy digits at random timesteps; and
    the number of attention blocks fused."""
    fused = copy.deepcopy(unet)
    blocks = fuse_unet_attention(fused)

    def call(net: nn.Module, seed: int) -> Callable[[], torch.Tensor]:
        x = noisy_digits(batch, seed=seed)
        t = torch.randint(0, 1000, (batch,), generator=torch.Generator().manual_seed(seed))
        y = torch.arange(batch) % 11
        return lambda: net(x, t, class_labels=y).sample

    def sample(net: nn.Module) -> Callable[[int], torch.Tensor]:
        def run(seed: int) -> torch.Tensor:
            with torch.inference_mode():
                return call(net, seed)()

        return run

    config = {"batch": batch}
    return [
        Variant("unet-eager", {"method": "unet-eager", **config}, "baseline",
                sample(unet), call(unet, sizes.LATENCY_SEED), against="unet-eager"),
        Variant("unet-fused", {"method": "unet-fused", "blocks": blocks, **config}, "technique",
                sample(fused), call(fused, sizes.LATENCY_SEED), against="unet-eager"),
    ], blocks  # fmt: skip


def groupnorm_rows(g: GroupNormFoldError) -> list[Row]:
    """The reference rows of the counter-example: measured once, not per seed."""
    return [
        Row(
            "unet-gn-frozen-same",
            {"method": "unet-gn-frozen-same", "t": 50},
            "reference",
            {"groupnorm_rel_error": g.on_calibration_input},
        ),
        Row(
            "unet-gn-frozen-other",
            {"method": "unet-gn-frozen-other", "t_calib": 50, "t": 900},
            "reference",
            {"groupnorm_rel_error": g.on_other_input},
        ),
    ]
