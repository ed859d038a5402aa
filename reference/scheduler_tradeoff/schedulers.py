"""The five diffusers schedulers of the trade-off, configured alike on the zoo's schedule.

The settings themselves ([`SCHEDULERS`][reference.scheduler_tradeoff.schedulers.SCHEDULERS],
`TIMESTEP_SPACING`) live in
`reference.harness.schedulers`, where the multistep solvers are derived from the samplers of the
clipped ODE that every other benchmark solves (`reference.harness.ode.SAMPLERS`);
[`solver_settings`][reference.scheduler_tradeoff.schedulers.solver_settings] states them as a class
name and a configuration.
"""

from __future__ import annotations

from typing import Any

from reference.harness.schedulers import SCHEDULERS, TIMESTEP_SPACING, check_scheduler

__all__ = [
    "LABELS",
    "SCHEDULERS",
    "TIMESTEP_SPACING",
    "make_scheduler",
    "model_calls_per_step",
    "solver_settings",
]

LABELS = {
    "ddpm": "DDPM",
    "ddim": "DDIM",
    "dpmpp2m": "DPM-Solver++(2M)",
    "unipc": "UniPC",
    "euler": "Euler",
}
"""Legend names in the figures."""


def solver_settings(name: str, *, clip: bool = True) -> tuple[str, dict[str, Any]]:
    """``(diffusers class name, configuration)`` of scheduler ``name`` on the zoo schedule: the
    settings of [`SCHEDULERS`][reference.scheduler_tradeoff.schedulers.SCHEDULERS] plus trailing
    spacing, exactly what `reference.harness.schedulers.make_scheduler` builds (tested).

    The configuration holds what this model needs: trailing timestep spacing, the last step to
    ``abar = 1`` (``set_alpha_to_one`` / ``final_sigmas_type="zero"``) and the x0 prediction
    clipped to [-1, 1] (``clip_sample``, or ``thresholding`` with ``sample_max_value=1.0``);
    ``clip=False`` turns the clipping off.
    """
    check_scheduler(name)
    cls, overrides = SCHEDULERS[name]
    cfg = dict(overrides, timestep_spacing=TIMESTEP_SPACING)
    if not clip:
        cfg = {**cfg, "clip_sample": False, "thresholding": False}
    return cls, cfg


def make_scheduler(name: str, *, clip: bool = True) -> Any:
    """A fresh diffusers scheduler ``name`` (see
    [`SCHEDULERS`][reference.scheduler_tradeoff.schedulers.SCHEDULERS]) on the zoo's schedule, built
    from [`solver_settings`][reference.scheduler_tradeoff.schedulers.solver_settings].

    All use trailing timestep spacing and end at ``abar = 1``; ``clip`` toggles clipping of the
    x0 prediction to [-1, 1] (``clip_sample`` or its equivalent ``thresholding``).
    """
    from reference import zoo

    cls, cfg = solver_settings(name, clip=clip)
    return zoo.teacher_scheduler(cls, **cfg)


def model_calls_per_step(name: str) -> int:
    """Denoiser evaluations per scheduler step: 1 for all five (multistep solvers reuse history)."""
    check_scheduler(name)
    return 1
