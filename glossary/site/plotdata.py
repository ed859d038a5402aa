"""What the drawn charts show, taken from the result files without drawing anything.

A result row has values per metric and, for some, a 95% interval (``intervals``); the headline
names the configuration the benchmark is about, its speedup with an interval, the limit of that
speedup (``limit_kind``: an analytic *bound* or an *estimate*) and its quality ratio. From these:

* :func:`row_points`: one :class:`Point` per row of a result, its speedup (the ``speedup``
  metric) and its quality ratio, the headline quality metric divided by the baseline's (the first
  ``baseline`` row that measured it, the same division the headline's ``quality_ratio`` makes);
* :func:`headline_point`: the headline of a whole technique, for the comparison charts;
* :func:`chart_kind`: which chart fits the points: quality against speedup when at least two
  configurations besides the baseline have both, else a dot plot of whichever was measured.

Nothing is invented: a value that was not measured stays ``None`` and is not drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from glossary.site.results import Result
from reference.harness.schema import ANOMALY_ABOVE_LIMIT

Span = tuple[float, float]
ChartKind = Literal["scatter", "speedup", "quality"]


@dataclass(frozen=True)
class Limit:
    """The limit of a speedup: an analytic bound or an estimate."""

    value: float
    kind: Literal["bound", "estimate"]


@dataclass(frozen=True)
class Point:
    """One configuration (or one technique's headline) as a chart draws it."""

    key: str
    label: str
    role: str
    speedup: float | None = None
    speedup_interval: Span | None = None
    quality: float | None = None
    quality_interval: Span | None = None
    headline: bool = False
    limit: Limit | None = None
    anomaly: bool = False
    memory: float | None = None
    """How many times less memory than the baseline (the comparison page's memory chart)."""
    memory_interval: Span | None = None


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def span_of(value: Any, scale: float = 1.0) -> Span | None:
    """A ``[lo, hi]`` interval divided by ``scale``, or ``None`` unless both ends are finite."""
    if not value:
        return None
    lo, hi = finite(value[0]), finite(value[1])
    return None if lo is None or hi is None else (lo / scale, hi / scale)


def quality_metric(result: Result) -> str | None:
    """The metric the headline judges quality by, if the result names one it measured."""
    head = result["headline"] or {}
    metric = head.get("quality_metric")
    return metric if metric in result["metrics"] else None


def quality_baseline(result: Result) -> float | None:
    """The quality metric's value in the first baseline row that measured it (not zero)."""
    metric = quality_metric(result)
    if metric is None:
        return None
    for row in result["rows"]:
        value = finite(row["values"].get(metric))
        if row["role"] == "baseline" and value:
            return value
    return None


def result_limit(result: Result) -> Limit | None:
    """The limit of the headline speedup, if the result states one."""
    head = result["headline"] or {}
    value, kind = finite(head.get("speedup_limit")), head.get("limit_kind")
    if value is None or kind not in ("bound", "estimate"):
        return None
    return Limit(value, kind)


def is_anomaly(result: Result) -> bool:
    """Whether the result flags its headline speedup as above its analytic bound."""
    return any(a["id"] == ANOMALY_ABOVE_LIMIT for a in result["anomalies"])


def above_estimate(result: Result) -> bool:
    """Whether the headline speedup is above a limit that is only an estimate (no anomaly)."""
    head, limit = result["headline"] or {}, result_limit(result)
    speedup = finite(head.get("speedup"))
    return bool(limit and limit.kind == "estimate" and speedup and speedup > limit.value)


def row_points(result: Result, labels: dict[str, str]) -> list[Point]:
    """Every row that measured a speedup or the quality metric, named by ``labels[row id]``."""
    metric, base = quality_metric(result), quality_baseline(result)
    head = result["headline"] or {}
    points = []
    for row in result["rows"]:
        values, spans = row["values"], row.get("intervals", {})
        speedup = finite(values.get("speedup"))
        raw = finite(values.get(metric)) if metric else None
        quality = raw / base if raw is not None and base else None
        is_head = row["id"] == head.get("row")
        q_span = span_of(spans.get(metric), base) if metric and base else None
        if is_head and q_span is None:
            q_span = span_of(head.get("quality_interval"))
        if speedup is None and quality is None:
            continue
        points.append(
            Point(
                key=row["id"],
                label=labels[row["id"]],
                role=row["role"],
                speedup=speedup,
                speedup_interval=span_of(spans.get("speedup")) if speedup is not None else None,
                quality=quality,
                quality_interval=q_span if quality is not None else None,
                headline=is_head,
            )
        )
    return points


def headline_point(result: Result, label: str) -> Point | None:
    """A technique's headline as one point (``None`` when the result has no headline)."""
    head = result["headline"]
    if not head:
        return None
    return Point(
        key=result["slug"],
        label=label,
        role="technique",
        speedup=finite(head["speedup"]),
        speedup_interval=span_of(head["speedup_interval"]),
        quality=finite(head["quality_ratio"]),
        quality_interval=span_of(head["quality_interval"]),
        limit=result_limit(result),
        anomaly=is_anomaly(result),
    )


def chart_kind(points: list[Point]) -> ChartKind | None:
    """Quality against speedup when two or more non-baseline points have both; else a dot plot
    of the speedups, else of the quality ratios; ``None`` when nothing was measured."""
    both = [p for p in points if p.speedup is not None and p.quality is not None]
    if len([p for p in both if p.role != "baseline"]) >= 2:
        return "scatter"
    if any(p.speedup is not None for p in points):
        return "speedup"
    if any(p.quality is not None for p in points):
        return "quality"
    return None


def needs_log(values: list[float]) -> bool:
    """Whether positive values spread over enough of a range to want a logarithmic axis."""
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) > 8
