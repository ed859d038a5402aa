"""The progressive-distillation students' sampler as a diffusers scheduler.

Idea
====
A student of progressive distillation (Salimans and Ho 2022, arXiv:2202.00512) is an ordinary
epsilon network, but it is only good on the grid it was distilled on: every other point of its
teacher's, nested in diffusers' 64-step DDIM grid (``timestep_grid(4) = [945, 705, 465, 225]``,
where diffusers' own DDIM would re-space 4 steps as ``750, 500, 250, 0``). This package samples
it with [`GridDDIMScheduler`][reference.timestep_distillation.GridDDIMScheduler], which only
quacks like a scheduler. `DistilledDDIMScheduler` is the same sampler as a real diffusers
scheduler (``SchedulerMixin`` + ``ConfigMixin``: ``from_config``, ``save_pretrained``,
``pipe.scheduler = ...``); each step delegates to the package's scheduler, so the two agree by
construction (the tests check it bit for bit). One deterministic DDIM step (Song et al. 2021,
arXiv:2010.02502, eq. (12) with ``eta = 0``) from ``t`` to the next grid point ``s``:

    x_hat = clip((x_t - sigma_t eps) / alpha_t)                                        (1)
    x_s   = alpha_s x_hat + sigma_s eps                                                 (2)

with ``alpha^2 = abar`` and ``alpha = 1, sigma = 0`` after the last grid point (clean data).
[`apply_distilled_sampler`][reference.timestep_distillation.production.apply_distilled_sampler]
puts the scheduler (pinned to the student's steps) and, optionally, the student into a pipeline;
``remove()`` restores both.

Usage
=====
.. code-block:: python

    pipe.scheduler = DistilledDDIMScheduler.from_config(pipe.scheduler.config)
    images = pipe(num_inference_steps=4).images          # with the 4-step student as pipe.unet
    # or, removably, student and scheduler in one call:
    handle = apply_distilled_sampler(pipe, DistilledSamplerConfig(steps=4, student=student))

Pitfalls
========
* ``num_inference_steps`` must divide ``base_steps`` (64): the grids nest only then, and a
  student distilled for 4 steps is not better at 8.
* The sampler is deterministic: ``eta != 0`` is refused (the student never saw DDIM's noise).
* The schedule (``beta_schedule``, ``num_train_timesteps``) must be the teacher's: build the
  scheduler ``from_config`` of the teacher's scheduler, as ``apply_distilled_sampler`` does.
* Only epsilon-prediction networks: the x-space reading of the student (see the package) goes
  through ``eps``; another ``prediction_type`` is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from diffusers import ConfigMixin, SchedulerMixin
from diffusers.configuration_utils import register_to_config
from torch import nn

from reference.harness.production import Applied, denoiser, replace_child, require
from reference.scheduler_tradeoff.production import COMPATIBLES, pipeline_scheduler, swap_scheduler

from .core import BASE_STEPS, GridDDIMScheduler, timestep_grid

_DDIM_KEYS = (
    "num_train_timesteps",
    "beta_start",
    "beta_end",
    "beta_schedule",
    "trained_betas",
    "clip_sample",
    "clip_sample_range",
    "prediction_type",
)


class DistilledDDIMScheduler(SchedulerMixin, ConfigMixin):
    """Deterministic DDIM, (1)-(2), on the nested grids of progressive distillation.

    The configuration is ``DDIMScheduler``'s schedule (same defaults) plus ``base_steps``, the
    step count of the first teacher whose grid nests every student's.
    """

    order = 1
    _compatibles = COMPATIBLES  # from_config of these drops their own keys silently

    @register_to_config
    def __init__(
        self,
        num_train_timesteps: int = 1000,
        beta_start: float = 0.0001,
        beta_end: float = 0.02,
        beta_schedule: str = "linear",
        trained_betas: Any = None,
        clip_sample: bool = True,
        clip_sample_range: float = 1.0,
        prediction_type: str = "epsilon",
        base_steps: int = BASE_STEPS,
    ) -> None:
        if prediction_type != "epsilon":
            raise ValueError(
                f"the distilled sampler reads eps; got prediction_type={prediction_type!r}"
            )
        ddim = {k: self.config[k] for k in _DDIM_KEYS}
        self.sampler = GridDDIMScheduler(ddim, base_steps)
        self.alphas_cumprod = self.sampler.alphas_cumprod
        self.init_noise_sigma = 1.0
        self.num_inference_steps: int | None = None
        self.timesteps = self.sampler.timesteps

    def set_timesteps(self, num_inference_steps: int, device: Any = None) -> None:
        """The ``num_inference_steps`` grid points (a divisor of ``base_steps``), descending."""
        self.sampler.set_timesteps(num_inference_steps)
        self.num_inference_steps = num_inference_steps
        self.timesteps = self.sampler.timesteps.to(device) if device else self.sampler.timesteps

    def scale_model_input(self, sample: torch.Tensor, timestep: Any = None) -> torch.Tensor:
        return sample

    def step(
        self,
        model_output: torch.Tensor,
        timestep: Any,
        sample: torch.Tensor,
        eta: float = 0.0,
        generator: torch.Generator | None = None,
        return_dict: bool = True,
    ) -> Any:
        """(1)-(2) from ``timestep`` to the next grid point (``generator`` unused: no noise)."""
        if eta != 0.0:
            raise ValueError(f"the distilled sampler is deterministic (eta = 0), got eta={eta}")
        out = self.sampler.step(model_output, timestep, sample)
        return out if return_dict else (out.prev_sample, out.pred_original_sample)

    def __len__(self) -> int:
        return int(self.config.num_train_timesteps)


@dataclass(frozen=True, eq=False)
class DistilledSamplerConfig:
    """The student's step count (a divisor of 64: 8, 4, 2 for the zoo's students) and,
    optionally, the student to put in place of the pipeline's denoiser."""

    steps: int = 4
    student: nn.Module | None = None


def swap_denoiser(applied: Applied, pipe: Any, student: nn.Module, technique: str) -> None:
    """Put ``student`` where ``pipe``'s denoiser is (same class only); undone by ``remove()``."""
    current = denoiser(pipe)
    require(student, (type(current).__name__,), f"{technique} in this pipeline")
    name = "unet" if getattr(pipe, "unet", None) is current else "transformer"
    replace_child(applied, pipe, name, student)


def apply_distilled_sampler(pipe: Any, config: DistilledSamplerConfig) -> Applied:
    """Swap ``pipe.scheduler`` for `DistilledDDIMScheduler` built from its configuration, pinned
    to ``config.steps`` (and the denoiser for ``config.student``); ``remove()`` restores both."""
    timestep_grid(config.steps)  # ValueError unless steps divides 64, before any change
    if config.student is not None:
        require(config.student, (type(denoiser(pipe)).__name__,), "the distilled student")
    technique = "progressive distillation sampler"
    scheduler = DistilledDDIMScheduler.from_config(pipeline_scheduler(pipe, technique).config)
    applied = swap_scheduler(pipe, scheduler, technique, config.steps)
    if config.student is not None:
        swap_denoiser(applied, pipe, config.student, technique)
    return applied
