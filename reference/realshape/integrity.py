"""The real-shape study's own figures, recomputed from its result (``glossary bench --check``).

The harness recomputes every row's latency, spread, speedup (1) and its interval from the raw
rounds the row keeps (`reference.harness.integrity`). This module adds what only the study
defines (`reference.realshape.bench`): each timed row's baseline latency is its group baseline's,
its FLOP estimate (2) is the ratio of the baseline's GFLOPs to its own and its efficiency (3) their
quotient; a technique with a counterpart keeps the counterpart's latency, the ratio (4) and its
interval over the same rounds. A hand-set speedup, efficiency or ratio is named in one line. The
harness (`reference.harness.integrity.study_check`) finds this module by the study's package name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.harness.integrity import Audit, round_figures


def check(data: Mapping[str, Any], audit: Audit) -> None:
    """(2)-(4) of every timed row, from its group's baseline row and its counterpart's row."""
    rows = {r["id"]: r for r in data["rows"]}
    for r in data["rows"]:
        if r["role"] == "baseline":
            continue
        v, where = r["values"], f"rows[{r['id']}]"
        base = rows[r["rounds"]["against"]]
        audit.agree(f"{where}.values.baseline_ms", v["baseline_ms"], base["values"]["latency_ms"])
        estimate = base["values"]["gflops"] / v["gflops"]  # (2)
        audit.agree(f"{where}.values.flop_speedup", v["flop_speedup"], estimate)
        audit.agree(f"{where}.values.efficiency", v["efficiency"], v["speedup"] / estimate)  # (3)
        if "vs_counterpart" not in v:
            continue
        other = rows[_counterpart(data, r)]
        got = round_figures(r["rounds"]["latency_ms"], other["rounds"]["latency_ms"])  # (4)
        audit.agree(
            f"{where}.values.counterpart_ms", v["counterpart_ms"], other["values"]["latency_ms"]
        )
        audit.agree(f"{where}.values.vs_counterpart", v["vs_counterpart"], got["speedup"])
        audit.agree(
            f"{where}.intervals.vs_counterpart", r["intervals"]["vs_counterpart"], got["interval"]
        )


def _counterpart(data: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """The counterpart's row id: the ``against`` of the aim about ``row``."""
    return str(next(a["against"] for a in data["aims"] if a["row"] == row["id"]))
