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

    def fd(key: str) -> tuple[float, list[float]]:
        m = study.quality.summary(key, "fd_digits")
        return m.value, [m.value - m.interval[0], m.interval[1] - m.value]

    for label, rs in groups.items():
        rs = sorted(rs, key=lambda r: r.nfe)
        pts = [fd(r.key) for r in rs]
        ax.errorbar(
            [r.nfe for r in rs],
            [p[0] for p in pts],
            yerr=[[p[1][0] for p in pts], [p[1][1] for p in pts]],
            marker="o",
            capsize=3,
            label=label,
        )
    for key, marker, label in (
        ("reuse", "x", "reuse last output"),
        ("taylor", "s", f"TaylorSeer formula, order {cfg.order}"),
        ("newton1", "^", "forecast, order 1 (linear)"),
    ):
        r = next(r for r in unet if r.key == key)
        value, err = fd(key)
        ax.errorbar([r.nfe], [value], yerr=[[err[0]], [err[1]]], fmt=marker, capsize=3, label=label)
    ax.set_xlabel("network evaluations")
    ax.set_ylabel("FDD, mean over seeds (lower is better)")
    ax.set_title(f"Teacher U-Net, {cfg.steps} DDIM steps, k={cfg.interval}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
