"""Zoo specs and training of the progressive-distillation students (through the zoo trainer).

Three zoo models, trained in order by ``scripts/train_zoo.py`` (each round is one call of the
zoo's `fit`, so it is seeded, checkpointed and resumable):

==================  =====================  ==============================================
zoo model           starts from            rounds (student steps)
==================  =====================  ==============================================
``pd_student_8``    ``teacher`` (DDIM-64)  64 -> 32 -> 16 -> 8
``pd_student_4``    ``pd_student_8``       8 -> 4
``pd_student_2``    ``pd_student_4``       4 -> 2
==================  =====================  ==============================================

Intermediate students (32 and 16 steps) are not kept: only the students the benchmark reports
are committed, in float16 (``storage_dtype``; loaded back into float32) to respect the zoo's 25 MB
budget.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch

from reference.data import NULL_CLASS, load_digits_tensors
from reference.harness.sampling import frozen
from reference.zoo.specs import P_UNCOND, SCHEDULER_CONFIG, TEACHER_CONFIG, ZooSpec
from reference.zoo.training import TrainContext, TrainOutcome, fit

from .core import BASE_STEPS, GridDDIMScheduler, distillation_loss

BATCH = 64
LR = 1e-4
WEIGHTING = "truncated_snr"
STUDENT_EMA = 0.99
"""EMA decay of the student weights within a round (the round's result is the EMA)."""

PLAN: dict[str, tuple[str, tuple[tuple[int, int], ...]]] = {
    "pd_student_8": ("teacher", ((32, 100), (16, 100), (8, 150))),
    "pd_student_4": ("pd_student_8", ((4, 250),)),
    "pd_student_2": ("pd_student_4", ((2, 250),)),
}
"""Zoo model -> (model it starts from, ``(student steps, optimizer steps)`` of its rounds).

The paper trains 50k steps per round; a few hundred suffice at this size. The first rounds are
easy (one 32-step DDIM step is almost two 64-step ones); the last ones, where one step must
replace a long stretch of the trajectory, get more."""


def student_steps(name: str) -> int:
    """The number of sampling steps zoo student ``name`` was distilled for."""
    return PLAN[name][1][-1][0]


def round_steps(name: str, total: int) -> list[int]:
    """Optimizer steps of each round of ``name`` when its rounds share ``total`` steps."""
    planned = [k for _, k in PLAN[name][1]]
    return [max(1, round(total * k / sum(planned))) for k in planned]


def init_student(teacher: torch.nn.Module) -> torch.nn.Module:
    """A trainable copy of ``teacher``: the student of a round starts as its teacher."""
    student = copy.deepcopy(teacher)
    for p in student.parameters():
        p.requires_grad_(True)
    return student


def distill_round(
    ctx: TrainContext,
    teacher: torch.nn.Module,
    steps: int,
    x: torch.Tensor,
    y: torch.Tensor,
    parent_sha: str = "",
    optimizer_steps: int | None = None,
) -> tuple[torch.nn.Module, float, float]:
    """One halving round: a copy of ``teacher`` learns ``steps``-step sampling from it.

    Returns ``(student, final loss, seconds)``; the round is checkpointed under its own key.
    """
    alphas_cumprod = GridDDIMScheduler(SCHEDULER_CONFIG).alphas_cumprod
    teacher = frozen(copy.deepcopy(teacher))

    def teacher_eps(z: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return teacher(z, t, class_labels=labels, return_dict=False)[0]

    def batch_loss(model: torch.nn.Module, step: int) -> torch.Tensor:
        idx = torch.randint(len(y), (ctx.batch,))
        labels = y[idx].clone()
        labels[torch.rand(ctx.batch) < P_UNCOND] = NULL_CLASS
        return distillation_loss(
            model, teacher_eps, x[idx], labels, steps, alphas_cumprod, weighting=WEIGHTING
        )

    # Each round checkpoints under its own name; the parent's sha256 in the key keeps a retrained
    # teacher from resuming a stale round.
    round_spec = dataclasses.replace(ctx.spec, name=f"{ctx.spec.name}-round{steps}")
    key_config = {**ctx.config, "parent_sha256": parent_sha}
    sub = dataclasses.replace(
        ctx,
        spec=round_spec,
        config=key_config,
        steps=optimizer_steps or ctx.steps,
        train_seconds=0.0,
    )
    model, loss = fit(sub, init_student(teacher), batch_loss, ema_decay=STUDENT_EMA)
    return model, loss, sub.train_seconds


def train_pd_student(ctx: TrainContext) -> TrainOutcome:
    """Train zoo model ``ctx.spec.name`` by the rounds of
    [`PLAN`][reference.timestep_distillation.train.PLAN]."""
    parent, rounds = PLAN[ctx.spec.name]
    model = ctx.load(parent)
    parent_sha = next(iter(ctx.entry(parent)["weights"].values()))["sha256"]
    x, y = load_digits_tensors("train")
    per_round: list[dict[str, Any]] = []
    total = 0.0
    for (steps, _), k in zip(rounds, round_steps(ctx.spec.name, ctx.steps), strict=True):
        model, loss, seconds = distill_round(ctx, model, steps, x, y, parent_sha, k)
        per_round.append(
            {
                "student_steps": steps,
                "optimizer_steps": k,
                "final_loss": round(loss, 6),
                "seconds": round(seconds, 1),
            }
        )
        total += seconds
    ctx.train_seconds = total
    extra = {
        "technique": "progressive distillation (Salimans & Ho 2022, arXiv:2202.00512)",
        "starts_from": parent,
        "sampling_steps": rounds[-1][0],
        "base_steps": BASE_STEPS,
        "rounds": per_round,
        "loss": f"{WEIGHTING}-weighted ||x~ - x_hat||^2, x_hat of the clipped DDIM step",
        "student_ema": STUDENT_EMA,
        "p_uncond": P_UNCOND,
        "scheduler": dict(SCHEDULER_CONFIG),
    }
    return TrainOutcome(model, loss, extra=extra)


def _spec(name: str, description: str) -> ZooSpec:
    parent = PLAN[name][0]
    return ZooSpec(
        name=name,
        description=description,
        architecture="diffusers.UNet2DModel",
        config=TEACHER_CONFIG,
        build="reference.zoo.specs:build_unet",
        train="reference.timestep_distillation.train:train_pd_student",
        steps=sum(k for _, k in PLAN[name][1]),
        batch=BATCH,
        lr=LR,
        requires=(parent,),
        storage_dtype="float16",
    )


ZOO_SPECS: dict[str, ZooSpec] = {
    "pd_student_8": _spec("pd_student_8", "progressive-distillation student, 8 DDIM steps"),
    "pd_student_4": _spec("pd_student_4", "progressive-distillation student, 4 DDIM steps"),
    "pd_student_2": _spec("pd_student_2", "progressive-distillation student, 2 DDIM steps"),
}
"""The students as zoo models (``steps``: optimizer steps of all their rounds together)."""
