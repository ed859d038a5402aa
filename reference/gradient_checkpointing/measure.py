"""Measurements of one training step per checkpointing policy, the chain law and peak RSS.

Every policy runs the same training step (epsilon-prediction MSE, Ho et al. 2020 arXiv
2006.11239, on a fixed batch of noised training digits) on its own copy of the same weights.
For each one this module measures, in one process:

* the bytes autograd retains for the backward pass at the end of the forward pass
  (`reference.harness.bytes_saved_for_backward`, exact);
* the peak of live activation bytes over forward, recomputation and backward
  ([`peak_activation_bytes`][reference.gradient_checkpointing.memory.peak_activation_bytes]);
* matmul/conv FLOPs of the whole step, recomputation included;
* the parameter gradients (compared with the baseline's);

and returns the step itself, which the benchmark declares as its variant's timed call
(`reference.harness.compare`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from reference.data import load_digits_tensors
from reference.harness import bytes_saved_for_backward, count_flops, peak_rss_of

from .api import POLICIES, CheckpointConfig, apply_gradient_checkpointing
from .memory import peak_activation_bytes
from .policies import chain_loss, make_chain, sqrt_segments

MB = 2**20
ForwardFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Batch:
    """A fixed training batch: noised images ``x_t``, timesteps, labels and the target noise."""

    x_t: torch.Tensor
    t: torch.Tensor
    labels: torch.Tensor
    noise: torch.Tensor

    def tensors(self) -> list[torch.Tensor]:
        return [self.x_t, self.t, self.labels, self.noise]


def training_batch(batch: int, seed: int = 0) -> Batch:
    """``batch`` training digits noised at uniform timesteps of the zoo schedule (seeded)."""
    from reference.zoo import teacher_scheduler

    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    x, y = load_digits_tensors("train")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(x), (batch,), generator=gen)
    noise = torch.randn(x[idx].shape, generator=gen)
    t = torch.randint(0, 1000, (batch,), generator=gen)
    x_t = teacher_scheduler("DDPMScheduler").add_noise(x[idx], noise, t)
    return Batch(x_t, t, y[idx], noise)


def prepare(unet: nn.Module, policy: str) -> tuple[nn.Module, ForwardFn]:
    """A copy of ``unet`` (train mode) checkpointed under ``policy``, and its forward function."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
    model = copy.deepcopy(unet).train()
    if policy != "none":
        apply_gradient_checkpointing(model, CheckpointConfig(policy))

    def forward(x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return model(x, t, class_labels=y, return_dict=False)[0]

    return model, forward


def microbatch_loss(forward: ForwardFn, b: Batch, part: slice, total: int) -> torch.Tensor:
    """Epsilon MSE of the rows ``part``, weighted so that the parts sum to the full-batch mean."""
    eps = forward(b.x_t[part], b.t[part], b.labels[part])
    return F.mse_loss(eps, b.noise[part]) * (eps.shape[0] / total)


def make_step(
    model: nn.Module, forward: ForwardFn, b: Batch, microbatches: int = 1
) -> tuple[Callable[[], None], slice]:
    """A zero-argument training step (zero the gradients in place, forward + backward per
    micro-batch) and the rows of its first micro-batch."""
    n = b.x_t.shape[0]
    if not 1 <= microbatches <= n:
        raise ValueError(f"microbatches must be between 1 and the batch size {n}")
    bounds = [round(i * n / microbatches) for i in range(microbatches + 1)]
    parts = [slice(bounds[i], bounds[i + 1]) for i in range(microbatches)]

    def step() -> None:
        model.zero_grad(set_to_none=False)
        for part in parts:
            microbatch_loss(forward, b, part, n).backward()

    return step, parts[0]


@dataclass
class PolicyMeasurement:
    """Everything measured for one policy except latency."""

    saved_bytes: int
    peak_bytes: int
    flops: int
    grads: list[torch.Tensor]


def measure_policy(
    unet: nn.Module, policy: str, b: Batch, microbatches: int = 1
) -> tuple[PolicyMeasurement, Callable[[], None]]:
    """Retained bytes, peak bytes, FLOPs and gradients of one policy; also returns its step."""
    model, forward = prepare(unet, policy)
    step, first = make_step(model, forward, b, microbatches)
    n = b.x_t.shape[0]
    saved = bytes_saved_for_backward(lambda: microbatch_loss(forward, b, first, n))
    step()  # creates the .grad buffers, so the peak below measures activations only
    params = list(model.parameters())
    exclude = [*params, *(p.grad for p in params if p.grad is not None), *b.tensors()]
    peak = peak_activation_bytes(step, exclude)
    step()
    grads = [p.grad.detach().clone() for p in params]
    flops = count_flops(step)
    return PolicyMeasurement(saved, peak, flops, grads), step


def max_grad_difference(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> float:
    """``max |a_i - b_i|`` over all parameter gradients."""
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


@dataclass
class ChainCurves:
    """Retained and peak activation bytes of a chain, in units of one block input."""

    ns: list[int]
    saved: dict[str, list[float]]
    peak: dict[str, list[float]]


def chain_policies(n: int) -> dict[str, int]:
    """Segment counts for the chain: none (1), per block (n), sqrt(n) segments."""
    return {"none": 1, "per-block": n, "sqrt": sqrt_segments(n)}


def chain_point(chain: nn.Sequential, x: torch.Tensor, segments: int) -> tuple[int, int]:
    """Retained bytes (harness counter) and peak live bytes of one chain training step."""

    def loss() -> torch.Tensor:
        return chain_loss(chain, x, segments)

    def step() -> None:
        chain.zero_grad(set_to_none=False)
        loss().backward()

    saved = bytes_saved_for_backward(loss)
    step()
    params = list(chain.parameters())
    return saved, peak_activation_bytes(step, [*params, *(p.grad for p in params), x])


def chain_curves(ns: Sequence[int], width: int = 64, batch: int = 128) -> ChainCurves:
    """Measure the chain of [`make_chain`][reference.gradient_checkpointing.policies.make_chain] for
    every ``n`` and policy."""
    unit = batch * width * 4
    curves = ChainCurves(list(ns), {}, {})
    for n in ns:
        chain = make_chain(n, width)
        x = torch.randn(batch, width, generator=torch.Generator().manual_seed(n))
        for label, segments in chain_policies(n).items():
            saved, peak = chain_point(chain, x, segments)
            curves.saved.setdefault(label, []).append(saved / unit)
            curves.peak.setdefault(label, []).append(peak / unit)
    return curves


def rss_probe(policy: str | None, batch: int, microbatches: int = 1) -> None:
    """Build the teacher architecture and, unless ``policy`` is None, run two training steps.

    Run in a fresh process by `reference.harness.peak_rss_of`; the weights do not change
    the memory, so a freshly initialised model of the zoo configuration is used.
    """
    from reference.zoo import SPECS

    torch.manual_seed(0)
    unet = SPECS["teacher"].build_model()
    b = training_batch(batch)
    if policy is not None:
        model, forward = prepare(unet, policy)
        step, _ = make_step(model, forward, b, microbatches)
        step()
        step()


def peak_rss_mb(policy: str | None, batch: int, microbatches: int = 1) -> float:
    """Peak resident set size (MB) of a fresh process running
    [`rss_probe`][reference.gradient_checkpointing.measure.rss_probe]."""
    code = (
        "import torch; torch.set_num_threads(2)\n"
        "from reference.gradient_checkpointing.measure import rss_probe\n"
        f"rss_probe({policy!r}, {batch}, {microbatches})"
    )
    return peak_rss_of(code) / MB


def growth(values: Sequence[float], ns: Sequence[int]) -> float:
    """The exponent ``p`` of ``values ~ n^p`` fitted by least squares on log-log axes."""
    import numpy as np

    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])
