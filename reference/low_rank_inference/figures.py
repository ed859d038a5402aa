"""The two figures of the low-rank benchmark: output error against rank for two example layers,
and quality and measured speedup against the multiply-add budget."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .factorize import break_even_rank, output_error_curve, spectrum
from .measure import CURVE_LAYERS, Variant

LABEL = {"svd": "plain SVD", "asvd": "activation-aware SVD"}


def error_vs_rank(dit: nn.Module, moments: dict[str, torch.Tensor], path: Path) -> None:
    """Relative output error on calibration inputs against rank (1..96), both methods."""
    from reference.harness import curve_plot

    series: dict[str, list[float]] = {}
    ranks = list(range(1, 97))
    for n in CURVE_LAYERS:
        layer = dit.get_submodule(n)
        short = n.split(".", 2)[2]
        for method, c in (("svd", None), ("asvd", moments[n])):
            errs = output_error_curve(layer, moments[n], spectrum(layer, c))
            series[f"{short}: {LABEL[method]}"] = errs[: len(ranks)]
    be = ", ".join(str(break_even_rank(dit.get_submodule(n))) for n in CURVE_LAYERS)
    curve_plot(
        ranks,
        series,
        path,
        xlabel="rank r",
        ylabel="relative output error on calibration inputs",
        title=f"DiT block 1: error against rank (break-even ranks {be})",
        logy=True,
    )


def budget_curves(variants: Sequence[Variant], cfg: Any, path: Path) -> None:
    """FDD ratio, layer speedup and whole-model speedup against the budget, per method."""
    from reference.harness import curve_plot

    dense_fd = variants[0].values["fd_digits"]
    budgets = sorted(cfg.budgets)
    series: dict[str, list[float]] = {}
    for m in cfg.methods:
        rows = {v.config["budget"]: v.values for v in variants if v.config["method"] == m}
        series[f"{LABEL[m]}: FDD / dense FDD"] = [rows[b]["fd_digits"] / dense_fd for b in budgets]
        series[f"{LABEL[m]}: layer speedup"] = [rows[b]["layers_speedup"] for b in budgets]
        series[f"{LABEL[m]}: whole-model speedup"] = [rows[b]["speedup"] for b in budgets]
    curve_plot(
        budgets,
        series,
        path,
        xlabel="budget: fraction of the factorised layers' multiply-adds kept",
        ylabel="ratio",
        title="Low-rank DiT: quality and measured speedup against budget",
        logy=True,
        hlines={"1.0": 1.0},
    )
