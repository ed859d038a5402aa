"""The two figures of the benchmark: memory and time per policy, and the chain's sqrt(n) law."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reference.harness.results import Row

from .measure import ChainCurves


def unet_figure(rows: Sequence[Row], path: Path) -> Path:
    """Two panels: retained and peak activation MB per policy; step time vs baseline."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 0.5 * len(rows) + 1.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, sharey=True, width_ratios=[2, 1])
    y = np.arange(len(rows))
    saved = [r.values["activation_mb"] for r in rows]
    peak = [r.values["peak_activation_mb"] for r in rows]
    left.barh(y - 0.2, saved, height=0.4, color="#4c72b0", label="retained after forward")
    left.barh(y + 0.2, peak, height=0.4, color="#dd8452", label="peak over the step")
    left.set_yticks(y, labels=[r.id for r in rows])
    left.invert_yaxis()
    left.set_xlabel("activation memory (MB)")
    left.legend(loc="lower right", fontsize=8)
    left.grid(axis="x", alpha=0.3)
    # the step-time ratio is the inverse of the row's speed against the baseline (below 1)
    right.barh(y, [1 / r.values["speedup"] for r in rows], color="#8c8c8c")
    right.axvline(1.0, color="black", linewidth=0.8)
    right.axvline(4 / 3, color="#c44e52", linestyle="--", linewidth=1, label="+1 forward (4/3)")
    right.set_xlabel("step time / baseline")
    right.legend(loc="lower right", fontsize=8)
    right.grid(axis="x", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def chain_figure(curves: ChainCurves, path: Path) -> Path:
    """Retained (solid) and peak (dashed) activation memory of the chain against ``n``."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import ScalarFormatter

    fig = Figure(figsize=(6.4, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    colors = dict(zip(curves.saved, ("#4c72b0", "#8c8c8c", "#dd8452"), strict=False))
    for label, color in colors.items():
        ax.plot(curves.ns, curves.saved[label], "o-", color=color, label=f"{label}: retained")
        ax.plot(curves.ns, curves.peak[label], "s--", color=color, label=f"{label}: peak")
    n = np.array(curves.ns, dtype=float)
    ax.plot(n, 2 * np.sqrt(n), ":", color="black", linewidth=1, label="2 sqrt(n)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("blocks n")
    ax.set_ylabel("activation memory (units of one block input)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
