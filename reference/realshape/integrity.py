"""The real-shape study's own figures, recomputed from its result (``glossary bench --check``).

Each technique row's speedup is the ratio of its two medians, its FLOP estimate the ratio of
GFLOPs and its efficiency their quotient (`reference.realshape.bench`, equations (1)-(3));
`check` recomputes them, so a hand-set speedup or efficiency is named in one line. The harness
(`reference.harness.integrity.study_check`) finds this module by the study's package name.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from reference.harness.integrity import Audit


def check(data: Mapping[str, Any], audit: Audit) -> None:
    """Each technique row's speedup is the ratio of its two medians (``baseline_ms`` /
    ``latency_ms``, `reference.realshape.bench` (1)), its FLOP estimate the ratio of its
    model's baseline GFLOPs to its own (2), its efficiency their quotient (3); each baseline
    row's latency is the median of the baseline medians of its model's comparisons."""
    rows = data["rows"]
    base = {r["config"]["model"]: r for r in rows if r["config"]["method"] == "baseline"}
    for r in rows:
        v, model, where = r["values"], r["config"]["model"], f"rows[{r['id']}].values"
        if r["config"]["method"] == "baseline":
            medians = [
                x["values"]["baseline_ms"]
                for x in rows
                if x["config"]["model"] == model and x["config"]["method"] != "baseline"
            ]
            audit.agree(f"{where}.latency_ms", v["latency_ms"], statistics.median(medians))
            continue
        speedup = v["baseline_ms"] / v["latency_ms"]  # (1)
        audit.agree(f"{where}.speedup", v["speedup"], speedup)
        estimate = base[model]["values"]["gflops"] / v["gflops"]  # (2)
        audit.agree(f"{where}.flop_speedup", v["flop_speedup"], estimate)
        audit.agree(f"{where}.efficiency", v["efficiency"], speedup / estimate)  # (3)
