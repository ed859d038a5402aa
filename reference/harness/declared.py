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

from collections.abc import Sequence
from typing import Any

from .compare import Measured, Outcome, outcome
from .results import Figure, Metric, Note, Row, settings_of
from .scores import QUALITY_METRICS, real_row

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
