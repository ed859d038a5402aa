"""The figures of the guidance study (matplotlib's object API, Agg canvas)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .study import Study, table_key


def _mean_and_error(study: Study, key: tuple[str, float, int], metric: str) -> tuple[float, float]:
    """Mean over seeds and the half-width of its 95% t interval (symmetric)."""
    s = study.table.summary(table_key(*key), metric)
    return s.value, (s.interval[1] - s.interval[0]) / 2


def _scale_panels(study: Study, cfg: Any, ax_acc: Any, ax_fd: Any) -> None:
    k = cfg.steps
    for method, scales, label in (
        ("cg", cfg.cg_scales, "classifier guidance (s)"),
        ("cfg", cfg.cfg_scales, "classifier-free (w)"),
    ):
        for ax, metric in ((ax_acc, "accuracy"), (ax_fd, "fd_digits")):
            pts = [_mean_and_error(study, (method, s, k), metric) for s in scales]
            ax.errorbar(
                scales,
                [m for m, _ in pts],
                yerr=[e for _, e in pts],
                fmt="o-",
                capsize=3,
                label=label,
            )
    ax_fd.axhline(
        study.mean(("uncond", 0.0, k), "fd_digits"), ls="--", c="#8c8c8c", label="unguided"
    )
    ax_fd.set_yscale("log")
    ax_acc.axhline(cfg.target_accuracy, ls="--", c="#8c8c8c")
    ax_acc.set_ylim(0.0, 1.02)
    for ax, ylabel in ((ax_acc, "class accuracy (clean classifier)"), (ax_fd, "FDD (log scale)")):
        ax.set_xlabel("guidance scale")
        ax.set_ylabel(ylabel)


def _nfe_panel(study: Study, cfg: Any, ax: Any) -> None:
    grid = tuple(sorted(cfg.nfe_grid))
    for method, scale, label in (
        ("cg", study.cg_scale, f"classifier guidance s={study.cg_scale:g}"),
        ("cfg", study.cfg_scale, f"classifier-free w={study.cfg_scale:g}"),
        ("cfg", 1.0, "conditional (w=1)"),
    ):
        curve = study.curve(method, scale, grid)
        ax.plot(list(curve), list(curve.values()), "o-", label=label)
    m = study.matched
    acc, err = _mean_and_error(study, ("cfg", study.cfg_scale, m), "accuracy")
    ax.errorbar([m], [acc], yerr=[err], fmt="s", c="black", capsize=3, label="same FLOPs as CG")
    ax.axhline(cfg.target_accuracy, ls="--", c="#8c8c8c")
    ax.set_ylim(0.0, 1.02)
    ax.set_xscale("log")
    ticks = sorted({*grid, m})
    # only ticks at least 1.4x apart on the log axis get a label (no overlapping numbers)
    shown = [t for i, t in enumerate(ticks) if i == 0 or t >= 1.4 * ticks[i - 1]]
    ax.set_xticks(ticks, [str(t) if t in shown else "" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("NFE (DDIM steps)")
    ax.set_ylabel("class accuracy")


def plot_study(study: Study, cfg: Any, path: Path) -> Path:
    """Three panels: accuracy and FDD against the guidance scale (means over the seeds with 95%
    intervals), accuracy against NFE with the same-cost control."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_acc, ax_fd, ax_nfe = fig.subplots(1, 3)
    _scale_panels(study, cfg, ax_acc, ax_fd)
    _nfe_panel(study, cfg, ax_nfe)
    for ax in (ax_acc, ax_fd, ax_nfe):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


GRID_ROWS = ("uncond", "cg", "cfg", "cond")
"""The rows of [`save_samples`][reference.classifier_guidance.figures.save_samples], top to
bottom."""


def save_samples(study: Study, cfg: Any, path: Path) -> Path:
    """Ten samples (targets 0-9) of the first seed per row: unguided, classifier guidance at the
    headline scale, classifier-free guidance at its headline scale, conditional (w = 1)."""
    from reference.harness import save_grid

    k = cfg.steps
    keys = (("uncond", 0.0, k), ("cg", study.cg_scale, k), ("cfg", study.cfg_scale, k))
    keys += (("cfg", 1.0, k),)
    return save_grid(torch.cat([study.samples[key][:10] for key in keys]), path, nrow=10)
