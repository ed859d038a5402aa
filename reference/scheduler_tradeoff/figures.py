"""The figures of the scheduler trade-off (matplotlib's object API, Agg canvas)."""

from __future__ import annotations

from pathlib import Path

import torch

from .schedulers import LABELS
from .sweep import Point


def plot_tradeoff(points: list[Point], path: Path, hlines: dict[str, float]) -> Path:
    """Two panels: FDD against NFE and against wall time (log x), one curve per scheduler."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_nfe, ax_time = fig.subplots(1, 2)
    for name in dict.fromkeys(p.scheduler for p in points):
        mine = [p for p in points if p.scheduler == name]
        fdd = [p.fd_digits for p in mine]
        ax_nfe.plot([p.nfe for p in mine], fdd, marker="o", label=LABELS[name])
        ax_time.plot([p.seconds for p in mine], fdd, marker="o", label=LABELS[name])
    for ax, xlabel in ((ax_nfe, "NFE (denoiser evaluations)"), (ax_time, "wall time (s)")):
        for label, level in hlines.items():
            ax.axhline(level, linestyle="--", linewidth=1, color="#8c8c8c")
            ax.annotate(label, (0.01, level), xycoords=("axes fraction", "data"), fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("FDD (lower is better)")
        ax.grid(alpha=0.3, which="both")
    ax_nfe.legend()
    ax_nfe.set_title("Quality against NFE")
    ax_time.set_title("Quality against sampling time")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def save_sample_grid(points: list[Point], nfe: int, path: Path) -> Path:
    """Ten samples (digits 0-9) per scheduler at ``nfe``, one row per scheduler."""
    from reference.harness import save_grid

    rows = [p.samples[:10] for p in points if p.nfe == nfe]
    return save_grid(torch.cat(rows), path, nrow=10)
