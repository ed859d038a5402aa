"""The latent teacher's samplers on the harness's ODE: no clipping, and a grid that starts at 979.

Idea
====
Every sampler of the harness solves one probability-flow ODE (`reference.harness.ode`): DDIM and
DPM-Solver++ step on the denoiser's x̂₀, clipped to the pixel range, from t = 999 on a trailing
grid. The latent teacher cannot take that path as it is, for two reasons:

* **No clipping in latent space.** Scaled latents have unit variance and routinely exceed 1;
  clipping x̂₀ to [-1, 1] destroys the samples (`reference.zoo.latent_scheduler`). The harness
  already allows this (``clip=False``: the plain x̂₀ (1)).
* **Without clipping, t = 999 is no starting point.** The zoo's cosine schedule ends at
  ᾱ_999 = 2.4e-9. Clipping is what keeps a pixel sampler sane there; without it, the first DDIM
  step from 999 to 979 multiplies the network's error in ε̂ by (4), about 630, and the
  trajectory starts from noise of the wrong scale. The consistency model was distilled on a
  grid that stops at t = 979 for the same reason (`MAX_TIMESTEP`).

So the teacher solves the same ODE with the same steps as the harness ((1)-(2) are
`reference.harness.ode.x0_fn` with ``clip=False`` and `reference.harness.ode.ddim_step`), on the
harness's trailing grid rule (`reference.harness.ode.grid`) applied to the first 980 timesteps
instead of 1000 (3): DDIM-50 then takes 50 steps from t = 979, about 19.6 timesteps apart, as
the consistency model's distillation solver took its 20-timestep skips. DPM-Solver++(2M) takes the
harness's configuration (`reference.harness.ode.SAMPLERS`) on explicit timesteps, so that the
matched-cost control can run on exactly the consistency model's timesteps.

Math
====
    x̂₀(z_t, t) = (z_t − √(1−ᾱ_t) ε_θ(z_t, t)) / √ᾱ_t                              (1)
    z_s = √ᾱ_s x̂₀ + √(1−ᾱ_s) ε̃,  ε̃ = (z_t − √ᾱ_t x̂₀) / √(1−ᾱ_t)    (DDIM, t → s)   (2)
    t_i = round(T' − i T'/N) − 1,  i = 0 .. N−1,  T' = 980;  last step to ᾱ = 1        (3)
    ∂z_s / ∂ε̂ through (1)-(2) = √(1−ᾱ_s) − √(ᾱ_s/ᾱ_t) √(1−ᾱ_t) ≈ −√(ᾱ_979/ᾱ_999) ≈ −630  (4)

Sources: DDIM (Song, Meng and Ermon 2021, arXiv:2010.02502, eq. 12 with σ = 0); DPM-Solver++
(Lu et al. 2022, arXiv:2211.01095); the capped grid follows Latent Consistency Models (Luo et al.
2023, arXiv:2310.04378), whose Stable Diffusion schedule needs no cap (ᾱ_999 = 0.0047).

Pitfalls
========
* The initial noise stands for z_979 = √ᾱ_979 z₀ + √(1−ᾱ_979) ε with √ᾱ_979 = 0.031: treating it
  as pure noise is the same approximation the consistency model's first step makes.
* Returns latents, unclamped; decode them with the zoo VAE (`reference.zoo.decode_latents`).
"""

from __future__ import annotations

import torch

from reference.harness import ode
from reference.harness.sampling import EpsFn

from .core import MAX_TIMESTEP

SAMPLERS = ("ddim", "dpmpp2m")
"""The harness samplers the latent teacher runs (`reference.harness.ode.SAMPLERS`)."""


def baseline_grid(steps: int, max_timestep: int = MAX_TIMESTEP) -> list[int]:
    """(3): the harness's trailing grid of ``steps`` steps over timesteps ``0 .. max_timestep``."""
    return [int(t) for t in ode.grid(steps, max_timestep + 1)]  # (3)


def _ddim(x0: ode.X0Fn, z: torch.Tensor, timesteps: list[int], acp: torch.Tensor) -> torch.Tensor:
    one = torch.ones((), dtype=acp.dtype)
    for i, t in enumerate(timesteps):
        pred = x0(z, torch.tensor(t))  # (1)
        abar_s = acp[timesteps[i + 1]] if i + 1 < len(timesteps) else one  # last step: ᾱ = 1
        z = ode.ddim_step(z, pred, acp[t], abar_s)  # (2)
    return z


def _dpmpp2m(x0: ode.X0Fn, z: torch.Tensor, timesteps: list[int]) -> torch.Tensor:
    from reference import zoo

    name, overrides = ode.SAMPLERS["dpmpp2m"]
    scheduler = zoo.teacher_scheduler(
        name, **overrides, prediction_type="sample", clip_sample=False, thresholding=False
    )
    scheduler.set_timesteps(timesteps=list(timesteps))
    for t in scheduler.timesteps:
        z = scheduler.step(x0(z, t), t, z).prev_sample  # the solver receives x̂₀ (1)
    return z


@torch.no_grad()
def solve_latent(
    eps_fn: EpsFn,
    noise: torch.Tensor,
    labels: torch.Tensor,
    timesteps: list[int],
    sampler: str = "ddim",
) -> torch.Tensor:
    """Latents z₀ from ``noise`` (taken as z at ``timesteps[0]``): ``sampler`` on the unclipped
    ODE (1)-(2) through the decreasing ``timesteps``, one network call each."""
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown latent sampler {sampler!r}; known: {', '.join(SAMPLERS)}")
    if not timesteps or list(timesteps) != sorted(set(timesteps), reverse=True):
        raise ValueError(f"timesteps must be distinct and decreasing, got {timesteps}")
    acp = ode.schedule().alphas_cumprod
    x0 = ode.x0_fn(eps_fn, acp, labels, clip=False)  # (1) without the clip
    if sampler == "ddim":
        return _ddim(x0, noise, list(timesteps), acp)
    return _dpmpp2m(x0, noise, list(timesteps))
