"""One clipped ODE for every sampler: a baseline that converges as it takes more steps.

Idea
----
A sampler is only a good baseline if more steps bring it closer to the thing it approximates.
The zoo's models predict the noise ε on a cosine schedule that starts at t = 999, where
ᾱ = 2.4e-9: there the predicted clean image x̂₀ = (x_t - √(1-ᾱ) ε̂) / √ᾱ multiplies any error of
ε̂ by about 1/√ᾱ ≈ 20,000, so every sampler of the zoo works only through clipping x̂₀ to the
data range [-1, 1]. diffusers' samplers clip differently: DPM-Solver++ and UniPC (with
thresholding) use only the clipped x̂₀; DDIM with ``clip_sample=True`` clips x̂₀ but keeps the raw
ε̂ in its update. They therefore solve *different* equations, and diffusers' DDIM drifts away from
the others as it takes more steps (`reference.harness.sampling.sample` with
`reference.zoo.teacher_scheduler` is that DDIM).

Here every sampler solves one problem, the probability-flow ODE of the *clipped* denoiser:

    x̂₀(x_t, t) = clip((x_t - √(1-ᾱ_t) ε_θ(x_t, t)) / √ᾱ_t, -1, 1)          (1)
    ε̃(x_t, t)  = (x_t - √ᾱ_t x̂₀) / √(1-ᾱ_t)                                 (2)
    x_s        = √ᾱ_s x̂₀ + √(1-ᾱ_s) ε̃            (DDIM, one step t → s)       (3)

(2) is the noise consistent with the clipped x̂₀, so (3) is exactly DDIM (Song et al. 2021,
arXiv:2010.02502, eq. 12 with σ = 0) applied to the denoiser (1). The diffusers solvers receive
x̂₀ itself (``prediction_type="sample"``, no further clipping or thresholding): no division by
√ᾱ happens inside them, so float32 rounding is not magnified at t = 999.

`solve` runs a named sampler; `solution` is the converged reference (DPM-Solver++(2M), Lu et al.
2022, arXiv:2211.01095, at 200 steps) from the same noise; `rms_to` measures the per-sample
distance of samples to it: the *fidelity* of an approximation to the computation it replaces.

DDIM steps along its own grid: diffusers' `DDIMScheduler` steps back by ``T // N``, which with
trailing spacing lands off the grid whenever ``N`` does not divide ``T`` (at N = 400 the next
timestep is not the next grid point). `grid` is trailing (it starts at t = T - 1, so the first
step starts from pure noise) and the last step goes to ᾱ = 1.

Pitfalls
--------
* Compare samples only from identical noise (`reference.harness.sampling.make_noise`): the
  distance to the solution is per sample.
* At about 2e-3 RMS the distance measures the 200-step solution's own error, not the sampler's.
* Latent models are not clipped: pass ``clip=False`` (then (1) is the plain x̂₀).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from reference.data import NULL_CLASS

from .sampling import EpsFn, guided_eps

SAMPLERS: dict[str, tuple[str, dict[str, Any]]] = {
    "ddim": ("DDIMScheduler", {}),
    "dpmpp2m": (
        "DPMSolverMultistepScheduler",
        {
            "algorithm_type": "dpmsolver++",
            "solver_order": 2,
            "solver_type": "midpoint",
            "lower_order_final": True,
            "final_sigmas_type": "zero",
        },
    ),
    "unipc": (
        "UniPCMultistepScheduler",
        {"solver_order": 2, "lower_order_final": True, "final_sigmas_type": "zero"},
    ),
    "euler": ("EulerDiscreteScheduler", {"final_sigmas_type": "zero"}),
}
"""Sampler name -> (diffusers class, overrides); all take x̂₀ (``prediction_type="sample"``)."""
SOLUTION = ("dpmpp2m", 200)
"""The converged reference: (sampler, steps)."""
X0Fn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def check_sampler(name: str) -> None:
    """One-line ``ValueError`` for an unknown sampler name, before any work."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; known: {', '.join(SAMPLERS)}")


def schedule() -> Any:
    """A fresh diffusers scheduler carrying the zoo's noise schedule (for ``alphas_cumprod``)."""
    from reference import zoo

    return zoo.teacher_scheduler("DDPMScheduler")


def grid(steps: int, num_train_timesteps: int = 1000) -> torch.Tensor:
    """Trailing timesteps ``T-1, ..., `` of ``steps`` steps (diffusers' "trailing" spacing)."""
    if not 1 <= steps <= num_train_timesteps:
        raise ValueError(f"steps must be in 1..{num_train_timesteps}, got {steps}")
    t = torch.arange(num_train_timesteps, 0, -num_train_timesteps / steps).round() - 1
    return t.long()


def clipped_x0(
    x_t: torch.Tensor, eps: torch.Tensor, abar_t: torch.Tensor, clip: bool = True
) -> torch.Tensor:
    """x̂₀ of eq. (1) (``clip=False``: the plain x̂₀)."""
    x0 = (x_t - (1 - abar_t).sqrt() * eps) / abar_t.sqrt()  # (1)
    return x0.clamp(-1.0, 1.0) if clip else x0


def consistent_eps(x_t: torch.Tensor, x0: torch.Tensor, abar_t: torch.Tensor) -> torch.Tensor:
    """ε̃ of eq. (2): the noise that, with x̂₀, gives back x_t."""
    return (x_t - abar_t.sqrt() * x0) / (1 - abar_t).sqrt()  # (2)


def ddim_step(
    x_t: torch.Tensor, x0: torch.Tensor, abar_t: torch.Tensor, abar_s: torch.Tensor
) -> torch.Tensor:
    """One deterministic DDIM step t → s on x̂₀, eq. (3)."""
    return abar_s.sqrt() * x0 + (1 - abar_s).sqrt() * consistent_eps(x_t, x0, abar_t)  # (3)


def x0_fn(
    eps_fn: EpsFn,
    alphas_cumprod: torch.Tensor,
    labels: torch.Tensor,
    guidance_scale: float = 1.0,
    clip: bool = True,
) -> X0Fn:
    """The denoiser (1) as ``x0(x_t, t)``, with classifier-free guidance on ε first."""

    def x0(x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        t_batch = t.expand(x_t.shape[0]) if t.dim() == 0 else t
        eps = guided_eps(eps_fn, x_t, t_batch, labels, guidance_scale)
        abar = alphas_cumprod[t_batch.long()].view(-1, *([1] * (x_t.dim() - 1)))
        return clipped_x0(x_t, eps, abar.to(x_t.dtype), clip)

    return x0


def _ddim(x0: X0Fn, x: torch.Tensor, steps: int, alphas_cumprod: torch.Tensor) -> torch.Tensor:
    ts = grid(steps, len(alphas_cumprod))
    one = torch.ones((), dtype=alphas_cumprod.dtype)
    for i, t in enumerate(ts):
        pred = x0(x, t)
        abar_s = alphas_cumprod[ts[i + 1]] if i + 1 < len(ts) else one  # last step: ᾱ = 1
        x = ddim_step(x, pred, alphas_cumprod[t], abar_s)
    return x


def _diffusers(name: str, x0: X0Fn, x: torch.Tensor, steps: int) -> torch.Tensor:
    from reference import zoo

    cls, overrides = SAMPLERS[name]
    scheduler = zoo.teacher_scheduler(
        cls,
        **overrides,
        prediction_type="sample",
        clip_sample=False,
        thresholding=False,
        timestep_spacing="trailing",
    )
    scheduler.set_timesteps(steps)
    x = x * scheduler.init_noise_sigma
    for t in scheduler.timesteps:
        x_in = scheduler.scale_model_input(x, t)
        x = scheduler.step(x0(x_in, t), t, x).prev_sample
    return x


@torch.no_grad()
def solve(
    eps_fn: EpsFn,
    noise: torch.Tensor,
    *,
    sampler: str = "ddim",
    steps: int = 50,
    labels: torch.Tensor | None = None,
    guidance_scale: float = 1.0,
    clip: bool = True,
) -> torch.Tensor:
    """``steps`` steps of ``sampler`` on the clipped ODE (1)-(3) from ``noise``; returns x₀.

    ``labels`` ``None`` samples unconditionally (the null class); ``guidance_scale`` is
    classifier-free guidance on ε before (1).
    """
    check_sampler(name=sampler)
    n = noise.shape[0]
    if labels is None:
        labels = torch.full((n,), NULL_CLASS, dtype=torch.long)
    alphas_cumprod = schedule().alphas_cumprod
    x0 = x0_fn(eps_fn, alphas_cumprod, labels, guidance_scale, clip)
    if sampler == "ddim":
        x = _ddim(x0, noise, steps, alphas_cumprod)
    else:
        x = _diffusers(sampler, x0, noise, steps)
    return x.clamp(-1.0, 1.0) if clip else x


def solution(
    eps_fn: EpsFn,
    noise: torch.Tensor,
    labels: torch.Tensor | None = None,
    guidance_scale: float = 1.0,
    clip: bool = True,
    steps: int = SOLUTION[1],
) -> torch.Tensor:
    """The converged reference `SOLUTION` from ``noise`` (what every sampler approximates);
    fewer ``steps`` only for tests."""
    name = SOLUTION[0]
    return solve(
        eps_fn,
        noise,
        sampler=name,
        steps=steps,
        labels=labels,
        guidance_scale=guidance_scale,
        clip=clip,
    )


def rms_to(samples: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Per-sample root-mean-square distance ``[N]`` between two batches from the same noise."""
    if samples.shape != reference.shape:
        raise ValueError(f"shapes differ: {tuple(samples.shape)} vs {tuple(reference.shape)}")
    return (samples - reference).flatten(1).pow(2).mean(dim=1).sqrt()
