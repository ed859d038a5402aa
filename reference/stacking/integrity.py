"""The stacking study's own figures, recomputed from its result (``glossary bench --check``).

Idea
----
A stacking result holds more than rows: the configurations its settings enumerate, the
interaction matrices of every pair, the stacks of each greedy stage, the Pareto frontier and
its summary aims. `check` recomputes each of them from the raw rows and settings, with the same
functions the study runs (`reference.stacking.elements.ordered`, ``row_id``, the compatibility
table, `reference.stacking.stats.pareto_front`), so a deleted row, a hand-set matrix entry or a
frontier that its rows do not support is named in one line.

The harness (`reference.harness.integrity.study_check`) finds this module by the study's package
name and calls ``check(data, audit)`` after its generic checks; the study depends on the
harness, never the other way round.

Pitfalls
--------
* `phase1_ids` applies `reference.stacking.study.phase1_configs`' rules without building any
  pipeline (no torch); a test holds the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Any

from reference.harness.integrity import Audit, paired_ratio


def _compatible(members: Iterable[str]) -> bool:
    """Every pair of ``members`` stacks (`reference.compatibility.verdict` of their slugs)."""
    from reference.compatibility import verdict
    from reference.stacking.elements import ELEMENTS

    ids = list(members)
    return all(
        verdict(ELEMENTS[a].slug, ELEMENTS[b].slug).compatible for a, b in combinations(ids, 2)
    )


def phase1_ids(settings: Mapping[str, Any]) -> list[str]:
    """The ids `reference.stacking.study.phase1_configs` builds for ``settings``: the
    baseline, each element alone, the step variants, every compatible pair, the DDIM-k controls.

    ``phase1_configs`` builds each configuration's pipeline (torch); this list applies its
    rules with the same functions (`reference.stacking.elements.ordered`, ``row_id`` and the
    compatibility table), and a test holds the two equal.
    """
    from reference.stacking.elements import ordered, row_id

    elements = list(settings["elements"])
    out = ["base", *(row_id((e,)) for e in elements)]
    out += [f"{e}{steps}" for e, steps in settings["variants"]]
    out += [row_id(p) for p in combinations(ordered(elements), 2) if _compatible(p)]
    return out + [f"ddim-{k}" for k in settings["control_steps"]]


def greedy_ids(settings: Mapping[str, Any]) -> tuple[list[list[str]], list[str]]:
    """The candidates of each stage of `reference.stacking.study.run_greedy` along the
    recorded greedy path, and the problems of that path (a pick that was not a candidate)."""
    from reference.stacking.elements import ordered, row_id

    stages: list[list[str]] = []
    problems: list[str] = []
    anchor: tuple[str, ...] = ()
    greedy = list(settings["greedy"])
    for stage in range(settings["max_stages"]):
        cands = [ordered((*anchor, e)) for e in settings["elements"] if e not in anchor]
        ids = [row_id(c) for c in cands if _compatible(c)]
        if not ids:
            break
        stages.append(ids)
        if stage >= len(greedy):
            break
        if greedy[stage] not in ids:
            problems.append(f"settings.greedy[{stage}]: {greedy[stage]!r} is not a candidate")
            break
        anchor = tuple(greedy[stage].split("."))
    left = settings.get("greedy_left")
    if left is not None and stages and left not in stages[-1]:
        problems.append(f"settings.greedy_left: {left!r} is not a candidate of the last stage")
    return stages, problems


def configurations(settings: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Every configuration the study measures for its recorded ``settings`` (phase 1, then the
    greedy stages' stacks), and the problems of the recorded greedy path."""
    ids = phase1_ids(settings)
    stages, problems = greedy_ids(settings)
    for stage in stages:
        ids += [i for i in stage if i not in ids]
    return ids, problems


MATRICES = ("interaction", "interaction_lo", "interaction_hi")
STUDY_SETTINGS = {
    "elements": list,
    "variants": list,
    "control_steps": list,
    "max_stages": int,
    "budget": float,
    "greedy": list,
    "element_slugs": list,
    "element_levels": list,
    "single_speedup": list,
    "compatible": list,
    "reasons": list,
    "pareto": list,
    **{key: list for key in MATRICES},
}
"""The settings the stacking study records and its check reads (and their JSON types)."""


def _square(matrix: list[Any], n: int) -> bool:
    return len(matrix) == n and all(isinstance(r, list) and len(r) == n for r in matrix)


def _settings_problems(settings: Mapping[str, Any]) -> list[str]:
    out = []
    for key, kind in STUDY_SETTINGS.items():
        value = settings.get(key)
        ok = isinstance(value, int | float) if kind is float else isinstance(value, kind)
        if not ok or isinstance(value, bool):
            out.append(f"settings.{key}: missing or not a {kind.__name__} (the study records it)")
    n = len(settings.get("elements") or [])
    for key in ("element_slugs", "element_levels", "single_speedup"):
        if isinstance(settings.get(key), list) and len(settings[key]) != n:
            out.append(f"settings.{key}: not one entry per element")
    for key in ("compatible", "reasons", *MATRICES):
        m = settings.get(key)
        if isinstance(m, list) and not _square(m, n):
            out.append(f"settings.{key}: not a {n} x {n} matrix")
    return out


def _check_configurations(data: Mapping[str, Any], audit: Audit) -> bool:
    from reference.stacking.elements import ELEMENTS

    settings = data["settings"]
    problems = _settings_problems(settings)
    if problems:
        audit.problems += problems
        return False
    unknown = [e for e in settings["elements"] if e not in ELEMENTS]
    if unknown:
        audit.problems.append(f"settings.elements: unknown element {unknown[0]!r}")
        return False
    expected, problems = configurations(settings)
    audit.problems += problems
    recorded = [r["id"] for r in data["rows"] if r["role"] != "reference"]
    audit.figures += 1
    if sorted(recorded) != sorted(expected):
        missing = [i for i in expected if i not in recorded]
        extra = [i for i in recorded if i not in expected]
        what = "; ".join(
            part
            for part in (
                "missing " + ", ".join(map(repr, missing)) if missing else "",
                "not enumerated " + ", ".join(map(repr, extra)) if extra else "",
            )
            if part
        )
        audit.problems.append(
            f"rows: recorded {len(recorded)} configurations, recomputed {len(expected)} ({what})"
        )
        return False
    return True


def _speed(rows: Mapping[str, Any], k: str) -> float:
    return float(rows[k]["values"]["speedup"])


def _check_matrices(data: Mapping[str, Any], rows: Mapping[str, Any], audit: Audit) -> None:
    from reference.compatibility import verdict
    from reference.stacking.elements import ELEMENTS

    s = data["settings"]
    ids = list(s["elements"])
    audit.agree("settings.element_slugs", s["element_slugs"], [ELEMENTS[e].slug for e in ids])
    audit.agree("settings.element_levels", s["element_levels"], [ELEMENTS[e].level for e in ids])
    singles = [_speed(rows, e) for e in ids]
    audit.agree("settings.single_speedup", s["single_speedup"], singles)
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if i == j:
                continue
            v = verdict(ELEMENTS[a].slug, ELEMENTS[b].slug)
            audit.agree(f"settings.compatible[{i}][{j}]", s["compatible"][i][j], v.compatible)
            audit.agree(f"settings.reasons[{i}][{j}]", s["reasons"][i][j], v.reason)
            pair = next(
                (r for r in rows.values() if sorted(r["config"].get("members", [])) == [a, b]),
                None,
            )
            pair = pair or next(
                (r for r in rows.values() if sorted(r["config"].get("members", [])) == [b, a]),
                None,
            )
            if pair is None or "interaction" not in pair["values"]:
                recomputed: list[Any] = [None, None, None]
            else:
                lo, hi = pair["intervals"]["interaction"]
                recomputed = [pair["values"]["interaction"], lo, hi]
            for key, want in zip(MATRICES, recomputed, strict=True):
                audit.agree(f"settings.{key}[{i}][{j}]", s[key][i][j], want)


def _check_stack_rows(data: Mapping[str, Any], rows: Mapping[str, Any], audit: Audit) -> None:
    index = {r["id"]: i for i, r in enumerate(data["rows"])}
    controls = [k for k, r in rows.items() if r["role"] == "control"]
    for k, r in rows.items():
        members = r["config"].get("members", [])
        if len(members) < 2 or not controls:
            continue
        where = f"rows[{index[k]}]"
        s = _speed(rows, k)
        factor = math.prod([s] + [_speed(rows, m) ** -1 for m in members])
        audit.agree(f"{where}.values.interaction", r["values"].get("interaction"), factor)
        ctrl = min(controls, key=lambda c: abs(math.log(_speed(rows, c) / s)))
        audit.agree(f"{where}.config.control", r["config"].get("control"), ctrl)
        ratio = math.prod([s, _speed(rows, ctrl) ** -1])
        got = r["values"].get("control_latency_ratio")
        audit.agree(f"{where}.values.control_latency_ratio", got, ratio)
    base = rows.get("base")
    for k, r in rows.items():
        fd, ref = r.get("seeds", {}).get("fd_digits"), (base or {}).get("seeds", {})
        if fd is None or "fd_digits" not in ref or "fd_ratio" not in r["values"]:
            continue
        value, span = paired_ratio(fd, ref["fd_digits"])
        audit.agree(f"rows[{index[k]}].values.fd_ratio", r["values"]["fd_ratio"], value)
        if span is not None and "fd_ratio" in r.get("intervals", {}):
            audit.agree(f"rows[{index[k]}].intervals.fd_ratio", r["intervals"]["fd_ratio"], span)


def _check_stack_summary(data: Mapping[str, Any], rows: Mapping[str, Any], audit: Audit) -> None:
    from reference.stacking.stats import pareto_front

    s = data["settings"]
    points = {
        k: (1.0 / _speed(rows, k), float(r["values"]["fd_ratio"]))
        for k, r in rows.items()
        if r["role"] in ("baseline", "technique", "control")
    }
    audit.agree("settings.pareto", s["pareto"], pareto_front(points))
    budget = s["budget"]
    fits = [
        k
        for k, r in rows.items()
        if r["config"].get("size", 0) >= 2 and r["values"]["fd_ratio"] <= budget
    ]
    head = max(fits, key=lambda k: _speed(rows, k)) if fits else None
    recorded = data["headline"]["row"] if data["headline"] else None
    if not audit.agree("headline.row", recorded, head) or head is None:
        return
    limit = 1.0
    for m in rows[head]["config"]["members"]:
        limit *= _speed(rows, m)
    audit.agree("headline.speedup_limit", data["headline"]["speedup_limit"], limit)
    want = sorted(
        (k, r["config"]["control"]) for k, r in rows.items() if r["config"].get("control")
    )
    have = sorted((a["row"], a["against"]) for a in data["aims"] if a["id"] == "beats-control")
    audit.agree("aims (beats-control)", have, want)
    singles = [k for k in rows if rows[k]["config"].get("size") == 1]
    single = max(
        (k for k in singles if rows[k]["values"]["fd_ratio"] <= budget),
        key=lambda k: _speed(rows, k),
        default=None,
    )
    best = [a["against"] for a in data["aims"] if a["id"] == "beats-best-single"]
    audit.agree("aims (beats-best-single).against", best, [single] if single else [])


def check(data: Mapping[str, Any], audit: Audit) -> None:
    """Recompute the study's configurations, matrices, stack rows and summary (see above)."""
    if not _check_configurations(data, audit):
        return
    rows = {r["id"]: r for r in data["rows"] if r["role"] != "reference"}
    _check_matrices(data, rows, audit)
    _check_stack_rows(data, rows, audit)
    _check_stack_summary(data, rows, audit)
