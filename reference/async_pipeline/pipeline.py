"""The measured setup of the AsyncDiff benchmark: the teacher split into two stages and the limit
estimate of the pipeline at the sweep's largest batch.

Math
====
With stage times ``s1, s2`` at 1 thread (how the stage processes run), the full forward ``T2``
at the process's 2 threads, ``S`` steps of which ``w`` are synchronous, a pipeline of two stages
that overlap after the warm-up runs at most

    limit = S T2 / (w (s1 + s2) + (S - w) max(s1, s2))                              (1)

times faster than one process (AsyncDiff, Chen et al. 2024, arXiv:2406.06911, section 3).

Pitfalls
========
* (1) is an estimate, not a bound: it leaves out the hand-off between the processes, the DDIM
  step and Python, and unit times measured alone are not the units' times inside a run.
* The split is chosen at the largest batch: the stages balance differently at batch 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def pipeline_limit(unet: Any, batch: int, split: int, steps: int, warmup: int) -> dict[str, float]:
    """(1), from unit times measured apart from the timing rounds. An estimate, not a bound: it
    leaves out the hand-off, the DDIM step and Python, and isolated unit timings are not the
    units' times inside a run."""
    import torch

    from .stages import unit_times_ms

    one = list(unit_times_ms(unet, batch, repeats=3, threads=1).values())
    t2 = sum(unit_times_ms(unet, batch, repeats=3, threads=torch.get_num_threads()).values())
    s1, s2 = sum(one[:split]), sum(one[split:])
    w = warmup
    limit = steps * t2 / (w * (s1 + s2) + (steps - w) * max(s1, s2))  # (1)
    return {"limit": limit, "t2": t2, "s1": s1, "s2": s2}


@dataclass
class Pipeline:
    """The teacher, its split into two stages, the stage pool and the limit (1) at the largest
    batch; ``kept`` holds the last output of each timed single process and synchronous pipeline
    (the ``sync-exact`` note compares them)."""

    unet: Any
    split: int
    units: list[str]
    balance: float
    limit: dict[str, float]
    pool: Any = None
    kept: dict[str, Any] = field(default_factory=dict)


def pipeline(batches: tuple[int, ...], steps: int, warmup: int) -> Pipeline:
    """Load the teacher, choose the split from 1-thread unit times at the largest batch."""
    from reference import zoo

    from .stages import balanced_split, unit_names, unit_times_ms

    unet, big = zoo.load_teacher(), max(batches)
    measured = unit_times_ms(unet, big, repeats=1 if big <= 4 else 3)
    split, times = balanced_split(measured), list(measured.values())
    balance = sum(times) / max(sum(times[:split]), sum(times[split:]))  # the split's balance
    return Pipeline(
        unet, split, unit_names(unet), balance, pipeline_limit(unet, big, split, steps, warmup)
    )
