"""Two schedulers written from the papers, with diffusers' ``set_timesteps``/``step`` protocol.

[`MinimalDDIM`][reference.scheduler_tradeoff.solvers.MinimalDDIM] (Song et al. 2020,
arXiv:2010.02502) and
[`MinimalDPMSolverPP2M`][reference.scheduler_tradeoff.solvers.MinimalDPMSolverPP2M] (Lu et al. 2022,
arXiv:2211.01095) run in `reference.harness.sampling.sample` like the diffusers classes, and
[`max_step_difference`][reference.scheduler_tradeoff.solvers.max_step_difference] checks them
against ``DDIMScheduler`` and ``DPMSolverMultistepScheduler`` step for step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from reference.harness.sampling import EpsFn

from .schedulers import make_scheduler


def trailing_timesteps(num_steps: int, num_train_timesteps: int = 1000) -> torch.Tensor:
    """``round(T, T - T/N, ..., T/N) - 1``: N timesteps, the first at ``T - 1`` (int64)."""
    if not 1 <= num_steps <= num_train_timesteps:
        raise ValueError(f"steps must be in [1, {num_train_timesteps}], got {num_steps}")
    ratio = num_train_timesteps / num_steps
    grid = torch.arange(num_train_timesteps, 0, -ratio, dtype=torch.float64)[:num_steps]
    return torch.round(grid).to(torch.int64) - 1


@dataclass
class StepOutput:
    """What ``step`` returns (the attribute the sampling loop reads, as in diffusers)."""

    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor


class MinimalScheduler:
    """Shared plumbing: the schedule ``abar``, trailing timesteps, a step counter, x0 clipping."""

    init_noise_sigma = 1.0

    def __init__(self, alphas_cumprod: torch.Tensor, *, clip_x0: bool = True) -> None:
        self.alphas_cumprod = alphas_cumprod.detach().to(torch.float64)
        self.clip_x0 = clip_x0
        self.timesteps = torch.empty(0, dtype=torch.int64)
        self._i = 0

    def set_timesteps(self, num_inference_steps: int) -> None:
        self.timesteps = trailing_timesteps(num_inference_steps, len(self.alphas_cumprod))
        self._i = 0
        self._reset()

    def _reset(self) -> None:
        pass

    def scale_model_input(self, sample: torch.Tensor, timestep: Any = None) -> torch.Tensor:
        return sample

    def _abar_pair(self, timestep: Any) -> tuple[float, float]:
        """``abar`` at the current step and at the next one (1 after the last step)."""
        if self._i >= len(self.timesteps):
            raise ValueError("step called more often than set_timesteps allows")
        if int(timestep) != int(self.timesteps[self._i]):
            raise ValueError(f"expected timestep {int(self.timesteps[self._i])}, got {timestep}")
        abar_t = float(self.alphas_cumprod[self.timesteps[self._i]])
        last = self._i == len(self.timesteps) - 1
        abar_s = 1.0 if last else float(self.alphas_cumprod[self.timesteps[self._i + 1]])
        return abar_t, abar_s

    def _x0(self, x_t: torch.Tensor, eps: torch.Tensor, abar_t: float) -> torch.Tensor:
        # DDIM eq. (12), first term: x0_hat = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t)
        x0 = (x_t - math.sqrt(1.0 - abar_t) * eps) / math.sqrt(abar_t)
        return x0.clamp(-1.0, 1.0) if self.clip_x0 else x0


class MinimalDDIM(MinimalScheduler):
    """Deterministic DDIM (``eta = 0``), Song et al. 2020 (arXiv:2010.02502), eq. (12).

    ``x_s = sqrt(abar_s) x0_hat + sqrt(1 - abar_s) eps`` with the model's ``eps`` (as diffusers
    does, the direction term keeps the unclipped ``eps`` even when ``x0_hat`` is clipped).
    """

    def step(self, model_output: torch.Tensor, timestep: Any, sample: torch.Tensor, **_: Any):
        abar_t, abar_s = self._abar_pair(timestep)
        x0 = self._x0(sample, model_output, abar_t)  # eq. (12): predicted x0
        # eq. (12) with sigma_t = 0: sqrt(abar_s) x0_hat + "direction pointing to x_t"
        prev = math.sqrt(abar_s) * x0 + math.sqrt(1.0 - abar_s) * model_output
        self._i += 1
        return StepOutput(prev, x0)


class MinimalDPMSolverPP2M(MinimalScheduler):
    """DPM-Solver++(2M), Lu et al. 2022 (arXiv:2211.01095), Algorithm 2, data prediction.

    First step and last step (to ``sigma = 0``) are first order, which is DDIM in
    ``lambda``; the steps in between use the previous ``x0_hat`` for a second-order correction.
    """

    def _reset(self) -> None:
        self._prev: tuple[torch.Tensor, float] | None = None  # (D_prev, lambda at D_prev)

    def step(self, model_output: torch.Tensor, timestep: Any, sample: torch.Tensor, **_: Any):
        abar_t, abar_s = self._abar_pair(timestep)
        d_t = self._x0(sample, model_output, abar_t)  # data prediction D_t = x0_hat
        alpha_t, sigma_t = math.sqrt(abar_t), math.sqrt(1.0 - abar_t)
        lambda_t = math.log(alpha_t) - math.log(sigma_t)  # lambda = log(alpha / sigma)
        if abar_s >= 1.0:  # sigma_s = 0: lambda_s = inf, exp(-h) = 0, x_s = D
            prev = d_t
        else:
            alpha_s, sigma_s = math.sqrt(abar_s), math.sqrt(1.0 - abar_s)
            h = math.log(alpha_s) - math.log(sigma_s) - lambda_t  # Alg. 2: h = lambda_s - lambda_t
            d = d_t
            if self._prev is not None:
                d_prev, lambda_prev = self._prev
                r = (lambda_t - lambda_prev) / h  # Alg. 2: r = h_prev / h
                d = (1.0 + 0.5 / r) * d_t - (0.5 / r) * d_prev  # Alg. 2: D = (1+1/2r) D_t - ...
            # Alg. 2: x_s = (sigma_s / sigma_t) x_t - alpha_s (exp(-h) - 1) D
            prev = (sigma_s / sigma_t) * sample - alpha_s * math.expm1(-h) * d
        self._prev = (d_t, lambda_t)
        self._i += 1
        return StepOutput(prev, d_t)


MINIMAL = {"ddim": MinimalDDIM, "dpmpp2m": MinimalDPMSolverPP2M}
"""Our schedulers, keyed like the diffusers ones they are checked against."""


def make_minimal(name: str, *, clip: bool = True) -> MinimalScheduler:
    """[`MinimalDDIM`][reference.scheduler_tradeoff.solvers.MinimalDDIM] or
    [`MinimalDPMSolverPP2M`][reference.scheduler_tradeoff.solvers.MinimalDPMSolverPP2M] on the zoo's
    ``abar``."""
    if name not in MINIMAL:
        raise ValueError(f"no minimal scheduler {name!r}; choose from {', '.join(MINIMAL)}")
    return MINIMAL[name](make_scheduler("ddim").alphas_cumprod, clip_x0=clip)


_SCHEDULE_TENSORS = ("alphas_cumprod", "final_alpha_cumprod", "sigmas", "alpha_t", "sigma_t")


def max_step_difference(
    ours: Any,
    theirs: Any,
    eps_fn: EpsFn,
    noise: torch.Tensor,
    steps: int,
    dtype: torch.dtype = torch.float64,
) -> float:
    """Largest ``|ours.step - theirs.step|`` over a trajectory, feeding both the same inputs.

    At every step both schedulers receive the same ``x_t`` (the reference trajectory of
    ``theirs``) and the same model output; the difference of their outputs is recorded.

    ``dtype=torch.float64`` (default) compares the *updates* and not float32 rounding: the first
    step at ``t = 999`` divides by ``sqrt(abar) ~ 5e-5``, so any float32 implementation is only
    determined to ~1e-3 there (diffusers' DDIM rounds ``sqrt(1 - abar)`` to 1.0, its DPM-Solver
    rounds ``sigma_t = sigma * alpha_t``; their float32 schedule tensors are promoted to
    ``dtype`` here, with the values unchanged). The model itself runs in float32.
    """
    ours.set_timesteps(steps)
    theirs.set_timesteps(steps)
    if not torch.equal(ours.timesteps.to(torch.int64), theirs.timesteps.to(torch.int64)):
        raise ValueError(f"timesteps differ: {ours.timesteps.tolist()} vs {theirs.timesteps}")
    for attr in _SCHEDULE_TENSORS:  # promote diffusers' float32 schedule to ``dtype``
        if isinstance(getattr(theirs, attr, None), torch.Tensor):
            setattr(theirs, attr, getattr(theirs, attr).to(dtype))
    x = noise.to(dtype) * theirs.init_noise_sigma
    labels = torch.zeros(noise.shape[0], dtype=torch.long)
    worst = 0.0
    with torch.no_grad():
        for t in theirs.timesteps:
            x_in = theirs.scale_model_input(x, t).float()
            eps = eps_fn(x_in, t.expand(noise.shape[0]), labels).to(dtype)
            a = ours.step(eps, t, x).prev_sample
            x = theirs.step(eps, t, x).prev_sample
            worst = max(worst, float((a - x).abs().max()))
    return worst
