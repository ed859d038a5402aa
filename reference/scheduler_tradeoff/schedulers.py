"""The five diffusers schedulers of the trade-off, configured alike on the zoo's schedule."""

from __future__ import annotations

from typing import Any

TIMESTEP_SPACING = "trailing"

SCHEDULERS: dict[str, tuple[str, dict[str, Any]]] = {
    "ddpm": ("DDPMScheduler", {"clip_sample": True}),
    "ddim": ("DDIMScheduler", {"clip_sample": True, "set_alpha_to_one": True}),
    "dpmpp2m": (
        "DPMSolverMultistepScheduler",
        {
            "algorithm_type": "dpmsolver++",
            "solver_order": 2,
            "solver_type": "midpoint",
            "lower_order_final": True,
            "final_sigmas_type": "zero",
            "thresholding": True,
            "sample_max_value": 1.0,
        },
    ),
    "unipc": (
        "UniPCMultistepScheduler",
        {
            "solver_order": 2,
            "lower_order_final": True,
            "final_sigmas_type": "zero",
            "thresholding": True,
            "sample_max_value": 1.0,
        },
    ),
    "euler": ("EulerDiscreteScheduler", {"final_sigmas_type": "zero"}),
}
"""Short name -> (diffusers class, configuration overrides on the zoo schedule)."""

LABELS = {
    "ddpm": "DDPM",
    "ddim": "DDIM",
    "dpmpp2m": "DPM-Solver++(2M)",
    "unipc": "UniPC",
    "euler": "Euler",
}
"""Legend names in the figures."""


def _known(name: str) -> None:
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; choose from {', '.join(SCHEDULERS)}")


def solver_settings(name: str, *, clip: bool = True) -> tuple[str, dict[str, Any]]:
    """``(diffusers class name, configuration)`` of scheduler ``name`` on the zoo schedule: the
    settings of :data:`SCHEDULERS` plus trailing spacing, the public form for other benchmarks
    (the grid search builds its solvers from it).

    The configuration holds what this model needs: trailing timestep spacing, the last step to
    ``abar = 1`` (``set_alpha_to_one`` / ``final_sigmas_type="zero"``) and the x0 prediction
    clipped to [-1, 1] (``clip_sample``, or ``thresholding`` with ``sample_max_value=1.0``);
    ``clip=False`` turns the clipping off.
    """
    _known(name)
    cls, overrides = SCHEDULERS[name]
    cfg = dict(overrides, timestep_spacing=TIMESTEP_SPACING)
    if not clip:
        cfg = {**cfg, "clip_sample": False, "thresholding": False}
    return cls, cfg


def make_scheduler(name: str, *, clip: bool = True) -> Any:
    """A fresh diffusers scheduler ``name`` (see :data:`SCHEDULERS`) on the zoo's schedule, built
    from :func:`solver_settings`.

    All use trailing timestep spacing and end at ``abar = 1``; ``clip`` toggles clipping of the
    x0 prediction to [-1, 1] (``clip_sample`` or its equivalent ``thresholding``).
    """
    from reference import zoo

    cls, cfg = solver_settings(name, clip=clip)
    return zoo.teacher_scheduler(cls, **cfg)


def model_calls_per_step(name: str) -> int:
    """Denoiser evaluations per scheduler step: 1 for all five (multistep solvers reuse history)."""
    _known(name)
    return 1
