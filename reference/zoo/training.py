"""The one training loop of the zoo: AdamW, warm-up + cosine LR, optional EMA, resumable.

Determinism and resumption
==========================
Step ``k`` seeds torch's global RNG with ``seed * 1_000_003 + k`` before drawing its batch,
noise, timesteps and label dropout. The random stream of a step therefore depends only on
``(seed, k)``, not on what ran before, and a run resumed from a checkpoint at step ``k``
continues exactly as an uninterrupted run would (at a fixed thread count). Checkpoints (model,
EMA, optimizer, LR schedule, recent losses) go to the cache folder every
``ctx.checkpoint_every`` steps under a key derived from the spec's configuration and
hyper-parameters, so a changed configuration never resumes from a stale checkpoint.

EMA
===
Diffusion models are saved as an exponential moving average of their weights (Polyak
averaging; standard since DDPM, Ho et al. 2020, arXiv:2006.11239): ``ema <- d * ema + (1 - d) *
w`` with ``d = min(decay, (1 + k) / (10 + k))`` so the average is not dominated by the random
initialisation in short runs.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from .store import atomic_write_bytes

TRAINER_VERSION = 2
"""Part of the checkpoint key: bump it when a change to the training code must not resume old
checkpoints."""

BatchLoss = Callable[[nn.Module, int], torch.Tensor]
"""``batch_loss(model, step) -> scalar loss`` for one training step (draws its own batch)."""


class Spec(Protocol):
    """What training reads of a zoo model's spec (`reference.zoo.specs.ZooSpec` is one); a
    protocol, so that this module does not import the specs, which import it."""

    name: str
    hparams: dict[str, Any]
    requires: tuple[str, ...]

    def build_model(self, config: dict[str, Any] | None = None) -> nn.Module: ...


Loader = Callable[[str, Path], nn.Module]
"""``loader(name, zoo_dir)``: a trained zoo model from the folder being written
(`reference.zoo.load`)."""


@dataclass
class TrainContext:
    """What a spec's ``train`` function receives."""

    spec: Spec
    steps: int
    batch: int
    lr: float
    seed: int
    zoo_dir: Path
    cache_dir: Path
    checkpoint_every: int = 250
    progress: bool = True
    config: dict[str, Any] = field(default_factory=dict)
    train_seconds: float = 0.0
    """Seconds spent in `fit` (accumulated over resumed runs); set by `fit`."""

    loader: Loader | None = None
    """How `load` reads a dependency; the zoo's command line passes `reference.zoo.load`."""

    def load(self, name: str) -> nn.Module:
        """Load another zoo model (a dependency) from the zoo folder being written."""
        if self.loader is None:
            raise RuntimeError(f"{self.spec.name}: this context has no loader for {name!r}")
        return self.loader(name, self.zoo_dir)

    def entry(self, name: str) -> dict[str, Any]:
        """The manifest entry of an already trained zoo model in the folder being written."""
        from .store import verified_weights

        return verified_weights(name, self.zoo_dir)[0]


@dataclass
class TrainOutcome:
    """What a spec's ``train`` function returns.

    ``model``'s ``state_dict`` is saved; ``config_updates`` are merged into the saved
    configuration (e.g. the VAE's measured ``scaling_factor``); ``extra`` is stored in the
    manifest as is (JSON values only: test accuracy, EMA decay, ...).
    """

    model: nn.Module
    final_loss: float
    extra: dict[str, Any] = field(default_factory=dict)
    config_updates: dict[str, Any] = field(default_factory=dict)


class EMA:
    """Exponential moving average of a module's floating-point parameters and buffers."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.decay = decay
        self.shadow = copy.deepcopy(model).eval()
        for p in self.shadow.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        d = min(self.decay, (1 + step) / (10 + step))
        for s, p in zip(
            self.shadow.state_dict().values(), model.state_dict().values(), strict=True
        ):
            if s.dtype.is_floating_point:
                s.lerp_(p.detach(), 1.0 - d)
            else:
                s.copy_(p)


def lr_factor(step: int, total: int, warmup: int, final: float = 0.1) -> float:
    """Linear warm-up for ``warmup`` steps, then cosine decay to ``final`` times the peak."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return final + (1.0 - final) * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def checkpoint_key(ctx: TrainContext) -> str:
    payload = {
        "trainer": TRAINER_VERSION,
        "name": ctx.spec.name,
        "config": ctx.config,
        "steps": ctx.steps,
        "batch": ctx.batch,
        "lr": ctx.lr,
        "seed": ctx.seed,
        "hparams": ctx.spec.hparams,
    }
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def fit(
    ctx: TrainContext,
    model: nn.Module,
    batch_loss: BatchLoss,
    *,
    ema_decay: float | None = None,
    weight_decay: float = 0.0,
    grad_clip: float = 1.0,
) -> tuple[nn.Module, float]:
    """Train ``model`` for ``ctx.steps`` steps; return (EMA or final model in eval mode, loss).

    The returned loss is the mean training loss over the last ``min(100, steps)`` steps.
    """
    from tqdm.auto import tqdm

    opt = torch.optim.AdamW(model.parameters(), lr=ctx.lr, weight_decay=weight_decay)
    warmup = max(1, min(100, ctx.steps // 10))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: lr_factor(k, ctx.steps, warmup))
    ema = EMA(model, ema_decay) if ema_decay is not None else None
    losses: list[float] = []
    start = 0
    ckpt = ctx.cache_dir / f"{ctx.spec.name}-{checkpoint_key(ctx)}.pt"
    if ckpt.exists():
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        if ema is not None:
            ema.shadow.load_state_dict(state["ema"])
        losses, start = state["losses"], state["step"]
        ctx.train_seconds = state.get("seconds", 0.0)
    t0 = time.perf_counter() - ctx.train_seconds

    def save_checkpoint(step: int) -> None:
        import io

        state = {
            "model": model.state_dict(),
            "opt": opt.state_dict(),
            "sched": sched.state_dict(),
            "ema": ema.shadow.state_dict() if ema is not None else None,
            "losses": losses[-100:],
            "step": step,
            "seconds": time.perf_counter() - t0,
        }
        buf = io.BytesIO()
        torch.save(state, buf)
        atomic_write_bytes(ckpt, buf.getvalue())

    model.train()
    bar = tqdm(
        range(start, ctx.steps),
        initial=start,
        total=ctx.steps,
        desc=ctx.spec.name,
        disable=not ctx.progress or os.environ.get("ZOO_NO_PROGRESS") == "1",
        dynamic_ncols=True,
    )
    for step in bar:
        torch.manual_seed(ctx.seed * 1_000_003 + step)
        loss = batch_loss(model, step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        sched.step()
        if ema is not None:
            ema.update(model, step)
        losses.append(float(loss.detach()))
        losses = losses[-100:]
        if step % 10 == 0:
            bar.set_postfix(loss=f"{sum(losses) / len(losses):.4f}")
        if (step + 1) % ctx.checkpoint_every == 0 and step + 1 < ctx.steps:
            save_checkpoint(step + 1)
    if start < ctx.steps:
        save_checkpoint(ctx.steps)
        ctx.train_seconds = time.perf_counter() - t0
    final = ema.shadow if ema is not None else model
    final.eval()
    return final, sum(losses) / max(1, len(losses))
