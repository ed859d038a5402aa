"""Short training runs of a tiny U-Net from scratch, one per scheme, on a common yardstick.

Every run starts from the same initial weights, sees the same images in the same order (the
data generator has the same seed) and the same number of examples; only the parameterization,
the timestep proposal and the noise coupling differ. Adam is used because it is invariant to a
constant rescaling of the loss, so the different loss scales of the parameterizations do not act
as different learning rates (their *relative* weighting of noise levels still matters).

The losses of different parameterizations are on different scales, so progress is read on
yardsticks that do not depend on the scheme, computed on a fixed held-out set (the 300 test
digits, each with fixed noise at fixed, evenly spread timesteps): the eps-MSE with uniform ``t``
(the zoo's training objective, DDPM's ``L_simple``) and the x0-MSE with uniform ``t`` of the
prediction clipped to [-1, 1] (what the sampler uses: unclipped, an eps-network's
``x0_hat = (x_t - sigma_t eps_hat)/alpha_t`` explodes as ``alpha_t -> 0``). After the budget,
samples of every model are drawn with DDIM on the clipped ODE and scored with the FDD. As in
DDPM practice the evaluated weights are an exponential moving average (EMA) of the iterates,
which removes most of the last-step noise of a short run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from reference.harness.sampling import frozen
from reference.zoo.specs import TEACHER_CONFIG

from .objectives import Parameterization
from .samplers import LossSecondMomentHistory, Sampling, TimestepProposal, draw

_UNCONDITIONAL = ("attention_head_dim", "num_class_embeds")
TINY_UNET: dict[str, Any] = {
    **{k: v for k, v in TEACHER_CONFIG.items() if k not in _UNCONDITIONAL},
    "block_out_channels": [16, 32],
    "down_block_types": ["DownBlock2D"] * 2,
    "up_block_types": ["UpBlock2D"] * 2,
}
"""A small unconditional ``UNet2DModel`` (about 0.16 M parameters) that trains in seconds: the zoo
teacher's configuration (`reference.zoo.specs.TEACHER_CONFIG`) without attention or class
embedding, two levels at half its width."""


def build_tiny_unet(seed: int = 0) -> nn.Module:
    """The tiny U-Net with weights drawn from a fixed seed (the global RNG is restored)."""
    from diffusers import UNet2DModel

    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return UNet2DModel(**TINY_UNET)
    finally:
        torch.random.set_rng_state(state)


@dataclass(frozen=True)
class TrainScheme:
    """A parameterization trained with a minibatch sampling scheme."""

    key: str
    name: str
    parameterization: str
    sampling: Sampling


@dataclass(frozen=True)
class Heldout:
    """The fixed yardstick set: clean images, timesteps evenly spread over ``0..T-1``, noise."""

    x0: torch.Tensor
    t: torch.Tensor
    eps: torch.Tensor

    @classmethod
    def make(cls, x: torch.Tensor, T: int, repeats: int = 4, seed: int = 123) -> Heldout:
        gen = torch.Generator().manual_seed(seed)
        x0 = x.repeat(repeats, 1, 1, 1)
        n = len(x0)
        t = ((torch.arange(n, dtype=torch.float64) + 0.5) * T / n).long()
        t = t[torch.randperm(n, generator=gen)]
        return cls(x0, t, torch.randn(x0.shape, generator=gen))


@torch.no_grad()
def yardsticks(
    model: nn.Module, p: Parameterization, h: Heldout, batch: int = 600
) -> dict[str, float]:
    """Held-out eps-MSE and clipped-x0-MSE (uniform ``t``) of ``model`` read as ``p``."""
    eps_se, x0_se = 0.0, 0.0
    for i in range(0, len(h.x0), batch):
        x0, t, eps = h.x0[i : i + batch], h.t[i : i + batch], h.eps[i : i + batch]
        x_t = p.schedule.add_noise(x0, eps, t)
        out = model(p.network_input(x_t, t), t, return_dict=False)[0]
        eps_se += float((p.to_eps(out, x_t, t) - eps).square().mean(dim=(1, 2, 3)).sum())
        x0_hat = p.to_x0(out, x_t, t).clamp(-1.0, 1.0)
        x0_se += float((x0_hat - x0).square().mean(dim=(1, 2, 3)).sum())
    return {"eps_mse": eps_se / len(h.x0), "x0_mse": x0_se / len(h.x0)}


@dataclass
class Curve:
    """Yardsticks against examples seen, and the mean training loss between evaluations."""

    examples: list[int] = field(default_factory=list)
    eps_mse: list[float] = field(default_factory=list)
    x0_mse: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)


def proposal_for(
    sampling: Sampling,
    uniform: TimestepProposal,
    edm: TimestepProposal,
    history: LossSecondMomentHistory | None,
) -> TimestepProposal:
    if sampling.proposal == "edm":
        return edm
    if sampling.proposal == "importance":
        assert history is not None
        return history.proposal()
    return uniform


def train(
    scheme: TrainScheme,
    p: Parameterization,
    x_train: torch.Tensor,
    heldout: Heldout,
    proposals: tuple[TimestepProposal, TimestepProposal],
    *,
    steps: int,
    batch: int,
    lr: float = 2e-3,
    eval_every: int = 50,
    seed: int = 0,
    history_shape: tuple[int, int] = (50, 10),
    ema_decay: float = 0.99,
    on_step: Callable[[], None] | None = None,
) -> tuple[nn.Module, Curve]:
    """Train a fresh tiny U-Net for ``steps`` steps; return its EMA and its yardstick curve.

    The minibatch loss is ``mean_i p(t_i)/q(t_i) * l_p(x_0^i, t_i, eps_i)`` with ``p`` the
    objective's noise-level distribution and ``q`` the proposal (weights are 1 unless ``q``
    differs from ``p``), so importance sampling leaves the objective unchanged.
    ``history_shape``: ``(bins, losses per bin)`` of the importance-sampling history. The
    yardsticks are measured on the EMA weights (``ema_decay``; 0 evaluates the raw iterate).
    """
    if steps < 1 or batch < 2:
        raise ValueError(f"steps must be >= 1 and batch >= 2, got steps={steps}, batch={batch}")
    uniform, edm = proposals
    p_obj = edm.pmf if p.name == "edm" else uniform.pmf
    model = build_tiny_unet(seed).train()
    ema = frozen(copy.deepcopy(model))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    history = None
    if scheme.sampling.proposal == "importance":
        history = LossSecondMomentHistory(p.schedule.T, *history_shape)
    curve, running = Curve(), []

    def evaluate(step: int) -> None:
        ys = yardsticks(ema, p, heldout)
        curve.examples.append(step * batch)
        curve.eps_mse.append(ys["eps_mse"])
        curve.x0_mse.append(ys["x0_mse"])
        curve.train_loss.append(sum(running) / len(running) if running else float("nan"))
        running.clear()

    evaluate(0)
    for step in range(1, steps + 1):
        q = proposal_for(scheme.sampling, uniform, edm, history)
        d = draw(scheme.sampling, q, len(x_train), batch, tuple(x_train.shape[1:]), gen)
        x0 = x_train[d.index]
        x_t = p.schedule.add_noise(x0, d.eps, d.t)
        out = model(p.network_input(x_t, d.t), d.t, return_dict=False)[0]
        per_example = p.loss_per_example(out, x0, d.eps, d.t)
        loss = ((p_obj[d.t] / d.q).to(per_example.dtype) * per_example).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for e, w in zip(ema.parameters(), model.parameters(), strict=True):
                e.lerp_(w, 1.0 - ema_decay)
        running.append(float(loss.detach()))
        if history is not None:
            history.update(d.t, per_example)
        if on_step is not None:
            on_step()
        if step % eval_every == 0 or step == steps:
            evaluate(step)
    return ema.requires_grad_(True), curve


def eps_fn_of(model: nn.Module, p: Parameterization):
    """The harness's ``eps_fn(x_t, t, labels)`` for a model of parameterization ``p``."""

    def eps_fn(x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        out = model(p.network_input(x_t, t), t, return_dict=False)[0]
        return p.to_eps(out, x_t, t)

    return eps_fn
