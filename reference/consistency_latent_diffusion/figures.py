"""The consistency benchmark's figures: FDD bars and a grid of decoded samples.

The bars are the FDD of every sampled row (mean over the paired seeds, the half-width of its 95%
t interval as the error bar); the site draws the same chart again per language from the rows
(the PNG here stays English). The grid shows the first seed's decoded samples of the baseline,
the headline row and the control at the headline's step count, top to bottom: the order the
``samples`` caption names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

LABELS = {
    "latent-ddim": "DDIM {steps}",
    "consistency": "consistency {steps}",
    "dpm-solver-pp": "DPM-Solver++ {steps}",
}


def fdd_bars(path: Path, rows: Sequence[Any], seeds: int) -> Path:
    """Horizontal FDD bars of the sampled rows, coloured by role, with t-interval errors."""
    from reference.harness import bar_chart

    shown = [r for r in rows if "fd_digits" in r.intervals and r.config["method"] in LABELS]
    spans = [r.intervals["fd_digits"] for r in shown]
    return bar_chart(
        [LABELS[r.config["method"]].format(steps=r.config["steps"]) for r in shown],
        [r.values["fd_digits"] for r in shown],
        path,
        roles=[r.role for r in shown],
        errors=[(hi - lo) / 2 for lo, hi in spans],
        ylabel=f"FDD, mean over {seeds} seeds with 95% interval (lower is better)",
    )


def sample_grid(path: Path, first: Mapping[str, torch.Tensor], keys: Sequence[str]) -> Path:
    """One row of (up to) ten decoded samples per row id in ``keys``, top to bottom."""
    from reference.harness import save_grid

    k = min(10, *(first[key].shape[0] for key in keys))
    return save_grid(torch.cat([first[key][:k] for key in keys]), path, nrow=k)
