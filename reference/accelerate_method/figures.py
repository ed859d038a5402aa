"""The figure of the forecasting benchmark (matplotlib's object API, Agg canvas)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .runs import Study


def plot_fdd_vs_nfe(study: Study, cfg: Any, path: Path) -> Path:
    """FDD against network evaluations: forecasting vs plain DDIM at the same NFE (U-Net)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    unet = [r for r in study.runs if not r.dit]
    groups = {
        "plain DDIM": [r for r in unet if r.key.startswith("ddim") or r.key == "base"],
        f"forecast, order {cfg.order} (Newton)": [
            r for r in unet if r.key.startswith("newton") and r.key != "newton1"
        ],
    }
    for label, rs in groups.items():
        rs = sorted(rs, key=lambda r: r.nfe)
        ax.plot([r.nfe for r in rs], [study.fdd[r.key] for r in rs], marker="o", label=label)
    for key, marker, label in (
        ("reuse", "x", "reuse last output"),
        ("taylor", "s", f"TaylorSeer formula, order {cfg.order}"),
        ("newton1", "^", "forecast, order 1 (linear)"),
    ):
        r = next(r for r in unet if r.key == key)
        ax.scatter([r.nfe], [study.fdd[key]], marker=marker, label=label, zorder=3)
    ax.set_xlabel("network evaluations")
    ax.set_ylabel("FDD (lower is better)")
    ax.set_title(f"Teacher U-Net, {cfg.steps} DDIM steps, k={cfg.interval}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
