"""diffusers schedulers at the consistency timesteps: the LCM oracle and the DPM-Solver++ control.

The consistency model samples with
[`consistency_sample`][reference.consistency_latent_diffusion.core.consistency_sample]; diffusers'
``LCMScheduler``
([`lcm_scheduler`][reference.consistency_latent_diffusion.schedulers.lcm_scheduler]) gives the same
samples from the same network (tested), and the control, the teacher's DPM-Solver++ (2M) at as many
steps, runs on the same timesteps
([`dpm_solver`][reference.consistency_latent_diffusion.schedulers.dpm_solver], so it starts at ``t =
979`` too). All are latent schedulers (``clip_sample=False``, `reference.zoo.latent_scheduler`).
"""

from __future__ import annotations

import logging
from typing import Any

from .core import ORIGINAL_STEPS, sampling_timesteps


def with_timesteps(scheduler: Any, timesteps: list[int]) -> Any:
    """Make ``scheduler.set_timesteps(n)`` use the custom ``timesteps`` (for the harness' loop).

    Works with schedulers whose ``set_timesteps`` accepts ``timesteps=`` (LCM, DPM-Solver).
    """
    original = scheduler.set_timesteps

    def set_timesteps(num_inference_steps: int | None = None, device: Any = None) -> None:
        if num_inference_steps is not None and num_inference_steps != len(timesteps):
            raise ValueError(
                f"scheduler fixed to {len(timesteps)} timesteps, asked for {num_inference_steps}"
            )
        original(timesteps=list(timesteps), device=device)

    scheduler.set_timesteps = set_timesteps
    return scheduler


def lcm_scheduler(steps: int) -> Any:
    """diffusers' ``LCMScheduler`` on the zoo schedule at this package's consistency timesteps."""
    from reference import zoo

    log = logging.getLogger("diffusers.schedulers.scheduling_lcm")
    previous = log.level
    log.setLevel(logging.ERROR)  # it warns about custom timesteps, which are the point here
    try:
        sched = zoo.latent_scheduler("LCMScheduler", original_inference_steps=ORIGINAL_STEPS)
    finally:
        log.setLevel(previous)
    return with_timesteps(sched, sampling_timesteps(steps))


def dpm_solver(steps: int) -> Any:
    """DPM-Solver++ (2M) on the latents at the consistency model's timesteps (same start, 979)."""
    from reference import zoo

    sched = zoo.latent_scheduler(
        "DPMSolverMultistepScheduler", algorithm_type="dpmsolver++", solver_order=2
    )
    return with_timesteps(sched, sampling_timesteps(steps))
