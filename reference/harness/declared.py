"""What benchmarks' results declare alike, said once: columns by direction and unit, and a
sampling benchmark's ending (the sampler facts of its settings and the held-out real-digits row),
so that a benchmark names only its own facts.

Idea
====
Two things every benchmark's result declares alike: its columns, and (when it samples) the
same ending.

**Columns.** A column is a metric id with its unit and better direction
(`reference.harness.results.Metric`). The shared ones are `STANDARD_METRICS`; a benchmark's own
ones are declared by direction and unit, several at once: ``**lower("rms_to_solution",
"max_abs_diff")``, ``**higher("loss_var_reduction", unit="x")``. `SAMPLED_COLUMNS` are the
columns of every timed and sampled row: latency, speedup and the four quality metrics.

**The quick run.** Every benchmark has a ``QUICK`` configuration, the one the tests and
``glossary bench --quick`` run: `quick` builds it from the smallest sizes that keep every
statistic defined (`QUICK_SIZES`: two seeds for a paired interval, two samples of each class for
the class-weighted KID, two timing rounds for a round-bootstrap interval, no untimed round), then
the benchmark's own fields.

**A counted row.** Most rows run one sampler function ``run(noise, labels) -> (x, count)`` twice
over: on each quality seed's noise with class-balanced labels, where ``count`` (the network
evaluations, the full passes of a cache) becomes a per-seed value of the row, and on the one
latency batch (`reference.harness.sizes.latency_inputs`) when timed. `counted_variant` builds
that `reference.harness.compare.Variant`:

    sample(seed) = run(noise(n_quality, seed), balanced labels)  →  x, {counted: count}      (3)
    timed()      = run(latency noise, latency labels)                                         (4)

**The comparison.** A sampling benchmark's `reference.harness.compare.Comparison` takes its
quality sample and timing from the run's ``Config`` (`reference.harness.sizes.Scored` and
``Timed``): `held_out_comparison` fills them in, so that a benchmark declares only its rows,
columns, aims, headline and solution:

    score   = held-out digits at n = cfg.n_quality;  seeds = cfg.seeds
    repeats = cfg.repeats;  warmup = cfg.warmup                                               (5)

**The ending.** A benchmark that samples the zoo (the contract of `reference.harness.compare`)
ends with the same three steps: record the run's ``Config`` and the facts of how it sampled (the
baseline's scheduler, which ODE every row solves, which real digits the distances are measured
against), append the reference row of held-out real digits at the same sample size, and build
the result body with `reference.harness.compare.outcome`. `sampled_outcome` is those steps once:

    settings = fields(cfg) ∪ SAMPLED ∪ facts          (later keys win; a fact None drops a key)  (1)
    rows     = measured rows ∪ extra_rows ∪ {real digits at n = cfg.n_quality}                  (2)

(1) keeps every field of ``Config`` (no field forgotten or retyped, `settings_of`); (2) puts the
real row last, scored on FDD and the class-weighted KID only: a real digit has no latency, no
accuracy gap worth a column and no solution to be near.

Why these defaults
==================
``scheduler="ddim"``: every sampled benchmark's baseline is DDIM at 50 steps on one clipped ODE
(`reference.harness.ode`); ``ode="clipped"``: the ODE every row solves (a latent model says
``"unclipped-latent"``); ``quality_reference="held-out-half"``: the distances are taken against the
held-out reference half (`reference.harness.scores`), never the digits the classifier was fit on.

Pitfall: the defaults are facts of the run, not options. A benchmark that samples otherwise
(another ODE, a baseline that is not a scheduler) passes its own value, or ``None`` to leave the
key out; it must never inherit a fact that is false for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, TypeVar

import torch

from .compare import AnyAim, Comparison, HeadlineSpec, Measured, Outcome, Variant, outcome
from .results import Figure, Metric, Note, Row, settings_of
from .sampling import class_labels, make_noise
from .scores import QUALITY_METRICS, held_out_score, real_row
from .sizes import MIN_QUALITY, latency_inputs

C = TypeVar("C")

QUICK_SIZES: dict[str, Any] = {
    "n_quality": MIN_QUALITY,
    "seeds": (0, 1),
    "batch_latency": 4,
    "repeats": 2,
    "warmup": 0,
}
"""The smallest shared sizes at which every statistic of a run is still defined."""


def quick(config: type[C], **own: Any) -> C:
    """The ``QUICK`` configuration of ``config``: `QUICK_SIZES` for the fields it has, then
    ``own`` (which may override them)."""
    names = {f.name for f in fields(config)}  # type: ignore[arg-type]
    shared = {k: v for k, v in QUICK_SIZES.items() if k in names}
    return config(**{**shared, **own})


SAMPLED_COLUMNS = ("latency_ms", "speedup", *QUALITY_METRICS)
"""The standard columns of a row that is both timed and sampled."""


def lower(*ids: str, unit: str = "") -> dict[str, Metric]:
    """Columns ``ids`` in ``unit`` where lower is better (an error, a time, a size)."""
    return dict.fromkeys(ids, Metric(unit, "lower"))


def higher(*ids: str, unit: str = "") -> dict[str, Metric]:
    """Columns ``ids`` in ``unit`` where higher is better (a reduction factor, an efficiency)."""
    return dict.fromkeys(ids, Metric(unit, "higher"))


SAMPLED: dict[str, str] = {
    "scheduler": "ddim",
    "ode": "clipped",
    "quality_reference": "held-out-half",
}
"""The sampler facts a sampling benchmark records unless it says otherwise (1)."""

REAL_METRICS = ("fd_digits", "kid_digits")
"""The distances the real-digits row is scored on (2)."""


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
    metric ``counted`` (3) unless not ``sampled``, and timed on the latency batch (4) if
    ``timed``; ``more`` are further `Variant` fields (``facts``, ``grad``, ``score``)."""

    def sample(seed: int) -> tuple[torch.Tensor, dict[str, float]]:
        n = cfg.n_quality
        x, count = run(make_noise(n, seed), class_labels(n))  # (3)
        return x, {counted: float(count)}

    noise, labels = latency_inputs(cfg.batch_latency)
    return Variant(
        id,
        config,
        role,  # type: ignore[arg-type]
        sample=sample if sampled else None,  # type: ignore[arg-type]
        timed=(lambda: run(noise, labels)) if timed else None,  # (4)
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
    of ``cfg`` (5); ``more``: its ``solution`` or ``ranges``."""
    return Comparison(
        variants=tuple(variants),
        metrics=metrics,
        score=held_out_score(cfg.n_quality),  # (5)
        seeds=cfg.seeds,
        aims=tuple(aims),
        headline=headline,
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        **more,
    )


def sampled_settings(cfg: Any, **facts: Any) -> dict[str, Any]:
    """The result's settings (1): every field of ``cfg``, the `SAMPLED` facts, then ``facts``;
    a fact given as ``None`` removes that key."""
    merged = settings_of(cfg, **{**SAMPLED, **facts})  # (1)
    return {k: v for k, v in merged.items() if not (k in facts and facts[k] is None)}


def sampled_outcome(
    m: Measured,
    cfg: Any,
    *,
    notes: Sequence[Note],
    figures: Sequence[Figure],
    extra_rows: Sequence[Row] = (),
    more: Sequence[Measured] = (),
    **facts: Any,
) -> Outcome:
    """The result body of a sampling benchmark: `outcome` of ``m`` (and ``more``) with the
    settings (1) and the real-digits row at ``cfg.n_quality`` after ``extra_rows`` (2)."""
    real = real_row(cfg.n_quality).as_row(*REAL_METRICS)  # (2)
    return outcome(
        m,
        settings=sampled_settings(cfg, **facts),
        notes=notes,
        figures=figures,
        extra_rows=[*extra_rows, real],
        more=more,
    )
