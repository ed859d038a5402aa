"""The samplers the benchmark compares: the teacher on the clipped ODE, the students on their own.

Idea
====
Every teacher row of the benchmark solves the one problem of the harness, the probability-flow
ODE of the *clipped* denoiser (`reference.harness.ode`), so that more steps bring it closer to
the converged solution. Two grids are used:

* the harness's trailing grid (`reference.harness.ode.grid`: ``999, 979, ..., 19`` at 50
  steps), which is the project's one DDIM baseline, through `reference.harness.ode.solve`;
* the nested grid of the distillation (`reference.timestep_distillation.core.timestep_grid`:
  ``945, 705, 465, 225`` at 4 steps), on which each student was distilled, through
  `teacher_on_grid` below: the same DDIM step on other timesteps.

One step ``t → s`` of `teacher_on_grid`, with ``ᾱ`` the zoo's cumulative schedule:

    x̂₀ = clip((x_t - √(1-ᾱ_t) ε_θ(x_t, t)) / √ᾱ_t, -1, 1)                           (1)
    ε̃  = (x_t - √ᾱ_t x̂₀) / √(1-ᾱ_t)                                                  (2)
    x_s = √ᾱ_s x̂₀ + √(1-ᾱ_s) ε̃,   ᾱ_s = 1 after the last grid point                 (3)

(1)-(3) are eqs. (1)-(3) of `reference.harness.ode` (DDIM, Song et al. 2021, arXiv:2010.02502,
eq. 12 with σ = 0, on the clipped x̂₀); on the trailing grid `teacher_on_grid` is
`reference.harness.ode.solve` step for step, which a test checks.

A student is sampled by the sampler it was distilled for (`student_sample`): DDIM on its nested
grid that clips x̂₀ but moves along the network's raw ε (`GridDDIMScheduler`, diffusers'
``clip_sample=True``):

    x_s = √ᾱ_s clip(x̂₀) + √(1-ᾱ_s) ε_θ(x_t, t)                                       (4)

Progressive distillation (Salimans & Ho 2022, arXiv:2202.00512, Algorithm 2) trained each
student so that one step (4) lands where two steps of its teacher land; (4) is therefore part of
the technique, not a choice of the benchmark, and sampling a student with (3) instead would
measure a sampler it never learnt. Where no pixel of x̂₀ is clipped, (2) equals ε_θ and (3) is
(4).

Pitfalls
========
* The nested grid starts at t = 945 (ᾱ = 7.1e-3), the trailing one at t = 999 (ᾱ = 2.4e-9): both
  start from the same unit-variance noise, read as x_945 or as x_999.
* Every sampler here is deterministic: the noise and the labels are all their randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from reference.harness.sampling import EpsFn


@torch.no_grad()
def teacher_on_grid(
    eps_fn: EpsFn, noise: torch.Tensor, grid: Sequence[int], labels: torch.Tensor
) -> torch.Tensor:
    """DDIM (1)-(3) on the clipped ODE along the descending timesteps ``grid``, from ``noise``
    read as ``x_{grid[0]}``; returns x₀ in [-1, 1]."""
    from reference.harness import ode

    alphas_cumprod = ode.schedule().alphas_cumprod
    x0 = ode.x0_fn(eps_fn, alphas_cumprod, labels)  # (1)
    one = torch.ones((), dtype=alphas_cumprod.dtype)
    x = noise
    for i, t in enumerate(grid):
        pred = x0(x, torch.tensor(t))
        abar_s = alphas_cumprod[grid[i + 1]] if i + 1 < len(grid) else one  # last step: ᾱ = 1
        x = ode.ddim_step(x, pred, alphas_cumprod[t], abar_s)  # (2), (3)
    return x.clamp(-1.0, 1.0)


def student_sample(
    eps_fn: EpsFn, noise: torch.Tensor, labels: torch.Tensor, steps: int
) -> torch.Tensor:
    """A student's own sampler (4): ``steps`` DDIM steps on its nested grid, clipped x̂₀ and raw
    ε, as it was distilled (`reference.timestep_distillation.core.GridDDIMScheduler`)."""
    from reference import zoo
    from reference.harness.sampling import sample

    from .core import GridDDIMScheduler

    scheduler = GridDDIMScheduler(zoo.teacher_scheduler_config())
    return sample(eps_fn, scheduler, noise, steps=steps, labels=labels)  # (4)


Run = Callable[[EpsFn, torch.Tensor, torch.Tensor, int], torch.Tensor]
"""``run(eps_fn, noise, labels, steps) -> x₀``: one way of sampling ``steps`` steps."""


def trailing_ddim(
    eps_fn: EpsFn, noise: torch.Tensor, labels: torch.Tensor, steps: int
) -> torch.Tensor:
    """The harness's DDIM (1)-(3) on its trailing grid (`reference.harness.ode.solve`)."""
    from reference.harness.ode import solve

    return solve(eps_fn, noise, steps=steps, labels=labels)


def nested_ddim(
    eps_fn: EpsFn, noise: torch.Tensor, labels: torch.Tensor, steps: int
) -> torch.Tensor:
    """DDIM (1)-(3) on the distillation's nested grid of ``steps`` steps."""
    from .core import timestep_grid

    return teacher_on_grid(eps_fn, noise, timestep_grid(steps), labels)


RUNS: dict[str, Run] = {
    "ddim": trailing_ddim,
    "teacher-grid-ddim": nested_ddim,
    "student": student_sample,
}
"""A row's ``method`` -> its sampler: the teacher on the clipped ODE on trailing or nested
timesteps, or a student on its own sampler (4)."""
