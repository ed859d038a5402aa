"""The mixture-of-experts figure: each expert's share of a block's tokens while sampling.

The result keeps the same shares in its ``utilisation`` note (``shares``, one list per block), from
which the site draws this figure again in each reader's language; the PNG here stays English.
"""

from __future__ import annotations

from pathlib import Path


def utilisation_figure(path: Path, fractions: list[list[float]]) -> Path:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(7.0, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    layers, experts = len(fractions), len(fractions[0])
    width = 0.8 / layers
    for i, frac in enumerate(fractions):
        ax.bar(np.arange(experts) + i * width, frac, width, label=f"block {i}")
    ax.axhline(1 / experts, linestyle="--", color="#8c8c8c", linewidth=1)
    ax.annotate("uniform", (experts - 1, 1 / experts), fontsize=8, va="bottom")
    ax.set_xticks(np.arange(experts) + 0.4 - width / 2, [f"E{e}" for e in range(experts)])
    ax.set_ylabel("share of tokens (first choice)")
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
