"""A comparison that a benchmark declares and the harness measures.

Idea
====
A benchmark used to measure *and* assemble its result by hand: rows, intervals, aims and the
headline were rebuilt in every ``bench.py``. Here a benchmark only says **what** it compares:

* its variants (`Variant`): the baseline, the techniques and the matched-cost controls, each
  with how it samples from a seed's noise and how one latency batch of it runs;
* the claims it tests (`QualityAim` on paired seeds, `SpeedupAim` on timing rounds,
  `FactAim` on values that do not vary with the seed) and its headline row (`HeadlineSpec`);

and `measure` does the rest the same way for every benchmark: every variant samples from the
same noise on every seed (paired seeds), is scored, is timed in one interleaved comparison whose
raw rounds are kept, and the rows, aims and headline are derived from those raw values, so that
``glossary bench --check`` can derive them again from the result file.

Math
====
For a metric ``m`` measured on seeds ``s = 1..S`` and timing rounds ``r = 1..R``:

    value       v̄ = (1/S) Σ_s v(s)                                              (1)
    interval    v̄ ± t(0.975, S-1) · sd(v) / √S                                  (2)
    ratio       exp((1/S) Σ_s log(v_a(s) / v_b(s))), t interval on the logs      (3)
    speedup     median_r T_b(r) / median_r T_a(r)                                (4)
    its interval: percentile bootstrap over rounds, each round's pair kept       (5)
    fidelity    rms_to_solution = (1/N) Σ_i ‖x_i − x*_i‖ / √D                     (6)
    clipped     [max(lo, L), min(hi, H)] for a metric with range [L, H]           (7)

(1)-(3) are `reference.harness.stats.summarize` and ``paired_ratio``; (4)-(5) are
`reference.harness.cost.compare_latency` and ``speedup_interval``; (6) is
`reference.harness.ode.rms_to` against the converged clipped-ODE solution ``x*`` from the same
noise (``Comparison.solution``; `reference.harness.solutions` computes it once per content), the
primary metric of a training-free approximation: it asks
how far the technique moves each sample from where the exact sampler would put it, which a
distribution distance (FDD) cannot see when the errors keep the distribution. (7) keeps the
t interval of a bounded metric (an accuracy, a distance) inside the values it can take: with
two to five seeds, (2) of an accuracy near 1 reaches past 1, and of a distance near 0 below 0;
the clipped interval is what the data support, and the range is recorded in the result so the
check clips alike.

A variant's speedup is taken against the baseline unless it names its own pair
(``Variant.against``): a sweep over batch sizes holds one baseline per batch, each technique
compared with the one of its own batch. A benchmark whose rows need different sample sizes,
seeds or timing rounds (a costly reference measured on fewer images; layers timed apart from
the whole sampler) declares several comparisons and `outcome` joins them into one result.

Pitfalls
========
* A variant must draw *all* its randomness from the seed it is given, or the pairing of (3)
  is void.
* A variant without ``sample`` is only timed and counted: it has no per-seed values, so no
  quality aim or headline quality ratio may name it.
* Everything is timed under ``torch.inference_mode()``; a variant whose timed call trains
  (``grad=True``) gets autograd back inside its call only.
* The latency batch is separate from the quality seeds, and each variant's ``timed`` callable
  must do the same work on every call (no caches filled by the first call, unless that is the
  technique and the warm-up fills them).
* `QualityAim` on a metric that can be negative (a difference of kernel means) needs a
  difference (``kind="difference"``), not a ratio: `measure` refuses a ratio aim on a
  non-positive value instead of taking the log of it.
* A value counted while sampling (the full steps an adaptive cache ran) varies with the seed:
  ``sample`` returns it beside the samples, and it gets a mean and interval like a score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from .cost import LatencyComparison, compare_latency
from .results import (
    Aim,
    BenchmarkResult,
    Figure,
    Headline,
    Measurement,
    Metric,
    Note,
    Row,
    aim,
)
from .seeds import SeedTable, over_seeds

Role = Literal["baseline", "technique", "control", "reference"]
Comparator = Literal[">=", "<=", ">", "<"]
Score = Callable[[torch.Tensor, Mapping[str, torch.Tensor]], Mapping[str, float]]
"""``score(samples, same_seed)``: metrics of one variant's samples of one seed; ``same_seed``
maps every variant id (and ``"solution"`` when there is one) to its samples of that seed."""

FIDELITY = "rms_to_solution"
FIDELITY_METRIC = Metric("", "lower")
ENVELOPE = ("schema_version", "slug", "module", "standard", "quick", "options", "provenance")
"""Keys of a result that the command line adds around a comparison's body."""


@dataclass(frozen=True)
class Variant:
    """One configuration under comparison.

    ``sample(seed)`` returns its quality samples from the noise of ``seed`` (``None``: not
    sampled, a variant that is only timed or counted), or ``(samples, counted)`` where
    ``counted`` maps metric ids to values counted while sampling that seed (the full steps an
    adaptive cache ran); ``timed()`` runs one latency batch
    (``None``: not timed); ``facts`` are values that do not vary with the seed (parameter
    counts, FLOPs, measured memory), copied into its row.
    """

    id: str
    config: Mapping[str, Any]
    role: Role
    sample: Callable[[int], torch.Tensor] | None = None
    timed: Callable[[], Any] | None = None
    facts: Mapping[str, float] = field(default_factory=dict)
    against: str | None = None
    """The timed row its speedup (4)-(5) is taken against; ``None``: the comparison's baseline."""
    grad: bool = False
    """``timed`` needs autograd (a training step): the harness times everything else under
    ``torch.inference_mode()`` and switches autograd back on inside this variant's call."""
    score: Score | None = None
    """Its own ``score`` (a metric set that depends on the method), else the comparison's."""


Range = tuple[float | None, float | None]
RANGES: Mapping[str, Range] = {
    "accuracy": (0.0, 1.0),
    "diversity": (0.0, None),
    "fd_digits": (0.0, None),
    FIDELITY: (0.0, None),
}
"""The values a standard metric can take (``None``: unbounded); (7) clips to them."""


AimKind = Literal["ratio", "difference", "value"]


@dataclass(frozen=True)
class QualityAim:
    """``metric(row) / metric(against) <comparison> target`` on paired seeds (3); with
    ``kind="difference"`` the paired difference ``metric(row) - metric(against)``, with
    ``kind="value"`` the row's own mean (1) (``against`` ``None``). ``params`` are quoted by
    the aim's message."""

    id: str
    row: str
    against: str | None
    metric: str
    comparison: Comparator
    target: float
    kind: AimKind = "ratio"
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SpeedupAim:
    """``median T(against) / median T(row) <comparison> target`` over rounds (4)-(5)."""

    id: str
    row: str
    against: str
    comparison: Comparator
    target: float
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FactAim:
    """``facts[fact](row) / facts[fact](against) <comparison> target``: a ratio of values that
    do not vary with the seed (a memory count, a parameter count), judged on the point value
    (no interval: there is no sampling variance to cover)."""

    id: str
    row: str
    against: str
    fact: str
    comparison: Comparator
    target: float
    params: Mapping[str, Any] = field(default_factory=dict)


AnyAim = QualityAim | SpeedupAim | FactAim


@dataclass(frozen=True)
class HeadlineSpec:
    """The row the comparison page shows, the metric of its quality ratio, its speed limit (an
    analytic ``bound`` that a measurement may not exceed, or an ``estimate``) and, for a
    technique that trades memory, its memory ratio against the baseline."""

    row: str
    quality: str | None = None
    limit: float | Callable[[Measured], float] | None = None
    """A number, or a function of the measurement (a limit from measured parts)."""
    limit_kind: Literal["bound", "estimate"] | None = None
    memory_ratio: float | None = None


@dataclass(frozen=True)
class Comparison:
    """What a benchmark compares; the first ``baseline`` variant is the reference of every
    speedup and ratio unless an aim names another row."""

    variants: tuple[Variant, ...]
    metrics: Mapping[str, Metric]
    score: Score
    seeds: tuple[int, ...]
    aims: tuple[AnyAim, ...]
    headline: HeadlineSpec
    repeats: int
    warmup: int
    solution: Callable[[int], torch.Tensor] | None = None
    ranges: Mapping[str, Range] = field(default_factory=dict)
    """Ranges (7) of the comparison's own bounded metrics, beside `RANGES`."""

    def __post_init__(self) -> None:
        ids = [v.id for v in self.variants]
        if len(set(ids)) != len(ids):
            raise ValueError(f"comparison: duplicate variant ids in {ids}")
        if "baseline" not in [v.role for v in self.variants]:
            raise ValueError("comparison: one variant must be the baseline")
        timed = {v.id for v in self.variants if v.timed is not None}
        for v in self.variants:
            if v.against is not None and (v.against not in timed or v.timed is None):
                raise ValueError(
                    f"comparison: variant {v.id!r} is timed against {v.against!r}, "
                    "which is not a timed variant (or it is not timed itself)"
                )
        for a in self.aims:
            for name in (a.row, a.against):
                if name is None and isinstance(a, QualityAim) and a.kind == "value":
                    continue
                if name not in ids:
                    raise ValueError(f"comparison: aim {a.id!r} names unknown row {name!r}")
        if self.headline.row not in ids:
            raise ValueError(f"comparison: headline row {self.headline.row!r} is not a variant")

    @property
    def baseline(self) -> str:
        """The first baseline variant: the default pair of every speedup and ratio."""
        return next(v.id for v in self.variants if v.role == "baseline")

    def range_of(self, metric: str) -> Range | None:
        """The range (7) of ``metric``, if it is bounded."""
        return self.ranges.get(metric, RANGES.get(metric))

    def variant(self, id: str) -> Variant:
        return next(v for v in self.variants if v.id == id)


@dataclass
class Measured:
    """What `measure` found: the per-seed table, the latency comparison (raw rounds inside),
    seed ``seeds[0]``'s samples of every variant (for figures), and the derived rows, aims and
    headline."""

    comparison: Comparison
    table: SeedTable
    latency: LatencyComparison | None
    first: dict[str, torch.Tensor]
    rows: list[Row]
    aims: list[Aim]
    headline: Headline | None


def _quality(c: Comparison) -> tuple[SeedTable, dict[str, torch.Tensor]]:
    """Every variant on every seed from the same noise (paired), scored by its ``score`` (else
    ``c.score``), with the values it counted while sampling."""
    first: dict[str, torch.Tensor] = {}
    counted: dict[str, Mapping[str, float]] = {}
    variants = {v.id: v for v in c.variants if v.sample is not None}
    if not variants:
        return SeedTable(tuple(c.seeds)), first

    def sampler(v: Variant) -> Callable[[int], torch.Tensor]:
        def run(seed: int) -> torch.Tensor:
            out = v.sample(seed)  # type: ignore[misc]
            if isinstance(out, tuple):
                out, counted[v.id] = out  # this seed's counts, read by measure_one below
            return out

        return run

    samplers: dict[str, Callable[[int], Any]] = {k: sampler(v) for k, v in variants.items()}
    if c.solution is not None:
        samplers = {"solution": c.solution, **samplers}

    def measure_one(key: str, x: torch.Tensor, same_seed: Mapping[str, Any]) -> Mapping[str, float]:
        if key == "solution":
            return {}
        first.setdefault(key, x)
        scores = dict((variants[key].score or c.score)(x, same_seed))
        scores.update(counted.pop(key, {}))
        if c.solution is not None:
            scores[FIDELITY] = float(_rms_to(x, same_seed["solution"]))  # (6)
        return scores

    return over_seeds(samplers, measure_one, c.seeds), first


def _rms_to(samples: torch.Tensor, solution: torch.Tensor) -> float:
    from .ode import rms_to

    return float(rms_to(samples, solution).mean())


def _with_grad(step: Callable[[], Any]) -> Callable[[], Any]:
    """``step`` with autograd on again inside the harness's inference mode."""

    def run() -> Any:
        with torch.inference_mode(False), torch.enable_grad():
            return step()

    return run


def _latency(c: Comparison) -> LatencyComparison | None:
    timed = {
        v.id: _with_grad(v.timed) if v.grad else v.timed for v in c.variants if v.timed is not None
    }
    if not timed:
        return None
    if c.baseline not in timed:
        raise ValueError("comparison: the baseline must be timed when any variant is")
    with torch.inference_mode():
        return compare_latency(timed, repeats=c.repeats, warmup=c.warmup, baseline=c.baseline)


def clip_interval(span: tuple[float, float], bounds: Range | None) -> tuple[float, float]:
    """(7): ``span`` kept inside ``bounds``."""
    if bounds is None:
        return span
    lo, hi = span
    low, high = bounds
    if low is not None:
        lo, hi = max(lo, low), max(hi, low)
    if high is not None:
        lo, hi = min(lo, high), min(hi, high)
    return lo, hi


def _row(c: Comparison, v: Variant, table: SeedTable, lat: LatencyComparison | None) -> Row:
    """A row: means and t intervals over seeds (1)-(2), clipped to the metric's range (7), then
    median latency and speedup (4) against the variant's pair with its round bootstrap (5)."""
    values, intervals, seeds = table.row_fields(v.id)
    intervals = {m: clip_interval(span, c.range_of(m)) for m, span in intervals.items()}
    spread: dict[str, float] = {}
    if lat is not None and v.id in lat.stats:
        pair = v.against or lat.baseline
        speedup = lat.speedup_over(v.id, pair)  # (4)
        values = {"latency_ms": lat.median_ms(v.id), "speedup": speedup, **values}
        spread["latency_ms"] = lat.iqr_ms(v.id)
        if v.id != pair:
            intervals = {"speedup": lat.speedup_interval(v.id, against=pair), **intervals}
    return Row(
        v.id,
        dict(v.config),
        v.role,
        {**values, **v.facts},
        intervals=intervals,
        spread=spread,
        seeds=seeds,
    )


def judge(
    a: AnyAim,
    table: SeedTable,
    lat: LatencyComparison | None,
    facts: Mapping[str, Mapping[str, float]],
    range_of: Callable[[str], Range | None] = RANGES.get,
) -> Aim:
    """One declared aim judged on the measured values: a fact ratio on its point value, a
    quality figure on its paired interval (a value aim's kept in ``range_of`` its metric, (7)),
    a speedup on its round bootstrap (4)-(5)."""
    if isinstance(a, FactAim):
        for key in (a.row, a.against):
            if a.fact not in facts[key]:
                raise ValueError(f"aim {a.id!r}: row {key!r} has no fact {a.fact!r}")
        value = facts[a.row][a.fact] / facts[a.against][a.fact]
        return aim(
            a.id, value, a.target, a.comparison, None, row=a.row, against=a.against, **a.params
        )
    if isinstance(a, QualityAim):
        r = _quality_figure(a, table)
        span = r.interval
        if a.kind == "value" and span is not None:
            span = clip_interval(span, range_of(a.metric))  # (7), as the row shows it
        return aim(
            a.id,
            r.value,
            a.target,
            a.comparison,
            span,
            row=a.row,
            against=a.against,
            **a.params,
        )
    if lat is None:
        raise ValueError(f"aim {a.id!r}: a speedup aim needs timed variants")
    return aim(
        a.id,
        lat.speedup_over(a.row, a.against),  # (4)
        a.target,
        a.comparison,
        lat.speedup_interval(a.row, against=a.against),  # (5)
        row=a.row,
        against=a.against,
        **a.params,
    )


def _quality_figure(a: QualityAim, table: SeedTable) -> Any:
    """The figure a quality aim judges: the row's mean (1), the paired difference, or the
    paired ratio (3) (positive values only)."""
    if a.kind == "value":
        return table.summary(a.row, a.metric)  # (1)
    if a.against is None:
        raise ValueError(f"aim {a.id!r}: a {a.kind} aim needs a row to compare against")
    if a.kind == "difference":
        return table.difference(a.row, a.against, a.metric)
    for key in (a.row, a.against):
        if min(table.per_seed(key, a.metric)) <= 0:
            raise ValueError(f"aim {a.id!r}: a ratio of {a.metric} needs positive values")
    return table.ratio(a.row, a.against, a.metric)  # (3)


def _headline(m: Measured) -> Headline:
    """The headline row's speedup (4)-(5) and quality ratio (3), both against its pair (its
    ``against``, else the baseline)."""
    c, table, lat = m.comparison, m.table, m.latency
    h = c.headline
    limit = h.limit(m) if callable(h.limit) else h.limit
    pair = c.variant(h.row).against or c.baseline
    ratio = table.ratio(h.row, pair, h.quality) if h.quality is not None else None  # (3)
    timed = lat is not None and h.row in lat.stats
    return Headline(
        h.row,
        speedup=lat.speedup_over(h.row, pair) if timed else None,  # (4)
        speedup_interval=lat.speedup_interval(h.row, against=pair) if timed else None,  # (5)
        speedup_limit=limit if timed else None,
        limit_kind=h.limit_kind if timed else None,
        memory_ratio=h.memory_ratio,
        quality_metric=h.quality if ratio else None,
        quality_ratio=ratio.value if ratio else None,
        quality_interval=ratio.interval if ratio else None,
    )


def measure(c: Comparison) -> Measured:
    """Sample and score every variant on every seed, time them interleaved, derive the rows,
    aims and headline."""
    table, first = _quality(c)
    lat = _latency(c)
    rows = [_row(c, v, table, lat) for v in c.variants]
    facts = {v.id: v.facts for v in c.variants}
    aims = [judge(a, table, lat, facts, c.range_of) for a in c.aims]
    m = Measured(c, table, lat, first, rows, aims, None)
    m.headline = _headline(m)
    return m


@dataclass
class Outcome:
    """What a ported benchmark's ``measure(cfg, staging)`` returns to the command line: the
    result's ``body`` (everything but `ENVELOPE`) and the figure files it wrote."""

    body: dict[str, Any]
    figures: list[str]


def outcome(
    m: Measured,
    *,
    settings: Mapping[str, Any],
    notes: Sequence[Note],
    figures: Sequence[Figure],
    extra_rows: Sequence[Row] = (),
    more: Sequence[Measured] = (),
) -> Outcome:
    """The body of a schema-4 result: the schema-3 fields, plus each timed row's raw rounds
    (``rounds.latency_ms``, paired with its pair's, named by ``rounds.against``) so that
    (4)-(5) can be recomputed from the file. ``extra_rows`` are rows not measured here (a
    reference row of real data); ``more`` are further comparisons of the same benchmark (other
    sample sizes, seeds or timing rounds) whose rows and aims join the result, the headline
    staying ``m``'s. Row ids must be unique across all of them."""
    measured = [m, *more]
    rows = [r for x in measured for r in x.rows] + list(extra_rows)
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"outcome: a row id appears twice across the comparisons: {ids}")
    metrics: dict[str, Metric] = {}
    for x in measured:
        metrics.update(x.comparison.metrics)
        if x.comparison.solution is not None:
            metrics.setdefault(FIDELITY, FIDELITY_METRIC)
    measurement = Measurement(
        settings=dict(settings),
        metrics=metrics,
        rows=rows,
        headline=m.headline,
        aims=[a for x in measured for a in x.aims],
        notes=list(notes),
        figures=list(figures),
    )
    body = body_of(measurement)
    for name, spec in body["metrics"].items():
        bounds = next((b for x in measured if (b := x.comparison.range_of(name))), None)
        if bounds is not None:
            spec["range"] = list(bounds)
    by_id = {r["id"]: r for r in body["rows"]}
    for x in measured:
        _keep_rounds(x, by_id)
    return Outcome(body, [f.file for f in figures])


def body_of(measurement: Measurement) -> dict[str, Any]:
    """The result's body of ``measurement``: every key of the schema but the `ENVELOPE` that
    the command line adds (a study that builds its `Measurement` itself returns this)."""
    envelope = BenchmarkResult("", "", False, False, {}, measurement, {})
    return {k: v for k, v in envelope.to_dict().items() if k not in ENVELOPE}


def _keep_rounds(m: Measured, rows: Mapping[str, dict[str, Any]]) -> None:
    """Each timed row of ``m`` keeps its raw rounds and names its pair (4)-(5)."""
    if m.latency is None:
        return
    for v in m.comparison.variants:
        stats = m.latency.stats.get(v.id)
        if stats is not None:
            rows[v.id]["rounds"] = {
                "against": v.against or m.latency.baseline,
                "latency_ms": list(stats.samples_ms),
            }
