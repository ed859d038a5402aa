"""The figures of the guidance benchmark (matplotlib's object API, Agg canvas), drawn from the
measured rows: means over the paired seeds with their 95% t intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .config import ACCURACY_AIM, BASELINE, BASELINE_STEPS, Config
from .rows import row_id

CG, CFG = "classifier-guidance", "classifier-free-guidance"


def _point(m: Any, rid: str, metric: str) -> tuple[float, float]:
    """Mean over seeds and the half-width of its 95% t interval (symmetric)."""
    s = m.table.summary(rid, metric)
    return s.value, (s.interval[1] - s.interval[0]) / 2


def _scale_panels(m: Any, cfg: Config, ax_acc: Any, ax_fd: Any) -> None:
    for method, scales, label in (
        (CG, cfg.cg_scales, "classifier guidance (s)"),
        (CFG, cfg.cfg_scales, "classifier-free (w)"),
    ):
        ids = [row_id(method, s, BASELINE_STEPS) for s in scales]
        for ax, metric in ((ax_acc, "accuracy"), (ax_fd, "fd_digits")):
            pts = [_point(m, rid, metric) for rid in ids]
            ax.errorbar(scales, [v for v, _ in pts], yerr=[e for _, e in pts], fmt="o-",
                        capsize=3, label=label)  # fmt: skip
    for rid, style, label in (("uncond", "--", "unguided"), (BASELINE, ":", "conditional")):
        ax_fd.axhline(m.table.summary(rid, "fd_digits").value, ls=style, c="#8c8c8c", label=label)
    ax_fd.set_yscale("log")
    ax_acc.axhline(ACCURACY_AIM, ls="--", c="#8c8c8c")
    ax_acc.set_ylim(0.0, 1.02)
    for ax, ylabel in ((ax_acc, "class accuracy (clean classifier)"), (ax_fd, "FDD (log scale)")):
        ax.set_xlabel("guidance scale")
        ax.set_ylabel(ylabel)


def curve_rows(cfg: Config, method: str, scale: float) -> list[str]:
    """The rows of one accuracy-against-NFE curve, fewest steps first, the main steps last."""
    steps = [*sorted(cfg.nfe_grid), BASELINE_STEPS]
    return [row_id(method, scale, n) for n in steps]


def _nfe_panel(m: Any, cfg: Config, ax: Any, matched: int) -> None:
    steps = [*sorted(cfg.nfe_grid), BASELINE_STEPS]
    for method, scale, label in (
        (CG, cfg.cg_scale, f"classifier guidance s={cfg.cg_scale:g}"),
        (CFG, cfg.cfg_scale, f"classifier-free w={cfg.cfg_scale:g}"),
        ("conditional", 1.0, "conditional (w=1)"),
    ):
        pts = [_point(m, rid, "accuracy") for rid in curve_rows(cfg, method, scale)]
        ax.errorbar(steps, [v for v, _ in pts], yerr=[e for _, e in pts], fmt="o-", capsize=3,
                    label=label)  # fmt: skip
    acc, err = _point(m, "cfg-matched", "accuracy")
    ax.errorbar([matched], [acc], yerr=[err], fmt="s", c="black", capsize=3,
                label="same FLOPs as CG")  # fmt: skip
    ax.axhline(ACCURACY_AIM, ls="--", c="#8c8c8c")
    ax.set_ylim(0.0, 1.02)
    ax.set_xscale("log")
    ticks = sorted({*steps, matched})
    # only ticks at least 1.4x apart on the log axis get a label (no overlapping numbers)
    shown = [t for i, t in enumerate(ticks) if i == 0 or t >= 1.4 * ticks[i - 1]]
    ax.set_xticks(ticks, [str(t) if t in shown else "" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("NFE (DDIM steps)")
    ax.set_ylabel("class accuracy")


def plot_study(m: Any, cfg: Config, matched: int, path: Path) -> Path:
    """Three panels: accuracy and FDD against the guidance scale, accuracy against NFE with the
    same-cost control."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_acc, ax_fd, ax_nfe = fig.subplots(1, 3)
    _scale_panels(m, cfg, ax_acc, ax_fd)
    _nfe_panel(m, cfg, ax_nfe, matched)
    for ax in (ax_acc, ax_fd, ax_nfe):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def grid_rows(cfg: Config) -> list[str]:
    """The rows of `save_samples`, top to bottom: unguided, classifier guidance at the headline
    scale, classifier-free guidance at its headline scale, the conditional baseline."""
    k = BASELINE_STEPS
    return ["uncond", row_id(CG, cfg.cg_scale, k), row_id(CFG, cfg.cfg_scale, k), BASELINE]


def save_samples(m: Any, cfg: Config, path: Path) -> Path:
    """Ten samples (targets 0-9) of the first seed per row of `grid_rows`."""
    from reference.harness import save_grid

    images = torch.cat([m.first[rid][:10] for rid in grid_rows(cfg)])
    return save_grid(images, path, nrow=10)
