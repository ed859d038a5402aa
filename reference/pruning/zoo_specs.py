"""Zoo models of the pruning technique: the pruned + fine-tuned teacher and its control.

* ``pruned_teacher``: the zoo teacher with 50% of the channels of every coupled group removed
  (Taylor importance, [`prune_unet`][reference.pruning.structured.prune_unet]), then fine-tuned with
  the teacher's own objective for ``FINETUNE_STEPS`` steps.
* ``pruned_scratch``: the **same architecture**, randomly initialised and trained for the same
  number of steps, batch size, learning-rate schedule and EMA: the control that tells whether
  the teacher's weights were worth keeping (Liu et al. 2018, arXiv:1810.05270, found that for
  classification networks a pruned architecture trained from scratch often matches pruning +
  fine-tuning; Diff-Pruning reports the opposite for diffusion models at a short budget).

``ZOO_SPECS`` is merged into the zoo registry (through
`reference.registry.zoo_extension_modules`): train with
``python scripts/train_zoo.py --only pruned_teacher,pruned_scratch`` and load with
``reference.zoo.load("pruned_teacher")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from reference.zoo.specs import ZooSpec
from reference.zoo.training import TrainContext, TrainOutcome, fit

from .structured import build_pruned_unet, calibration_batches, prune_unet

PRUNE_RATIO = 0.5
CRITERION = "taylor"
TAYLOR_T_MAX = 600
"""Timesteps ``t < 600`` feed the Taylor importance (the noisiest 40% are dropped)."""
CALIBRATION = {"batches": 8, "batch": 64}
FINETUNE_STEPS = 600
FINETUNE_BATCH = 128
FINETUNE_LR = 1e-3


def build_pruned(config: dict[str, Any]) -> nn.Module:
    """Build a pruned architecture from its saved configuration (``config["unet"]`` etc.)."""
    if "unet" not in config:
        raise ValueError("pruned zoo configuration has no 'unet' entry (not trained yet?)")
    return build_pruned_unet(config)


def _architecture(ctx: TrainContext) -> tuple[nn.Module, dict[str, Any], dict[str, Any]]:
    """Prune the teacher as configured; returns (pruned model, its config, pruning facts)."""
    teacher = ctx.load("teacher")
    cfg = ctx.config
    cal = calibration_batches(cfg["calibration"]["batches"], cfg["calibration"]["batch"], seed=1)
    model, report = prune_unet(
        teacher, cfg["ratio"], cfg["criterion"], calibration=cal, t_max=cfg["t_max"]
    )
    facts = {"params_teacher": report.params_before, "params_pruned": report.params_after}
    return model, report.config, facts


def _batch_loss(batch: int) -> Any:
    from reference.harness import load_digits_tensors
    from reference.zoo.specs import _diffusion_batch_loss

    x, y = load_digits_tensors("train")
    return _diffusion_batch_loss(lambda idx: x[idx], y, batch)


def train_pruned(ctx: TrainContext) -> TrainOutcome:
    """Prune the teacher, then fine-tune with the teacher's loss (EMA weights saved)."""
    from reference.zoo.specs import EMA_DECAY

    model, arch, facts = _architecture(ctx)
    ema, loss = fit(ctx, model.train(), _batch_loss(ctx.batch), ema_decay=EMA_DECAY)
    return TrainOutcome(ema, loss, extra=facts | {"ema_decay": EMA_DECAY}, config_updates=arch)


def train_scratch(ctx: TrainContext) -> TrainOutcome:
    """The same architecture from a random initialisation, the same training budget."""
    from reference.zoo.specs import EMA_DECAY

    _, arch, facts = _architecture(ctx)
    torch.manual_seed(ctx.seed)
    model = build_pruned_unet(arch)
    ema, loss = fit(ctx, model.train(), _batch_loss(ctx.batch), ema_decay=EMA_DECAY)
    return TrainOutcome(ema, loss, extra=facts | {"ema_decay": EMA_DECAY}, config_updates=arch)


_CONFIG = {
    "ratio": PRUNE_RATIO,
    "criterion": CRITERION,
    "t_max": TAYLOR_T_MAX,
    "calibration": CALIBRATION,
}

ZOO_SPECS: dict[str, ZooSpec] = {
    "pruned_teacher": ZooSpec(
        name="pruned_teacher",
        description="teacher U-Net with 50% of channels removed (Taylor, DepGraph), fine-tuned",
        architecture="diffusers.UNet2DModel (pruned widths)",
        config=dict(_CONFIG),
        build="reference.pruning.zoo_specs:build_pruned",
        train="reference.pruning.zoo_specs:train_pruned",
        steps=FINETUNE_STEPS,
        batch=FINETUNE_BATCH,
        lr=FINETUNE_LR,
        requires=("teacher",),
    ),
    "pruned_scratch": ZooSpec(
        name="pruned_scratch",
        description="control: the pruned_teacher architecture trained from scratch, same budget",
        architecture="diffusers.UNet2DModel (pruned widths)",
        config=dict(_CONFIG),
        build="reference.pruning.zoo_specs:build_pruned",
        train="reference.pruning.zoo_specs:train_scratch",
        steps=FINETUNE_STEPS,
        batch=FINETUNE_BATCH,
        lr=FINETUNE_LR,
        requires=("teacher",),
    ),
}
"""Zoo entries of this technique (to be registered in `reference.zoo.specs.SPECS`)."""


def load_pruned(name: str, zoo_dir: Path | None = None) -> nn.Module:
    """``reference.zoo.load(name)`` for ``pruned_teacher`` / ``pruned_scratch``."""
    from reference import zoo

    return zoo.load(name, zoo_dir)
