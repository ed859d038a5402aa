"""The latent consistency model's few-step sampler as a diffusers scheduler.

Idea
====
Multistep consistency sampling (Song et al. 2023, arXiv:2303.01469, Algorithm 1; the sampler of
Latent Consistency Models, Luo et al. 2023, arXiv:2310.04378) alternates a jump to the data and
a re-noising to the next timestep ``tau_{i+1}``:

    f(z, tau) = c_skip(tau) z + c_out(tau) (z - sigma_tau eps(z, tau)) / alpha_tau          (1)
    z'        = alpha_{tau_{i+1}} f(z, tau_i) + sigma_{tau_{i+1}} noise                     (2)

Each step is exactly one step of diffusers' ``LCMScheduler``; what differs is the timesteps: this
package stops LCM's grid at ``max_timestep`` (979 on the zoo's capped cosine schedule, where
``alpha_999 = 5e-5`` would amplify the network's error 20,000-fold; see
[`MAX_TIMESTEP`][reference.consistency_latent_diffusion.MAX_TIMESTEP]) and picks ``N`` of them by
LCM's rule ([`sampling_timesteps`][reference.consistency_latent_diffusion.sampling_timesteps]).
The package does this by patching one ``LCMScheduler`` object for one step count
([`lcm_scheduler`][reference.consistency_latent_diffusion.lcm_scheduler]);
`ConsistencyScheduler` is the same sampler as a diffusers scheduler for any step count: a
``SchedulerMixin`` + ``ConfigMixin`` whose ``set_timesteps(N)`` takes the package's ``N``
timesteps and whose ``step`` is ``LCMScheduler.step`` (1)-(2). ``max_timestep`` is a
configuration field: ``num_train_timesteps - 1`` gives LCM's own grid (Stable Diffusion's
schedule, ``alpha_999 = 0.068``, needs no cap).

Usage
=====
.. code-block:: python

    pipe.scheduler = ConsistencyScheduler.from_config(pipe.scheduler.config)
    images = pipe(num_inference_steps=2).images          # with the consistency model as denoiser
    handle = apply_consistency_sampler(pipe, ConsistencySamplerConfig(steps=2, student=cm))

Pitfalls
========
* Step (2) draws fresh noise from the ``generator`` passed to ``step``; a pipeline that passes
  its own generator (``DDPMPipeline``) draws the initial noise from it first, so its samples
  equal ``consistency_sample(..., seed)`` only when the loop gives ``step`` a generator seeded
  like the package's.
* Latents: the LCM step never clips (``clip_sample=False``), right for scaled latents.
* More steps are not better after 2-4: each step re-injects noise (2).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
from diffusers import ConfigMixin, LCMScheduler, SchedulerMixin
from diffusers.configuration_utils import register_to_config
from torch import nn

from reference.harness.production import Applied, denoiser, require
from reference.scheduler_tradeoff.production import COMPATIBLES, pipeline_scheduler, swap_scheduler
from reference.timestep_distillation.production import swap_denoiser

from .core import MAX_TIMESTEP, ORIGINAL_STEPS, TIMESTEP_SCALING, sampling_timesteps

_LCM_LOG = "diffusers.schedulers.scheduling_lcm"


class ConsistencyScheduler(SchedulerMixin, ConfigMixin):
    """Multistep consistency sampling (1)-(2) on the package's timesteps, one LCM step each.

    The schedule fields have ``LCMScheduler``'s defaults; ``original_inference_steps``,
    ``max_timestep`` and ``timestep_scaling`` default to this package's values.
    """

    order = 1
    _compatibles = COMPATIBLES  # from_config of these drops their own keys silently

    @register_to_config
    def __init__(
        self,
        num_train_timesteps: int = 1000,
        beta_start: float = 0.00085,
        beta_end: float = 0.012,
        beta_schedule: str = "scaled_linear",
        trained_betas: Any = None,
        original_inference_steps: int = ORIGINAL_STEPS,
        max_timestep: int = MAX_TIMESTEP,
        timestep_scaling: float = TIMESTEP_SCALING,
        prediction_type: str = "epsilon",
    ) -> None:
        self.lcm = LCMScheduler(
            num_train_timesteps=num_train_timesteps,
            beta_start=beta_start,
            beta_end=beta_end,
            beta_schedule=beta_schedule,
            trained_betas=trained_betas,
            original_inference_steps=original_inference_steps,
            clip_sample=False,
            timestep_scaling=timestep_scaling,
            prediction_type=prediction_type,
        )
        self.alphas_cumprod = self.lcm.alphas_cumprod
        self.init_noise_sigma = 1.0
        self.num_inference_steps: int | None = None
        self.timesteps = self.lcm.timesteps

    def sampling_timesteps(self, num_inference_steps: int) -> list[int]:
        """``tau_1 > ... > tau_N``: LCM's selection rule on the grid capped at ``max_timestep``."""
        cfg = self.config
        return sampling_timesteps(
            num_inference_steps,
            cfg.original_inference_steps,
            cfg.num_train_timesteps,
            cfg.max_timestep,
        )

    def set_timesteps(self, num_inference_steps: int, device: Any = None) -> None:
        taus = self.sampling_timesteps(num_inference_steps)
        log = logging.getLogger(_LCM_LOG)
        previous = log.level
        log.setLevel(logging.ERROR)  # LCM warns about custom timesteps, which are the point here
        try:
            self.lcm.set_timesteps(device=device, timesteps=taus)
        finally:
            log.setLevel(previous)
        self.num_inference_steps = num_inference_steps
        self.timesteps = self.lcm.timesteps

    def scale_model_input(self, sample: torch.Tensor, timestep: Any = None) -> torch.Tensor:
        return sample

    def step(
        self,
        model_output: torch.Tensor,
        timestep: Any,
        sample: torch.Tensor,
        generator: torch.Generator | None = None,
        return_dict: bool = True,
    ) -> Any:
        """(1) at ``timestep``, then (2) to the next timestep (the last step returns ``f``)."""
        return self.lcm.step(
            model_output, timestep, sample, generator=generator, return_dict=return_dict
        )

    def __len__(self) -> int:
        return int(self.config.num_train_timesteps)


@dataclass(frozen=True, eq=False)
class ConsistencySamplerConfig:
    """Steps of multistep consistency sampling (1-4 are useful) and, optionally, the
    consistency model to put in place of the pipeline's denoiser."""

    steps: int = 2
    student: nn.Module | None = None


def apply_consistency_sampler(pipe: Any, config: ConsistencySamplerConfig) -> Applied:
    """Swap ``pipe.scheduler`` for `ConsistencyScheduler` built from its configuration, pinned to
    ``config.steps`` (and the denoiser for ``config.student``); ``remove()`` restores both."""
    technique = "consistency sampler"
    if config.student is not None:
        require(config.student, (type(denoiser(pipe)).__name__,), "the consistency model")
    scheduler = ConsistencyScheduler.from_config(pipeline_scheduler(pipe, technique).config)
    scheduler.sampling_timesteps(config.steps)  # ValueError for a bad step count, before changes
    applied = swap_scheduler(pipe, scheduler, technique, config.steps)
    if config.student is not None:
        swap_denoiser(applied, pipe, config.student, technique)
    return applied
