"""The zoo's samplers, configured alike: the diffusers schedulers every benchmark builds.

Idea
====
A comparison of samplers is only fair when each runs with the settings the model needs. For
the zoo teacher (trained with clipped samples in [-1, 1], cosine schedule, 1000 steps) that is:

* **trailing** timestep spacing, so that the first step starts at ``t = 999`` (pure noise) for
  every number of steps (Lin et al. 2023, "Common Diffusion Noise Schedules and Sample Steps
  are Flawed", arXiv:2305.08891);
* the last step lands at ``abar = 1``: ``set_alpha_to_one`` for DDIM, ``final_sigmas_type =
  "zero"`` for DPM-Solver++, UniPC and Euler;
* the x0 prediction clipped to [-1, 1]: ``clip_sample`` for DDPM/DDIM, and for DPM-Solver++ and
  UniPC, which have no ``clip_sample``, ``thresholding=True`` with ``sample_max_value=1.0``
  (Imagen's dynamic thresholding, Saharia et al. 2022, arXiv:2205.11487, whose threshold is
  capped at ``sample_max_value``: at 1.0 it is plain clipping to [-1, 1]);
* multistep solvers take a first-order last step (``lower_order_final``), since their
  second-order extrapolation into ``sigma = 0`` is unstable at few steps.

DPM-Solver++ and UniPC are the samplers of the clipped ODE (`reference.harness.ode.SAMPLERS`,
which every other benchmark solves) as diffusers schedulers: the same classes and settings, with
`THRESHOLDING` doing the clipping that `reference.harness.ode` does on x̂₀ itself. Euler is
ode's entry as it is: diffusers' Euler has no thresholding, so it runs unclipped.

Pitfalls
========
* Without thresholding the multistep solvers overshoot the data range at 4-8 steps and their
  Fréchet distance explodes; a search over samplers without these settings finds the settings'
  fault, not the sampler's.
* ``timestep_spacing="leading"`` (the DDIM default) never visits ``t = 999`` at few steps, so a
  few-step sampler starts from an image that is not pure noise.
"""

from __future__ import annotations

from typing import Any

from .ode import SAMPLERS

TIMESTEP_SPACING = "trailing"

THRESHOLDING: dict[str, Any] = {"thresholding": True, "sample_max_value": 1.0}
"""The x0 clipping of the multistep solvers, which have no ``clip_sample``: dynamic
thresholding capped at 1.0, i.e. clipping to [-1, 1]."""


def _thresholded(name: str) -> tuple[str, dict[str, Any]]:
    """The clipped ODE's sampler ``name`` (`reference.harness.ode.SAMPLERS`) as a diffusers
    scheduler: the same class and settings, with `THRESHOLDING`."""
    cls, overrides = SAMPLERS[name]
    return cls, {**overrides, **THRESHOLDING}


SCHEDULERS: dict[str, tuple[str, dict[str, Any]]] = {
    "ddpm": ("DDPMScheduler", {"clip_sample": True}),
    "ddim": ("DDIMScheduler", {"clip_sample": True, "set_alpha_to_one": True}),
    "dpmpp2m": _thresholded("dpmpp2m"),
    "unipc": _thresholded("unipc"),
    "euler": SAMPLERS["euler"],
}
"""Short name -> (diffusers class, configuration overrides on the zoo schedule)."""


def check_scheduler(name: str) -> None:
    """``ValueError`` naming ``name`` and the known schedulers, if it is not one of them."""
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; choose from {', '.join(SCHEDULERS)}")


def make_scheduler(name: str, *, clip: bool = True) -> Any:
    """A fresh diffusers scheduler ``name`` (see `SCHEDULERS`) on the zoo's schedule, with
    trailing spacing; ``clip=False`` turns off the x0 clipping (``clip_sample``, ``thresholding``).
    """
    from reference import zoo

    check_scheduler(name)
    cls, overrides = SCHEDULERS[name]
    cfg = dict(overrides, timestep_spacing=TIMESTEP_SPACING)
    if not clip:
        cfg = {**cfg, "clip_sample": False, "thresholding": False}
    return zoo.teacher_scheduler(cls, **cfg)
