"""Builders of what a sampling benchmark declares: its quick preset, a counted row and its
comparison, each filled in from the run's ``Config`` so that a benchmark names only what is its
own (the columns and the ending are `reference.harness.declared`).

Idea
====
**The quick run.** Every benchmark has a ``QUICK`` configuration, the one the tests and
``glossary bench --quick`` run: `quick` builds it from the smallest sizes that keep every
statistic defined (`QUICK_SIZES`), then the benchmark's own fields:

    two seeds        a paired interval over seeds needs two                                  (1)
    n = 20           two samples of each of the 10 classes (class-weighted KID, diversity)
    two rounds       a round-bootstrap interval of a speedup needs two; no untimed round

**A counted row.** Most rows run one sampler function ``run(noise, labels) -> (x, count)`` twice
over: on each quality seed's noise with class-balanced labels, where ``count`` (the network
evaluations, the full passes of a cache) becomes a per-seed value of the row, and on the one
latency batch (`reference.harness.sizes.latency_inputs`) when timed. `counted_variant` builds
that `reference.harness.compare.Variant`:

    sample(seed) = run(noise(n_quality, seed), balanced labels)  →  x, {counted: count}      (2)
    timed()      = run(latency noise, latency labels)                                         (3)

**The comparison.** A sampling benchmark's `reference.harness.compare.Comparison` takes its
quality sample and timing from the run's ``Config`` (`reference.harness.sizes.Scored` and
``Timed``): `held_out_comparison` fills them in, so that a benchmark declares only its rows,
columns, aims, headline and solution:

    score   = held-out digits at n = cfg.n_quality;  seeds = cfg.seeds
    repeats = cfg.repeats;  warmup = cfg.warmup                                               (4)

Pitfalls
========
* `quick` fills only the fields a ``Config`` has; a benchmark whose quick run needs more rounds
  or an untimed one (a compiled path, a warm cache) says so in its own fields, which win.
* ``run`` must be the same function for both calls: a row whose timed call differs from what it
  samples (a different batch path, a cache filled by the first call) is not a counted row; build
  its `Variant` by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, TypeVar

import torch

from .compare import AnyAim, Comparison, HeadlineSpec, Variant
from .results import Metric
from .sampling import class_labels, make_noise
from .scores import held_out_score
from .sizes import MIN_QUALITY, latency_inputs

C = TypeVar("C")

QUICK_SIZES: dict[str, Any] = {
    "n_quality": MIN_QUALITY,
    "seeds": (0, 1),
    "batch_latency": 4,
    "repeats": 2,
    "warmup": 0,
}
"""The smallest shared sizes at which every statistic of a run is still defined (1)."""


def quick(config: type[C], **own: Any) -> C:
    """The ``QUICK`` configuration of ``config``: `QUICK_SIZES` for the fields it has, then
    ``own`` (which may override them)."""
    names = {f.name for f in fields(config)}  # type: ignore[arg-type]
    shared = {k: v for k, v in QUICK_SIZES.items() if k in names}
    return config(**{**shared, **own})


Run = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, float]]
"""A sampler of a row: ``(noise, labels) -> (samples, count)``."""


def counted_variant(
    cfg: Any,
    id: str,
    config: dict[str, Any],
    role: str,
    run: Run,
    *,
    counted: str,
    sampled: bool = True,
    timed: bool = True,
    **more: Any,
) -> Variant:
    """The row ``id`` of ``run``: sampled on every quality seed with its ``count`` under the
    metric ``counted`` (2) unless not ``sampled``, and timed on the latency batch (3) if
    ``timed``; ``more`` are further `Variant` fields (``facts``, ``grad``, ``score``)."""

    def sample(seed: int) -> tuple[torch.Tensor, dict[str, float]]:
        n = cfg.n_quality
        x, count = run(make_noise(n, seed), class_labels(n))  # (2)
        return x, {counted: float(count)}

    noise, labels = latency_inputs(cfg.batch_latency)
    return Variant(
        id,
        config,
        role,  # type: ignore[arg-type]
        sample=sample if sampled else None,  # type: ignore[arg-type]
        timed=(lambda: run(noise, labels)) if timed else None,  # (3)
        **more,
    )


def held_out_comparison(
    cfg: Any,
    variants: Sequence[Variant],
    metrics: dict[str, Metric],
    aims: Sequence[AnyAim],
    headline: HeadlineSpec,
    **more: Any,
) -> Comparison:
    """The `Comparison` of ``variants`` scored on the held-out digits and timed with the sizes
    of ``cfg`` (4); ``more``: its ``solution`` or ``ranges``."""
    return Comparison(
        variants=tuple(variants),
        metrics=metrics,
        score=held_out_score(cfg.n_quality),  # (4)
        seeds=cfg.seeds,
        aims=tuple(aims),
        headline=headline,
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        **more,
    )
