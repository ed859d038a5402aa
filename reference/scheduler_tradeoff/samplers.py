"""How each row samples: the ODE samplers on the clipped ODE, DDPM, and diffusers as configured.

Idea
====
Four of the five samplers solve the probability-flow ODE; the benchmark runs them on the one
problem of the harness, the ODE of the *clipped* denoiser (`reference.harness.ode`):

    x̂₀ = clip((x_t - √(1-ᾱ_t) ε_θ(x_t, t)) / √ᾱ_t, -1, 1)                             (1)
    ε̃  = (x_t - √ᾱ_t x̂₀) / √(1-ᾱ_t)                                                    (2)

DDIM steps on x̂₀ and ε̃ (`reference.harness.ode`, eq. (3)); DPM-Solver++(2M), UniPC and Euler
receive x̂₀ as their data prediction. More steps of any of them then approach one solution, the
converged reference `reference.harness.ode.solution` from the same noise, and the per-sample
distance to it (``rms_to_solution``) is the fidelity of a sampler at a given NFE.

DDPM is not an ODE solver: its ancestral step draws fresh noise, so it is run as diffusers
configures it (x̂₀ clipped, ``clip_sample``), its per-step noise seeded by the row's seed; its
posterior mean uses only x̂₀ and x_t, so it samples the same clipped denoiser.

``diffusers`` rows run diffusers' own ``DDIMScheduler`` with ``clip_sample=True`` as the zoo
configures it: it clips x̂₀ (1) but steps with the network's raw ε instead of (2),

    x_s = √ᾱ_s clip(x̂₀) + √(1-ᾱ_s) ε_θ(x_t, t)                                          (3)

which solves a different equation wherever a pixel of x̂₀ is clipped, and drifts from the
solution as it takes more steps. They are reference rows, kept to show the difference.

Pitfalls
========
* ``unclipped`` runs the plain ODE: at t = 999 (ᾱ = 2.4e-9) x̂₀ multiplies an error of ε̂ by
  about 20,000; its row shows what the clipping is for, not a usable sampler. Its end point is
  clamped to the pixel range like any image (unclamped it reaches about 1e10, which no metric
  can score), so its distances are those of the images it would save.
* DDPM's samples depend on its step noise, not only on the initial noise: its distance to the
  ODE's solution is not a fidelity, so DDPM rows are judged on the distribution only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch

from reference.harness.sampling import EpsFn

Mode = Literal["ode", "unclipped", "diffusers", "ancestral"]
ODE_SAMPLERS = ("ddim", "dpmpp2m", "unipc", "euler")
"""The samplers of `reference.harness.ode.SAMPLERS`: deterministic, on the clipped ODE."""
Run = Callable[[EpsFn, torch.Tensor, torch.Tensor, int, int], torch.Tensor]
"""``run(eps, noise, labels, nfe, seed)``: the samples of ``nfe`` network evaluations."""


def mode_of(name: str) -> Mode:
    """How scheduler ``name`` samples in the sweep: DDPM ancestrally, the others on the ODE."""
    return "ancestral" if name == "ddpm" else "ode"


def runner(name: str, mode: Mode) -> Run:
    """The sampler ``name`` run the way ``mode`` says (one network evaluation per step; the
    ``diffusers`` DDIM is (3), the ancestral DDPM diffusers' own step)."""
    if mode in ("ode", "unclipped"):
        if name not in ODE_SAMPLERS:
            raise ValueError(f"{name!r} is not an ODE sampler; choose from {ODE_SAMPLERS}")
        return _ode(name, clip=mode == "ode")
    return _diffusers(name)


def _ode(name: str, *, clip: bool) -> Run:
    from reference.harness import ode

    def run(
        eps: EpsFn, noise: torch.Tensor, labels: torch.Tensor, nfe: int, seed: int
    ) -> torch.Tensor:
        x = ode.solve(eps, noise, sampler=name, steps=nfe, labels=labels, clip=clip)  # (1)-(2)
        return x.clamp(-1.0, 1.0)  # an image: the unclipped trajectory's end, in pixel range

    return run


def _diffusers(name: str) -> Run:
    from reference.harness.sampling import sample

    from .schedulers import make_scheduler

    def run(
        eps: EpsFn, noise: torch.Tensor, labels: torch.Tensor, nfe: int, seed: int
    ) -> torch.Tensor:
        with torch.no_grad():
            return sample(eps, make_scheduler(name), noise, steps=nfe, labels=labels, seed=seed)

    return run
