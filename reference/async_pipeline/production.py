"""The asynchronous pipeline on diffusers' ``UNet2DConditionModel``: stages, split and schedule.

Idea
====
AsyncDiff (Chen, Ma, Fang, Tan and Wang, "AsyncDiff: Parallelizing Diffusion Models by
Asynchronous Denoising", NeurIPS 2024, arXiv:2406.06911) cuts the noise predictor into ``K``
consecutive components, one per device. Consecutive denoising steps see very similar hidden
states, so after a few synchronous *warm-up* steps each component takes as input the output its
predecessor produced *one step earlier*; then all ``K`` components compute at the same time. This
module is the part of it that needs no processes: the Stable Diffusion U-Net (the SD 1.x/2.x/SDXL
layout, with cross-attention) as a chain of units, its split into ``K`` stages by FLOPs, and the
asynchronous schedule run in one process (stage after stage), which is what the ranks of
[`production_launch`][reference.async_pipeline.production_launch] compute in parallel.

Math
====
Units in execution order: ``in`` (``conv_in``), ``down.0`` ... ``down.{D-1}``, ``mid`` (when the
model has one), ``up.0`` ... ``up.{U-1}``, ``out`` (norm, SiLU, ``conv_out``). A stage ``S_k``
(``k = 1..K``) runs a contiguous range of them. With ``H_0^i = x_i`` the latent at step ``i`` and
``t_i`` its timestep, the synchronous sampler is

    H_k^i = S_k(H_{k-1}^i, t_i),     eps_i = H_K^i                                   (1)

and the asynchronous one, for steps ``i >= max(warmup, 1)`` (step 0 has no earlier output),

    H_k^i = S_k(H_{k-1}^{i-1}, t_i)   for k >= 2,   H_1^i = S_1(x_i, t_i)            (2)

then ``x_{i+1} = DDIM(eps_i, t_i, x_i)`` either way. A hand-off ``H_k`` is the feature map and
the skip tensors the later up blocks still need (`Handoff`), so under (2) the skips are one step
old too. Every stage computes the time embedding of *its own* ``t_i`` and receives the prompt's
``encoder_hidden_states`` (cross-attention sits in down, mid and up blocks alike): only image
features are stale, never the noise level or the prompt. With one stage (2) is (1).

The split minimises the most expensive stage, with ``c_u`` the cost of unit ``u`` (its FLOPs as
``torch.utils.flop_counter`` counts matmuls, convolutions and attention; with ``balance="time"``
its median time measured on this machine, as the package splits the zoo U-Net) and ``b_0 = 0 <
b_1 < ... < b_K = n`` the stage boundaries:

    b* = argmin_b max_k sum_{u in [b_{k-1}, b_k)} c_u                                (3)

by dynamic programming over prefix sums; for ``K = 2`` it is the package's
[`balanced_split`][reference.async_pipeline.stages.balanced_split] on the same costs. With stage
FLOPs ``C_k`` and ``w' = max(w, 1)`` synchronous steps out of ``S``, the speedup estimate is

    S sum_k C_k / (w' sum_k C_k + (S - w') max_k C_k) <= K                           (4)

(the package's (1) with FLOPs in place of times: an estimate, not a bound; it leaves out the
hand-off, the embeddings every stage recomputes and the scheduler step).

Use
===
In one process (a model or a pipeline with ``.unet``; the stages run one after the other, so it is
for checking the schedule, not for speed)::

    with apply_async_pipeline(pipe, AsyncPipelineConfig(stages=2, warmup=2)):
        latents = pipe(prompt_embeds=embeds, output_type="latent").images

and with one stage per rank under ``torchrun`` (gloo, CPU), a shape of `reference.zoo.shapes`
built in every rank::

    run = run_async("unet2d-condition", AsyncPipelineConfig(stages=2, warmup=2), steps=20,
                    world_size=2, real=True, side=32)
    run.latents, run.compute_s, run.wall_s

Files: [`production_stages`][reference.async_pipeline.production_stages] (units, hand-offs, FLOPs,
split), this module (configuration, schedule, ``apply_async_pipeline``, the DDIM sampler) and
[`production_launch`][reference.async_pipeline.production_launch] (the ranks and ``run_async``).

Supported: ``UNet2DConditionModel`` only. The stages follow a U-Net's down, mid and up blocks and
carry their skip tensors; ``UNet2DModel`` (the zoo's class) is split by the package's own
[`stages`][reference.async_pipeline.stages], and the transformers (DiT, PixArt, SD3, Flux) are a
stack of blocks with no skips, which AsyncDiff splits by layer with another hand-off, not written
here. They are refused in one line before anything changes.

Pitfalls
========
* The single-process schedule is stateful: it counts calls as steps and starts a new trajectory
  when the timestep rises or the batch shape changes (a new sampling run), or on
  ``applied.state["reset"]()``. Two calls at the same timestep count as two steps.
* Exactness: during warm-up, in ``"sync"`` mode and with one stage, the staged forward computes
  the very operations of ``UNet2DConditionModel.forward`` in the same order: ``torch.equal``.
* Not split: ControlNet and T2I-Adapter residuals, GLIGEN and the ``image_hint`` addition
  embedding (one line each); SDXL's ``added_cond_kwargs`` are passed to every stage.
* The U-Net's up blocks are the expensive half, so the middle of the unit list is not the middle
  of the compute; the FLOP split is counted at the inputs given (the model's own sample size when
  none are).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from reference.harness.production import Applied, denoiser, replace_forward, require

from .production_stages import (
    BALANCES,
    TECHNIQUE,
    Conditioning,
    StageSplit,
    balanced_stages,
    conditioning,
    run_units,
    split_stages,
    stage_context,
    unit_flops,
    unit_names,
    unit_times_ms,
)
from .stages import Handoff

__all__ = [
    "BALANCES",
    "MODES",
    "SCHEDULER_CONFIG",
    "SUPPORTED",
    "TECHNIQUE",
    "AsyncPipelineConfig",
    "AsyncSchedule",
    "Conditioning",
    "StageSplit",
    "apply_async_pipeline",
    "balanced_stages",
    "conditioning",
    "ddim_scheduler",
    "run_units",
    "split_stages",
    "stage_context",
    "trajectory",
    "unit_flops",
    "unit_names",
    "unit_times_ms",
]

SUPPORTED = ("UNet2DConditionModel",)
"""Classes the staged forward is written for (their down, mid and up blocks and skips)."""
MODES = ("sync", "async")
SCHEDULER_CONFIG: dict[str, Any] = {
    "beta_start": 0.00085,
    "beta_end": 0.012,
    "beta_schedule": "scaled_linear",
    "clip_sample": False,
    "set_alpha_to_one": False,
    "steps_offset": 1,
}
"""Stable Diffusion 1.5's noise schedule (its ``scheduler_config.json``), for a DDIM sampler."""


@dataclass(frozen=True)
class AsyncPipelineConfig:
    """``stages`` (one per rank under torchrun), synchronous ``warmup`` steps, ``mode``
    (``"async"``, or ``"sync"``: the exact control), ``split`` (the ``stages - 1`` unit boundaries;
    ``None``: chosen by (3)), what (3) ``balance``s (``"flops"``, or ``"time"``: the units'
    times measured on this machine) and intra-op ``threads`` of each rank."""

    stages: int = 2
    warmup: int = 1
    mode: str = "async"
    split: tuple[int, ...] | None = None
    balance: str = "flops"
    threads: int = 1

    def __post_init__(self) -> None:
        if self.stages < 1 or self.warmup < 0 or self.threads < 1:
            raise ValueError(
                f"stages and threads must be >= 1 and warmup >= 0, got stages={self.stages}, "
                f"warmup={self.warmup}, threads={self.threads}"
            )
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; known: {', '.join(MODES)}")
        if self.balance not in BALANCES:
            raise ValueError(f"unknown balance {self.balance!r}; known: {', '.join(BALANCES)}")
        if self.split is not None:
            b = list(self.split)
            if len(b) != self.stages - 1 or any(x >= y for x, y in itertools.pairwise(b)):
                raise ValueError(
                    f"split needs {self.stages - 1} increasing unit boundaries, got {self.split}"
                )


@dataclass
class AsyncSchedule:
    """The staged ``forward`` with the schedule (1) during warm-up and (2) after it, run stage
    after stage in this process; ``previous`` holds ``H_1 .. H_{K-1}`` of the last call."""

    unet: nn.Module
    split: StageSplit
    config: AsyncPipelineConfig
    step: int = 0
    previous: list[Handoff] = field(default_factory=list)
    _last: tuple[float, torch.Size] | None = None

    def reset(self) -> None:
        """Start a new trajectory: the next call is step 0 (synchronous)."""
        self.step, self.previous, self._last = 0, [], None

    def _starts_trajectory(self, now: float, shape: torch.Size) -> bool:
        return self._last is None or now > self._last[0] or shape != self._last[1]

    def __call__(
        self,
        sample: torch.Tensor,
        timestep: Any,
        encoder_hidden_states: torch.Tensor,
        *args: Any,
        return_dict: bool = True,
        **extra: Any,
    ) -> Any:
        if args:
            raise TypeError(f"{TECHNIQUE}: pass the forward's arguments after the third by name")
        cond = conditioning(sample, encoder_hidden_states, **extra)
        now = float(torch.as_tensor(timestep).reshape(-1)[0])
        if self._starts_trajectory(now, sample.shape):
            self.reset()
        self._last = (now, sample.shape)
        synchronous = self.config.mode == "sync" or self.step < max(self.config.warmup, 1)
        outputs: list[Handoff] = []
        for k, (lo, hi) in enumerate(self.split.bounds):
            if k == 0:
                state: Handoff | torch.Tensor = sample
            else:
                state = outputs[k - 1] if synchronous else self.previous[k - 1]  # (1) / (2)
            outputs.append(run_units(self.unet, state, timestep, cond, lo, hi))
        self.previous = outputs[:-1]
        self.step += 1
        eps = outputs[-1].h
        if not return_dict:
            return (eps,)
        from diffusers.models.unets.unet_2d_condition import UNet2DConditionOutput

        return UNet2DConditionOutput(sample=eps)


def apply_async_pipeline(target: Any, config: AsyncPipelineConfig) -> Applied:
    """Run ``target``'s U-Net (a model or a pipeline with ``.unet``) as ``config.stages`` stages
    on the asynchronous schedule, in this process. ``state``: ``split`` (`StageSplit`),
    ``schedule`` (`AsyncSchedule`) and ``reset``. The ranks of ``torchrun`` are started by
    [`run_async`][reference.async_pipeline.production_launch.run_async]."""
    unet = denoiser(target)
    require(unet, SUPPORTED, TECHNIQUE)
    if unet.config.addition_embed_type == "image_hint":
        raise ValueError(f"{TECHNIQUE} does not split the image_hint addition embedding")
    split = split_stages(unet, config.stages, config.split, balance=config.balance)
    schedule = AsyncSchedule(unet, split, config)
    applied = Applied(unet, "async-pipeline")
    replace_forward(applied, unet, schedule)
    applied.state.update(split=split, schedule=schedule, reset=schedule.reset)
    return applied


def ddim_scheduler(steps: int) -> Any:
    """A fresh DDIM scheduler (eta 0, deterministic) on `SCHEDULER_CONFIG`, set to ``steps``."""
    from diffusers import DDIMScheduler

    scheduler = DDIMScheduler(**SCHEDULER_CONFIG)
    scheduler.set_timesteps(steps)
    return scheduler


@torch.no_grad()
def trajectory(
    unet: nn.Module, noise: torch.Tensor, encoder_hidden_states: torch.Tensor, steps: int
) -> list[torch.Tensor]:
    """``x_1 .. x_S`` of DDIM from ``noise`` with ``unet(sample, t, encoder_hidden_states)``
    (the plain model, or one with `apply_async_pipeline` applied)."""
    scheduler = ddim_scheduler(steps)
    x = noise * scheduler.init_noise_sigma
    out = []
    for t in scheduler.timesteps:
        eps = unet(scheduler.scale_model_input(x, t), t, encoder_hidden_states).sample
        x = scheduler.step(eps, t, x).prev_sample
        out.append(x)
    return out
