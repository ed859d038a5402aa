"""The figures of the forecasting benchmark (matplotlib's object API, Agg canvas), drawn from the
measured U-Net rows: means over the paired seeds with their 95% t intervals."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from reference.harness.compare import FIDELITY

from .config import Config

MARKERS = (("reuse", "x", "reuse last output"), ("taylor", "s", "TaylorSeer formula"),
           ("newton1", "^", "forecast, order 1 (linear)"))  # fmt: skip


def _point(m: Any, rid: str, metric: str) -> tuple[float, float, list[float]]:
    """NFE, mean and the distances to the ends of the 95% interval of one row's ``metric``."""
    s = m.table.summary(rid, metric)
    nfe = m.table.summary(rid, "nfe").value
    return nfe, s.value, [s.value - s.interval[0], s.interval[1] - s.value]


def _panel(m: Any, cfg: Config, ax: Any, metric: str, ylabel: str) -> None:
    ids = [r.id for r in m.rows]
    lines = {
        "plain DDIM, fewer steps": [i for i in ids if i.startswith("ddim")],
        f"forecast, order {cfg.order} (Newton)": [i for i in ids if i.startswith("newton")
                                                  and i != "newton1"],
    }  # fmt: skip
    for label, rows in lines.items():
        pts = sorted(_point(m, rid, metric) for rid in rows)
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                    yerr=[[p[2][0] for p in pts], [p[2][1] for p in pts]],
                    marker="o", capsize=3, label=label)  # fmt: skip
    for rid, marker, label in MARKERS:
        nfe, value, err = _point(m, rid, metric)
        ax.errorbar([nfe], [value], yerr=[[err[0]], [err[1]]], fmt=marker, capsize=3, label=label)
    ax.set_xlabel("network evaluations")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def plot_fidelity_vs_nfe(m: Any, cfg: Config, path: Path) -> Path:
    """Two panels against the network evaluations (U-Net, clipped ODE): the distance to the
    converged solution (log scale) and the held-out FDD."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_rms, ax_fd = fig.subplots(1, 2)
    _panel(m, cfg, ax_rms, FIDELITY, "RMS distance to the solution (lower is better)")
    ax_rms.set_yscale("log")
    _panel(m, cfg, ax_fd, "fd_digits", "FDD, held-out digits (lower is better)")
    ax_rms.legend(fontsize=8)
    fig.suptitle(f"Teacher U-Net, 50 DDIM steps on the clipped ODE, k={cfg.interval}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def save_samples(m: Any, rows: Sequence[str], path: Path) -> Path:
    """Ten samples (digits 0-9) of the first seed per row of ``rows``, top to bottom."""
    from reference.harness import save_grid

    return save_grid(torch.cat([m.first[rid][:10] for rid in rows]), path, nrow=10)
