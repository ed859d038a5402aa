"""The figures of the feature caching benchmark (matplotlib's object API, Agg canvas), drawn from
the measured U-Net rows: means over the paired seeds (speedups over the timing rounds) with their
95% intervals."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from reference.harness.compare import FIDELITY

from .config import BASELINE, Config
from .deepcache import speedup_limit


def _bars(ax: Any, pts: list[tuple[float, float, tuple[float, float]]], **kw: Any) -> None:
    pts = sorted(pts)
    err = [[p[1] - p[2][0] for p in pts], [p[2][1] - p[1] for p in pts]]
    ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=err, fmt="o-", capsize=3, **kw)


def _speed_panel(m: Any, cfg: Config, f: float, ax: Any) -> None:
    import numpy as np

    lat = m.latency
    pts = [(1.0, 1.0, (1.0, 1.0))]
    pts += [(float(n), lat.speedup_over(f"dc{n}", BASELINE), lat.speedup_interval(f"dc{n}"))
            for n in cfg.intervals]  # fmt: skip
    grid = np.linspace(1, max(cfg.intervals) + 1, 100)
    ax.plot(grid, [speedup_limit(f, float(n)) for n in grid], "--", color="#8c8c8c")
    ax.annotate(f"FLOP estimate 1/(1 - f(1 - 1/N)), f = {f:.2f}", (1.05, 1.02), fontsize=8)
    _bars(ax, pts, color="#dd8452", label="measured (95% interval)")
    ax.set_xlabel("cache interval N")
    ax.set_ylabel("speedup vs DDIM-50 (latency)")


def _cost_panel(m: Any, cfg: Config, ax: Any, metric: str, ylabel: str) -> None:
    for label, ids in (
        ("DeepCache", [f"dc{n}" for n in cfg.intervals]),
        ("DDIM, same FLOPs", [f"ddim-dc{n}" for n in cfg.intervals]),
    ):
        pts = []
        for rid in [*ids, BASELINE]:
            s = m.table.summary(rid, metric)
            pts.append((m.table.summary(rid, "full_steps").value, s.value, s.interval))
        _bars(ax, pts, label=label)
    ax.set_xlabel("full U-Net passes")
    ax.set_ylabel(ylabel)


def plot_speed_and_fidelity(m: Any, cfg: Config, f: float, path: Path) -> Path:
    """Three panels: the measured speedup per interval with its FLOP estimate; the distance to
    the converged solution and the held-out FDD against the full passes, DeepCache against DDIM
    at the same FLOPs."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13.5, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2, ax3 = fig.subplots(1, 3)
    _speed_panel(m, cfg, f, ax1)
    _cost_panel(m, cfg, ax2, FIDELITY, "RMS distance to the solution (log scale)")
    ax2.set_yscale("log")
    _cost_panel(m, cfg, ax3, "fd_digits", "FDD, held-out digits (lower is better)")
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def save_samples(m: Any, rows: Sequence[str], path: Path) -> Path:
    """Ten samples (digits 0-9) of the first seed per row of ``rows``, top to bottom."""
    from reference.harness import save_grid

    return save_grid(torch.cat([m.first[rid][:10] for rid in rows]), path, nrow=10)
