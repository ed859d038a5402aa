"""Which setting of each technique the site shows, by one stated rule, and what it measured.

A benchmark measures several settings of a technique (DeepCache every 2, 3 or 5 steps; a
consistency model with 1, 2 or 4 steps) and names one as its headline. The comparison page and
the guide page show one setting per technique, chosen by one rule for all of them
(:func:`pick`), which the pages state:

    among the settings of the headline's method (the rows in the technique role with the same
    ``config.method`` as the result's headline row) that measured a speedup and the quality
    metric, the fastest whose quality ratio to the baseline is within the first quality budget
    (:data:`BUDGETS`, point estimates); when none is within it, the result's own headline.

The quality ratio of a setting is the paired ratio over noise seeds of its quality metric to the
baseline's (:func:`reference.harness.stats.paired_ratio`, the same geometric mean and interval
the harness writes into the headline). The quality metric is the one the result's headline
declares (``headline.quality_metric``), with its own better direction (``metrics[m].better``):
within a budget ``b`` means a ratio at most ``b`` for a lower-is-better metric (a distance, an
error) and at least ``1/b`` for a higher-is-better one (a PSNR).

Each :class:`Pick` also carries the limit of its speedup (only for the result's headline row,
the one the limit was derived for), the memory saving the headline states, the aims that compare
the setting with a matched-cost control, and the verdict of :func:`verdict` for a reader's
goal. Nothing is invented: a value that was not measured stays ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from glossary.site.plotdata import Limit, finite, is_anomaly, result_limit, span_of
from glossary.site.results import Result

Span = tuple[float, float]
Better = Literal["lower", "higher"]
BUDGETS = (1.10, 1.25)
"""The quality budgets, as ratios to the baseline (10% and 25% worse at most); the stacking
study's own budgets replace them on the pages when it states some."""
Rule = Literal["budget", "headline"]
Call = Literal["use", "avoid", "unsettled"]


@dataclass(frozen=True)
class Quality:
    """A setting's quality ratio to its baseline on one metric, with its 95% interval."""

    metric: str
    better: Better
    ratio: float
    interval: Span | None

    def within(self, budget: float) -> bool:
        """Whether the point estimate is within ``budget`` (see the module docstring)."""
        return self.ratio <= budget if self.better == "lower" else self.ratio >= 1 / budget

    def clearly_outside(self, budget: float) -> bool:
        """Whether the whole interval is outside ``budget``."""
        if self.interval is None:
            return not self.within(budget)
        lo, hi = self.interval
        return lo > budget if self.better == "lower" else hi < 1 / budget


@dataclass(frozen=True)
class Control:
    """An aim that compares the picked setting with a matched-cost control row."""

    aim: Mapping[str, Any]
    row: Mapping[str, Any]


@dataclass(frozen=True)
class Pick:
    """The setting of a technique that the pages show, and what it measured."""

    slug: str
    row: Mapping[str, Any]
    baseline: Mapping[str, Any] | None
    rule: Rule
    speed_baseline: Mapping[str, Any] | None
    """The row the speedup is measured against (an aim of the setting names it), when it is
    not the quality baseline (a result with one baseline per batch size)."""
    speedup: float | None
    speedup_interval: Span | None
    quality: Quality | None
    limit: Limit | None
    anomaly: bool
    memory_ratio: float | None
    controls: tuple[Control, ...] = field(default=())

    @property
    def memory_saving(self) -> float | None:
        """How many times less memory than the baseline (``1 / memory_ratio``)."""
        if self.memory_ratio is None or self.memory_ratio <= 0:
            return None
        return 1 / self.memory_ratio


def _rows(result: Result) -> dict[str, Mapping[str, Any]]:
    return {row["id"]: row for row in result["rows"]}


def quality_metric(result: Result) -> tuple[str, Better] | None:
    """The headline's quality metric and its better direction, if the result measured it."""
    head = result["headline"] or {}
    metric = head.get("quality_metric")
    meta = result["metrics"].get(metric) if metric else None
    if not meta:
        return None
    return metric, meta["better"]


def baseline_row(result: Result) -> Mapping[str, Any] | None:
    """The baseline the quality ratios divide by: the first baseline row that measured the
    headline's quality metric, else the first baseline row."""
    found = quality_metric(result)
    baselines = [row for row in result["rows"] if row["role"] == "baseline"]
    if found is not None:
        for row in baselines:
            if finite(row["values"].get(found[0])):
                return row
    return baselines[0] if baselines else None


def row_quality(result: Result, row: Mapping[str, Any]) -> Quality | None:
    """The paired quality ratio of ``row`` to the baseline over the noise seeds (the headline's
    own ratio for the headline row when seeds are missing)."""
    found, base = quality_metric(result), baseline_row(result)
    if found is None or base is None:
        return None
    metric, better = found
    head = result["headline"] or {}
    mine, theirs = row.get("seeds", {}).get(metric), base.get("seeds", {}).get(metric)
    if mine and theirs and len(mine) == len(theirs):
        from reference.harness.stats import paired_ratio

        try:
            summary = paired_ratio(mine, theirs)
        except ValueError:
            return None
        return Quality(metric, better, summary.value, summary.interval)
    value = finite(head.get("quality_ratio"))
    if row["id"] == head.get("row") and value is not None:
        return Quality(metric, better, value, span_of(head.get("quality_interval")))
    return None


def candidates(result: Result) -> list[Mapping[str, Any]]:
    """The settings of the headline's method with a speedup and a quality ratio."""
    head = result["headline"] or {}
    rows = _rows(result)
    chosen = rows.get(head.get("row", ""))
    if chosen is None:
        return []
    method = chosen["config"].get("method")
    return [
        row
        for row in result["rows"]
        if row["role"] == "technique"
        and row["config"].get("method") == method
        and finite(row["values"].get("speedup")) is not None
        and row_quality(result, row) is not None
    ]


def speed_baseline(result: Result, row_id: str) -> Mapping[str, Any] | None:
    """The baseline row an aim of ``row_id`` compares it with, if one does."""
    rows = _rows(result)
    for aim in result["aims"]:
        against = rows.get(aim.get("against") or "")
        if aim.get("row") == row_id and against is not None and against["role"] == "baseline":
            return against
    return None


def controls_of(result: Result, row_id: str) -> tuple[Control, ...]:
    """The aims that compare row ``row_id`` with a row in the control role."""
    rows = _rows(result)
    found = []
    for aim in result["aims"]:
        against = rows.get(aim.get("against") or "")
        if aim.get("row") == row_id and against is not None and against["role"] == "control":
            found.append(Control(aim, against))
    return tuple(found)


def pick(slug: str, result: Result, budget: float = BUDGETS[0]) -> Pick | None:
    """The setting the pages show for ``result`` by the rule of the module docstring (``None``
    when the result has no headline)."""
    head = result["headline"]
    if not head:
        return None
    rows = _rows(result)
    inside = []
    for row in candidates(result):
        quality = row_quality(result, row)
        if quality is not None and quality.within(budget):
            inside.append(row)
    fastest = max(inside, key=lambda r: finite(r["values"]["speedup"]) or 0.0, default=None)
    row = fastest if fastest is not None else rows.get(head["row"])
    if row is None:
        return None
    own = row["id"] == head["row"]
    if own:
        speedup, span = finite(head["speedup"]), span_of(head["speedup_interval"])
    else:
        speedup = finite(row["values"].get("speedup"))
        span = span_of(row.get("intervals", {}).get("speedup"))
    return Pick(
        slug=slug,
        row=row,
        baseline=baseline_row(result),
        rule="budget" if fastest is not None else "headline",
        speed_baseline=speed_baseline(result, row["id"]),
        speedup=speedup,
        speedup_interval=span,
        quality=row_quality(result, row),
        limit=result_limit(result) if own else None,
        anomaly=is_anomaly(result) if own else False,
        memory_ratio=finite(head.get("memory_ratio")) if own else None,
        controls=controls_of(result, row["id"]),
    )


def control_verdict(p: Pick) -> Literal["yes", "no", "inconclusive", "none"]:
    """What the picked setting's control aims say together (``none``: no such aim)."""
    from glossary.site.results import aims_verdict

    states = [c.aim["state"] for c in p.controls]
    return aims_verdict(states) if states else "none"


Reason = Literal["slower", "no-faster", "quality", "quality-unsettled", "control", "memory"]


def verdict(p: Pick, goal: str, budgets: tuple[float, ...] = BUDGETS) -> tuple[Call, list[Reason]]:
    """Whether the guide recommends the picked setting for ``goal``, and why not.

    For ``less-memory``: use when it saves memory (a memory ratio below 1) with its quality
    ratio (if measured) within the first budget; avoid when it uses more memory or its whole
    quality interval is outside the last budget. For ``training``: use when its quality ratio is
    within the first budget. For the speed goals: use when the whole speedup interval is above
    1, the quality ratio (if measured) is within the first budget and no matched-cost control
    beat it; avoid when the whole speedup interval is below 1, the whole quality interval is
    outside the last budget, or every control aim was missed; unsettled otherwise.
    """
    reasons: list[Reason] = []
    if goal == "less-memory":
        if p.memory_ratio is None or p.memory_ratio >= 1:
            return ("unsettled" if p.memory_ratio is None else "avoid"), ["memory"]
        if p.quality is None or p.quality.within(budgets[0]):
            return "use", []
        if p.quality.clearly_outside(budgets[-1]):
            return "avoid", ["quality"]
        return "unsettled", ["quality-unsettled"]
    if goal == "training":
        if p.quality is None:
            return "unsettled", ["quality-unsettled"]
        if p.quality.within(budgets[0]):
            return "use", []
        return "avoid" if p.quality.clearly_outside(budgets[-1]) else "unsettled", ["quality"]
    span = p.speedup_interval
    avoid = False
    if span is not None and span[1] < 1:
        reasons.append("slower")
        avoid = True
    elif span is None or span[0] <= 1:
        reasons.append("no-faster")
    if p.quality is not None and not p.quality.within(budgets[0]):
        avoid = avoid or p.quality.clearly_outside(budgets[-1])
        reasons.append("quality" if p.quality.clearly_outside(budgets[-1]) else "quality-unsettled")
    if control_verdict(p) == "no":
        reasons.append("control")
        avoid = True
    if avoid:
        return "avoid", reasons
    return ("use", []) if not reasons else ("unsettled", reasons)
