"""Scheduler choice as a removable swap of a diffusers pipeline's scheduler.

Idea
====
A sampler is chosen per deployment, not per model: the same epsilon (or v) network samples with
DDPM, DDIM, DPM-Solver++(2M), UniPC or Euler, and the benchmark of this package shows how much
the choice moves quality at a given number of network calls. ``apply_scheduler`` makes the
choice one call on any pipeline: the pipeline's scheduler is replaced by the named one, built
``from_config(pipe.scheduler.config)`` (so the noise schedule, ``num_train_timesteps`` and the
prediction type carry over) with this package's settings for it
([`solver_settings`][reference.scheduler_tradeoff.schedulers.solver_settings]: trailing spacing,
a last step to ``abar = 1``, second-order multistep solvers with a first-order last step), and
``remove()`` puts the old scheduler object back.

Math: every scheduler here integrates the same reverse process; with ``N`` steps each calls the
network once per step, so the cost of a sample is

    NFE = N                                                                             (1)

whatever the scheduler, and only the error per step differs (first order for DDIM and Euler,
second order for DPM-Solver++(2M) and UniPC's predictor-corrector; Lu et al. 2022,
arXiv:2211.01095; Zhao et al. 2023, arXiv:2302.04867). ``SchedulerConfig.steps`` pins ``N``: the
swapped scheduler's ``set_timesteps`` uses it whatever ``num_inference_steps`` the pipeline
passes, so a chosen (sampler, steps) pair is one object.

Usage
=====
.. code-block:: python

    handle = apply_scheduler(pipe, SchedulerConfig("unipc", steps=8))
    images = pipe(...).images          # 8 UniPC steps
    handle.remove()                    # the pipeline's own scheduler object again

Pitfalls
========
* Clipping of the predicted ``x_0`` is a property of the model's data, not of the sampler: it is
  kept exactly when the pipeline's scheduler clips (``clip_sample`` or ``thresholding``), as the
  zoo's pixel models need, and off otherwise (latents exceed [-1, 1]).
* Flow-matching pipelines (SD3, Flux: ``FlowMatchEulerDiscreteScheduler``) integrate another
  ODE; a DDPM-family scheduler built from their configuration would be wrong, so they are refused.
* Multistep schedulers keep history: the swap builds a fresh scheduler; never share one object
  between two pipelines that sample concurrently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diffusers.schedulers.scheduling_utils import KarrasDiffusionSchedulers

from reference.harness.production import Applied, UnsupportedModel, denoiser
from reference.harness.schedulers import SCHEDULERS, check_scheduler

from .schedulers import solver_settings

FLOW_MATCHING_PREFIX = "FlowMatch"
COMPATIBLES = [*(e.name for e in KarrasDiffusionSchedulers), "LCMScheduler"]
"""DDPM-family schedulers whose configurations a scheduler of this project is built from."""


@dataclass(frozen=True)
class SchedulerConfig:
    """The scheduler's short name (a key of ``SCHEDULERS``: ddpm, ddim, dpmpp2m, unipc, euler)
    and, optionally, the number of steps it always takes (1)."""

    name: str = "dpmpp2m"
    steps: int | None = None


def check_config(config: SchedulerConfig) -> None:
    """One-line ``ValueError`` for an unknown name or a step count below 1."""
    check_scheduler(config.name)  # "unknown scheduler 'x'; choose from ddpm, ddim, ..."
    if config.steps is not None and config.steps < 1:
        raise ValueError(f"steps must be >= 1, got {config.steps}")


def pipeline_scheduler(pipe: Any, technique: str) -> Any:
    """``pipe.scheduler``, refusing a model or a flow-matching pipeline in one line."""
    scheduler = getattr(pipe, "scheduler", None)
    if scheduler is None or not hasattr(scheduler, "config"):
        raise UnsupportedModel(
            f"{technique} needs a pipeline with a scheduler; got {type(pipe).__name__}"
        )
    name = type(scheduler).__name__
    if name.startswith(FLOW_MATCHING_PREFIX):
        raise UnsupportedModel(
            f"{technique} does not support {name} (a flow-matching schedule); supported: "
            "pipelines with a DDPM-family (epsilon or v) scheduler"
        )
    return scheduler


def build_scheduler(current: Any, name: str) -> Any:
    """Scheduler ``name`` from ``current``'s configuration, with this package's settings for it;
    the x0 clipping follows ``current`` (see the pitfalls)."""
    import diffusers

    check_scheduler(name)
    clip = bool(current.config.get("clip_sample", False) or current.config.get("thresholding"))
    cls, settings = solver_settings(name, clip=clip)
    return getattr(diffusers, cls).from_config(current.config, **settings)


def pin_steps(scheduler: Any, steps: int) -> Any:
    """Make ``scheduler.set_timesteps`` take ``steps`` steps whatever it is asked (1)."""
    original = scheduler.set_timesteps

    def set_timesteps(num_inference_steps: int | None = None, device: Any = None, **kw: Any) -> Any:
        return original(steps, device=device, **kw)

    scheduler.set_timesteps = set_timesteps
    return scheduler


def swap_scheduler(pipe: Any, scheduler: Any, technique: str, steps: int | None = None) -> Applied:
    """Set ``pipe.scheduler = scheduler`` (steps pinned when given); ``remove()`` restores the
    original object. The one swap every scheduler-shaped technique uses."""
    old = pipeline_scheduler(pipe, technique)
    model = denoiser(pipe)
    if steps is not None:
        pin_steps(scheduler, steps)
    applied = Applied(model, technique, state={"scheduler": scheduler, "steps": steps})
    pipe.scheduler = scheduler
    applied.on_remove(lambda: setattr(pipe, "scheduler", old))
    return applied


def apply_scheduler(pipe: Any, config: SchedulerConfig) -> Applied:
    """Swap ``pipe.scheduler`` for ``config.name`` built from its configuration.

    Known names: ``SCHEDULERS`` (ddpm, ddim, dpmpp2m, unipc, euler); an unknown one is refused in
    one line listing them, before anything changes.
    """
    check_config(config)
    current = pipeline_scheduler(pipe, "scheduler choice")
    scheduler = build_scheduler(current, config.name)
    return swap_scheduler(pipe, scheduler, f"scheduler {config.name}", config.steps)


KNOWN = tuple(SCHEDULERS)
"""The names `apply_scheduler` accepts."""
