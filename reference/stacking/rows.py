"""From a `Study` to a result: rows, the matrices, the frontier, the headline, aims and notes.

Every number here was measured by `reference.stacking.study`; this module only arranges it and
attaches intervals: speedups by the paired bootstrap over rounds, quality ratios by the t
interval over paired seeds, interaction factors by `reference.stacking.stats.speedup_product`.
"""

from __future__ import annotations

import math
from typing import Any

from reference.compatibility import verdict

from .elements import ELEMENTS
from .stats import Term, pareto_front, speedup_product
from .study import Configuration, Study

BUDGETS = (1.1, 1.25)
"""The quality budgets the site answers for: FDD within 10% and within 25% of the baseline's."""


def speedup_of(study: Study, cid: str) -> tuple[float, tuple[float, float]]:
    lat = study.latency[cid]
    return float(lat.speedup[cid]), tuple(lat.speedup_interval(cid))  # type: ignore[return-value]


def interaction(study: Study, c: Configuration) -> tuple[float, tuple[float, float]]:
    """(2) of `reference.stacking.stats`: the stack's speedup over the product of its members'."""
    terms = [Term(study.latency[c.id], c.id, "base")]
    terms += [Term(study.latency[m], m, "base", -1) for m in c.members]
    return speedup_product(terms)


def nearest_control(study: Study, c: Configuration) -> str:
    """The DDIM-k control whose measured speedup is closest (in log) to ``c``'s."""
    controls = [k for k, x in study.configs.items() if x.origin == "control"]
    s = study.speedup(c.id)
    return min(controls, key=lambda k: abs(math.log(study.speedup(k) / s)))


def control_ratio(study: Study, c: Configuration, ctrl: str) -> tuple[float, tuple[float, float]]:
    """``latency(control) / latency(c)``: 1 = the control costs the same."""
    return speedup_product(
        [Term(study.latency[c.id], c.id, "base"), Term(study.latency[ctrl], ctrl, "base", -1)]
    )


def _config(c: Configuration, ctrl: str | None) -> dict[str, Any]:
    if c.origin == "base":
        return {"method": "ddim", "steps": c.steps}
    if c.origin == "control":
        return {"method": "ddim-matched", "steps": c.steps}
    if c.origin == "variant":
        return {"method": "variant", "element": c.members[0], "steps": c.steps}
    out: dict[str, Any] = {"method": c.origin, "members": list(c.members), "size": len(c.members)}
    if ctrl is not None:
        out["control"] = ctrl
    if c.quality_of is not None:
        out["quality_of"] = c.quality_of
    return out


def row(study: Study, c: Configuration) -> Any:
    from reference.harness import Row

    values, intervals, seeds = study.table.row_fields(c.id)
    lat = study.latency[c.id]
    values["latency_ms"] = lat.median_ms(c.id)
    spread = {"latency_ms": lat.iqr_ms(c.id)}
    values["speedup"], intervals["speedup"] = speedup_of(study, c.id)
    q = study.table.ratio(c.id, "base", "fd_digits")
    values["fd_ratio"], intervals["fd_ratio"] = q.value, q.interval
    ctrl = None
    if len(c.members) >= 2:
        values["interaction"], intervals["interaction"] = interaction(study, c)
        ctrl = nearest_control(study, c)
        values["control_latency_ratio"], intervals["control_latency_ratio"] = control_ratio(
            study, c, ctrl
        )
    if c.max_abs is not None:
        values["max_abs_vs_parent"] = c.max_abs
    role = {"base": "baseline", "control": "control"}.get(c.origin, "technique")
    return Row(c.id, _config(c, ctrl), role, values, intervals, spread, seeds)  # type: ignore[arg-type]


def matrices(study: Study, rows: dict[str, Any]) -> dict[str, Any]:
    """The N x N compatibility, reason and interaction matrices over the study's elements."""
    ids = list(study.cfg.elements)
    out: dict[str, list[list[Any]]] = {
        k: [[None] * len(ids) for _ in ids]
        for k in ("compatible", "reasons", "interaction", "interaction_lo", "interaction_hi")
    }
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if i == j:
                continue
            v = verdict(ELEMENTS[a].slug, ELEMENTS[b].slug)
            out["compatible"][i][j], out["reasons"][i][j] = v.compatible, v.reason
            pair = next(
                (r for r in rows.values() if sorted(r.config.get("members", [])) == sorted((a, b))),
                None,
            )
            if pair is not None and "interaction" in pair.values:
                lo, hi = pair.intervals["interaction"]
                out["interaction"][i][j] = pair.values["interaction"]
                out["interaction_lo"][i][j], out["interaction_hi"][i][j] = lo, hi
    return out


def frontier(rows: dict[str, Any]) -> list[str]:
    """The Pareto frontier over every measured configuration (latency ratio, FDD ratio)."""
    pts = {
        k: (1.0 / r.values["speedup"], r.values["fd_ratio"])
        for k, r in rows.items()
        if r.role in ("baseline", "technique", "control")
    }
    return pareto_front(pts)


def fastest_within(rows: dict[str, Any], budget: float, min_size: int = 2) -> str | None:
    """The fastest row with at least ``min_size`` members whose FDD ratio is within ``budget``."""
    fits = [
        k
        for k, r in rows.items()
        if r.config.get("size", 0) >= min_size and r.values["fd_ratio"] <= budget
    ]
    return max(fits, key=lambda k: rows[k].values["speedup"]) if fits else None
