"""The result-file schema (version 2): JSON Schema for the shape, Python for the cross-references.

A result file ``reference/results/<slug>.json`` is language-neutral: it holds identifiers,
parameters and numbers, never a sentence. Metric ids, configuration ids with their parameters
(``{"method": "deepcache", "interval": 3}``), role ids, aims as structured comparisons and notes
as message ids with parameters; the CLI and the site render the words from the gettext catalogs
(`glossary.resulttext`).

The shape is ``result.schema.json`` beside this module (JSON Schema 2020-12, checked with the
``jsonschema`` package); `validate_result` adds what a JSON Schema cannot say: row ids are
unique and every value names a declared metric, the headline names a row, each aim's state follows
from its numbers (`aim_state`), and a speedup above its analytic bound carries the anomaly
flag (`expected_anomalies`). The site's loader calls the same function, so a file that the
harness would refuse is never rendered.

This module imports only the standard library and ``jsonschema``: the site and the ``glossary``
command use it without torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

SCHEMA_VERSION = 3
SCHEMA_PATH = Path(__file__).with_name("result.schema.json")

AimState = Literal["met", "missed", "inconclusive"]
ROLES = ("baseline", "technique", "control", "reference")
ANOMALY_ABOVE_LIMIT = "speedup-above-limit"


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of a result file (parsed once)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _path(parts: Sequence[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "result"


def _holds(value: float, comparison: str, target: float) -> bool:
    return {
        ">=": value >= target,
        ">": value > target,
        "<=": value <= target,
        "<": value < target,
    }[comparison]


def aim_state(
    comparison: str, target: float, measured: float | None, interval: Sequence[float] | None
) -> AimState:
    """Met, missed or inconclusive, judged on the interval when there is one.

    With a 95% interval ``[lo, hi]``: *met* when the whole interval lies on the aim's side of the
    target, *missed* when the whole interval lies on the other side, *inconclusive* otherwise.
    Without an interval the point value decides (met or missed); with nothing measured the aim
    is inconclusive.
    """
    if interval is not None:
        lo, hi = interval
        if _holds(lo, comparison, target) and _holds(hi, comparison, target):
            return "met"
        if not _holds(lo, comparison, target) and not _holds(hi, comparison, target):
            return "missed"
        return "inconclusive"
    if measured is None:
        return "inconclusive"
    return "met" if _holds(measured, comparison, target) else "missed"


def expected_anomalies(headline: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The anomalies a headline must carry: a measured speedup above its analytic *bound*.

    An estimate (``limit_kind == "estimate"``) may be exceeded; a bound may not, so a value
    above it is measurement noise or a bug, flagged wherever it is shown.
    """
    if not headline:
        return []
    speedup, limit = headline.get("speedup"), headline.get("speedup_limit")
    if headline.get("limit_kind") != "bound" or speedup is None or limit is None:
        return []
    if speedup <= limit:
        return []
    return [
        {
            "id": ANOMALY_ABOVE_LIMIT,
            "params": {"row": headline["row"], "measured": speedup, "limit": limit},
        }
    ]


def _cross_checks(data: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    metrics = set(data["metrics"])
    ids: list[str] = []
    for i, row in enumerate(data["rows"]):
        ids.append(row["id"])
        for part in ("values", "intervals", "spread", "seeds"):
            for key in row.get(part, {}):
                if key not in metrics:
                    out.append(f"rows[{i}].{part}.{key}: not declared in metrics")
        for key, (lo, hi) in row.get("intervals", {}).items():
            if lo > hi:
                out.append(f"rows[{i}].intervals.{key}: lower end above upper end")
    duplicates = sorted({r for r in ids if ids.count(r) > 1})
    out += [f"rows: id {r!r} is used twice" for r in duplicates]
    roles = {row["role"] for row in data["rows"]}
    out += [f"rows: needs a {r!r} row" for r in ("baseline", "technique") if r not in roles]
    head = data["headline"]
    if head is not None:
        if head["row"] not in ids:
            out.append(f"headline.row: no row {head['row']!r}")
        if head["quality_metric"] is not None and head["quality_metric"] not in metrics:
            out.append("headline.quality_metric: not declared in metrics")
        if head["speedup_limit"] is not None and head["limit_kind"] is None:
            out.append("headline.limit_kind: say whether the limit is a bound or an estimate")
    for i, a in enumerate(data["aims"]):
        for part in ("row", "against"):
            if a[part] is not None and a[part] not in ids:
                out.append(f"aims[{i}].{part}: no row {a[part]!r}")
        state = aim_state(a["comparison"], a["target"], a["measured"], a["interval"])
        if a["state"] != state:
            out.append(f"aims[{i}].state: is {a['state']!r} but the numbers say {state!r}")
    want = expected_anomalies(head)
    have = [x for x in data["anomalies"] if x["id"] == ANOMALY_ABOVE_LIMIT]
    if want and not have:
        out.append("anomalies: the headline speedup is above its bound and is not flagged")
    if have and not want:
        out.append("anomalies: a speedup-above-limit flag without a speedup above its bound")
    return out


def validate_result(data: Any) -> list[str]:
    """Every problem of a result object, one line each (``[]``: valid)."""
    import jsonschema

    if isinstance(data, dict) and data.get("schema_version") != SCHEMA_VERSION:
        found = data.get("schema_version")
        return [f"schema_version: {found!r} is not {SCHEMA_VERSION}; rerun the benchmark"]
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    out = [f"{_path(e.absolute_path)}: {e.message}" for e in errors]
    if out:
        return out
    return _cross_checks(data)
