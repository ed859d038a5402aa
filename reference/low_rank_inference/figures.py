"""The two figures of the low-rank benchmark, as English PNGs: output error against rank for two
example layers, and fidelity and measured speedups against the multiply-add budget.

The site draws both again in each reader's language from the result itself: the curves from the
``break-even-error`` note (``ranks``, ``series``, ``errors``), the budget panels from the rows
(`glossary.site.benchfigures`). These PNGs are what a reader of the files sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

LABEL = {"svd": "plain SVD", "asvd": "activation-aware SVD"}
LAYER = {"q": "attn1.to_q", "ff": "ff.net.0.proj"}


def error_vs_rank(curves: dict[str, Any], path: Path) -> Path:
    """Relative output error on calibration inputs against rank, both methods, log scale."""
    from reference.harness import curve_plot

    series = {}
    for name, errors in zip(curves["series"], curves["errors"], strict=True):
        layer, method = name.split("-")
        series[f"{LAYER[layer]}: {LABEL[method]}"] = errors
    return curve_plot(
        curves["ranks"],
        series,
        path,
        xlabel="rank r",
        ylabel="relative output error on calibration inputs",
        title="DiT block 1: output error against rank",
        logy=True,
    )


def budget_figure(rows: Sequence[Any], cfg: Any, path: Path) -> Path:
    """Per method against the budget: the distance to the solution relative to the dense DiT's,
    the factorised layers' speedup and the whole sampling's speedup."""
    from reference.harness import curve_plot

    values = {r.id: r.values for r in rows}
    dense = values["dense"]["rms_to_solution"]
    budgets = sorted(cfg.budgets)
    series: dict[str, list[float]] = {}
    for m in cfg.methods:
        keys = [f"{m}-{b}" for b in budgets]
        series[f"{LABEL[m]}: RMS to solution / dense"] = [
            values[k]["rms_to_solution"] / dense for k in keys
        ]
        series[f"{LABEL[m]}: layers' speedup"] = [values[f"layers-{k}"]["speedup"] for k in keys]
        series[f"{LABEL[m]}: whole-sampling speedup"] = [values[k]["speedup"] for k in keys]
    return curve_plot(
        budgets,
        series,
        path,
        xlabel="budget: fraction of the factorized layers' multiply-adds kept",
        ylabel="ratio",
        title="Low-rank DiT: fidelity and measured speedup against budget",
        logy=True,
        hlines={"1.0": 1.0},
    )
