"""The figures of the guidance study (matplotlib's object API, Agg canvas)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .study import Study


def plot_study(study: Study, cfg: Any, path: Path) -> Path:
    """Three panels: accuracy and FDD against the guidance scale, accuracy against NFE."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    res, k = study.results, cfg.steps
    fig = Figure(figsize=(11, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_acc, ax_fd, ax_nfe = fig.subplots(1, 3)
    for method, scales, label in (
        ("cg", cfg.cg_scales, "classifier guidance (s)"),
        ("cfg", cfg.cfg_scales, "classifier-free (w)"),
    ):
        ax_acc.plot(scales, [res[(method, s, k)]["accuracy"] for s in scales], "o-", label=label)
        ax_fd.plot(scales, [res[(method, s, k)]["fd_digits"] for s in scales], "o-", label=label)
    ax_fd.axhline(res[("uncond", 0.0, k)]["fd_digits"], ls="--", c="#8c8c8c", label="unguided")
    ax_acc.axhline(cfg.target_accuracy, ls="--", c="#8c8c8c")
    for ax, ylabel in ((ax_acc, "class accuracy (clean classifier)"), (ax_fd, "FDD")):
        ax.set_xlabel("guidance scale")
        ax.set_ylabel(ylabel)
    for method, scale, label in (
        ("cg", study.cg_scale, f"classifier guidance s={study.cg_scale:g}"),
        ("cfg", study.cfg_scale, f"classifier-free w={study.cfg_scale:g}"),
        ("cfg", 1.0, "conditional (w=1)"),
    ):
        curve = study.curve(method, scale, tuple(sorted(cfg.nfe_grid)))
        ax_nfe.plot(list(curve), list(curve.values()), "o-", label=label)
    ax_nfe.axhline(cfg.target_accuracy, ls="--", c="#8c8c8c")
    ax_nfe.set_xscale("log")
    ax_nfe.set_xticks(sorted(cfg.nfe_grid), [str(n) for n in sorted(cfg.nfe_grid)])
    ax_nfe.minorticks_off()
    ax_nfe.set_xlabel("NFE (DDIM steps)")
    ax_nfe.set_ylabel("class accuracy")
    for ax in (ax_acc, ax_fd, ax_nfe):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


GRID_ROWS = ("uncond", "cg", "cfg", "cond")
"""The rows of :func:`save_samples`, top to bottom."""


def save_samples(study: Study, cfg: Any, path: Path) -> Path:
    """Ten samples (targets 0-9) per row: unguided, classifier guidance at the headline scale,
    classifier-free guidance at its headline scale, conditional (w = 1)."""
    from reference.harness import save_grid

    k = cfg.steps
    keys = (("uncond", 0.0, k), ("cg", study.cg_scale, k), ("cfg", study.cfg_scale, k))
    keys += (("cfg", 1.0, k),)
    return save_grid(torch.cat([study.samples[key][:10] for key in keys]), path, nrow=10)
