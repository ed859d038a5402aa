"""The benchmark's two figures: FDD against the number of steps, and a grid of samples.

The site redraws the first one in each reader's language from the result's rows
(``glossary.site.benchfigures``); this PNG is the English copy written beside the result. The
second is digits only: one row of (up to) ten samples per row id, top to bottom, from the noise
of the first seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from reference.harness.seeds import SeedTable


def quality_curve(path: Path, table: SeedTable, steps: Sequence[int], real_fdd: float) -> Path:
    """Mean FDD over the seeds against the steps (NFE) of the students, their controls and the
    trailing DDIM at the same steps; dashed: the baseline, the teacher on the 64-step grid and
    held-out real digits at the same n."""
    from reference.harness import curve_plot

    from .config import BASELINE, BASELINE_STEPS
    from .core import BASE_STEPS

    xs = sorted(steps)

    def fdd(key: str) -> float:
        return table.summary(key, "fd_digits").value

    return curve_plot(
        xs,
        {
            "distilled student": [fdd(f"student{n}") for n in xs],
            "teacher DDIM, the student's timesteps": [fdd(f"teacher{n}") for n in xs],
            "teacher DDIM, trailing timesteps": [fdd(f"ddim{n}") for n in xs],
        },
        path,
        xlabel="sampling steps (NFE)",
        ylabel=f"FDD, mean over {len(table.seeds)} seeds (lower is better)",
        logx=True,
        hlines={
            f"teacher DDIM {BASELINE_STEPS} (baseline)": fdd(BASELINE),
            f"teacher DDIM {BASE_STEPS}, nested grid": fdd(f"teacher{BASE_STEPS}"),
            "held-out real digits": real_fdd,
        },
    )


def samples_grid(path: Path, first: Mapping[str, torch.Tensor], keys: Sequence[str]) -> Path:
    """One row of up to ten samples per key of ``first``, top to bottom."""
    from reference.harness import save_grid

    k = min(10, *(first[key].shape[0] for key in keys))
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_grid(torch.cat([first[key][:k] for key in keys]), path, nrow=k)
