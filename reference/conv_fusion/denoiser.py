"""A toy DnCNN-style BatchNorm denoiser, BN calibration, and the memory traffic fusion removes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from .fold import BN_TYPES

# --------------------------------------------------------------------------- a toy BN denoiser


class ToyBNDenoiser(nn.Module):
    """A **toy**, DnCNN-style BatchNorm denoiser (Zhang et al. 2016, arXiv:1608.03981).

    ``Conv(1->w)+ReLU``, then ``depth - 2`` blocks ``Conv(w->w, no bias) -> BatchNorm -> ReLU``,
    then ``Conv(w->1)`` predicting the noise residual. It exists to give the fusion a deeper
    Conv-BN-ReLU network than the zoo classifier; it is not a zoo model and is not trained (its
    BatchNorm statistics are calibrated on noisy digits by
    [`calibrate_batchnorm`][reference.conv_fusion.denoiser.calibrate_batchnorm]), since neither the
    exactness nor the speed of the fold depends on the weights' values.
    """

    def __init__(self, width: int = 32, depth: int = 12, channels: int = 1) -> None:
        super().__init__()
        if depth < 3:
            raise ValueError(f"ToyBNDenoiser: depth must be >= 3, got {depth}")
        if width < 1:
            raise ValueError(f"ToyBNDenoiser: width must be >= 1, got {width}")
        layers: list[nn.Module] = [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU()]
        for _ in range(depth - 2):
            layers += [
                nn.Conv2d(width, width, 3, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(),
            ]
        layers.append(nn.Conv2d(width, channels, 3, padding=1))
        self.body = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


@torch.no_grad()
def calibrate_batchnorm(model: nn.Module, batches: Iterable[torch.Tensor]) -> nn.Module:
    """Set every BatchNorm's running statistics to the exact average over ``batches``.

    Uses ``momentum=None`` (cumulative average) in train mode for the forward passes, then
    restores the momenta and returns the model in eval mode.
    """
    bns = [m for m in model.modules() if isinstance(m, BN_TYPES)]
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    for x in batches:
        model(x)
    for bn, m in zip(bns, momenta, strict=True):
        bn.momentum = m
    return model.eval()


def noisy_digits(n: int, sigma: float = 0.5, seed: int = 0) -> torch.Tensor:
    """``n`` training digits plus Gaussian noise of standard deviation ``sigma``."""
    from reference.harness import load_digits_tensors

    x, _ = load_digits_tensors("train")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(x), (n,), generator=gen)
    return x[idx] + sigma * torch.randn(x[idx].shape, generator=gen)


def make_toy_denoiser(width: int = 32, depth: int = 12, seed: int = 0) -> ToyBNDenoiser:
    """A [`ToyBNDenoiser`][reference.conv_fusion.denoiser.ToyBNDenoiser] with seeded weights and BN
    statistics from noisy digits."""
    torch.manual_seed(seed)
    model = ToyBNDenoiser(width, depth)
    data = noisy_digits(256, seed=seed)
    return calibrate_batchnorm(model, data.split(64))  # type: ignore[return-value]


# --------------------------------------------------------------------------- memory traffic


@dataclass
class TrafficEstimate:
    """Bytes of the elementwise passes of Conv-BN-ReLU blocks, before and after fusion.

    Per folded block with an output of ``A`` bytes: before, BatchNorm reads and writes ``A``
    and the ReLU reads and writes ``A`` (4A); after, only the in-place ReLU remains (2A). The
    convolutions' own traffic is unchanged and not counted.
    """

    bn_layers: int
    activation_bytes: int
    before_bytes: int
    after_bytes: int

    @property
    def saved_bytes(self) -> int:
        return self.before_bytes - self.after_bytes


def batchnorm_inputs(model: nn.Module, x: torch.Tensor) -> list[tuple[nn.Module, torch.Tensor]]:
    """``(bn, input)`` of every BatchNorm call during ``model(x)`` (eval mode, no grad)."""
    seen: list[tuple[nn.Module, torch.Tensor]] = []
    hooks = [
        m.register_forward_hook(lambda mod, inp, out: seen.append((mod, inp[0].detach())))
        for m in model.modules()
        if isinstance(m, BN_TYPES)
    ]
    try:
        with torch.inference_mode():
            model(x)
    finally:
        for h in hooks:
            h.remove()
    return seen


def traffic_estimate(model: nn.Module, x: torch.Tensor) -> TrafficEstimate:
    """Elementwise-pass bytes of ``model(x)``'s BatchNorm + ReLU blocks before/after fusion."""
    acts = [t.numel() * t.element_size() for _, t in batchnorm_inputs(model, x)]
    total = sum(acts)
    return TrafficEstimate(len(acts), total, before_bytes=4 * total, after_bytes=2 * total)


def batchnorm_pass(model: nn.Module, x: torch.Tensor) -> Callable[[], None]:
    """A callable that runs only the BatchNorm layers of ``model(x)`` on their recorded inputs.

    Its time is the BatchNorm work that folding removes (see
    [`relu_passes`][reference.conv_fusion.denoiser.relu_passes] for the rest).
    """
    calls = batchnorm_inputs(model, x)

    def run() -> None:
        with torch.inference_mode():
            for bn, inp in calls:
                bn(inp)

    return run


def relu_passes(model: nn.Module, x: torch.Tensor) -> tuple[Callable[[], None], Callable[[], None]]:
    """``(out_of_place, in_place)``: ReLU on every BatchNorm output of ``model(x)``, as the
    unfused graph runs it (a new output tensor) and as the fused graph runs it (``relu_`` on
    the convolution's own output). Their time difference is the allocation and write of a
    fresh activation tensor per block, which fusion also removes.
    """
    with torch.inference_mode():
        outs = [bn(inp) for bn, inp in batchnorm_inputs(model, x)]
        scratch = [t.clone() for t in outs]

    def out_of_place() -> None:
        with torch.inference_mode():
            for t in outs:
                torch.relu(t)

    def in_place() -> None:
        with torch.inference_mode():
            for t in scratch:
                t.relu_()

    return out_of_place, in_place
