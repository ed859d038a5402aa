"""Benchmark and demo of `reference.stacking`, on the technique command line
(`reference.harness.entry`, with the study as its target): every option is checked
before any work, the run stages into a folder named by its process and is sealed and written
atomically.

Rows: the teacher with DDIM-50 (baseline); every element of the study alone (its headline
configuration); step variants of the two students; every compatible pair; the greedy stacks;
DDIM with fewer steps (the matched-cost controls: each pair and stack is set beside the one of
nearest latency); the real-digit reference.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .settings import DEMO, FULL, OPTIONS, QUICK, STUDY_ELEMENTS, Config

__all__ = ["CONTRACT", "DEMO", "FULL", "OPTIONS", "QUICK", "STUDY_ELEMENTS", "Config"]
__all__ += ["demo", "measure"]

CONTRACT = 2


def _bar(iterable: Any, **kw: Any) -> Any:
    from tqdm import tqdm

    return tqdm(iterable, leave=False, **kw)


def measure(cfg: Config, staging: Path) -> Any:
    """Run the study (`reference.stacking.study.run_study`) and return the result's body (an
    `Outcome`; the study draws no figure files: the site draws its charts from the result)."""
    from reference.harness.compare import Outcome, body_of

    from .measurement import measurement
    from .study import run_study

    start = time.monotonic()
    study = run_study(cfg, _bar)
    found = measurement(study, wall_s=time.monotonic() - start)
    return Outcome(body_of(found), [])


def demo(cfg: Config, out: Path) -> None:
    """Sample ``cfg.stack`` and the baseline from the same noise; print their FDD and time; save
    both grids into ``out``."""
    from reference.harness import class_labels, make_noise, save_grid
    from reference.harness.scores import held_out_score

    from .compose import compose
    from .elements import row_id
    from .pipeline import Models

    out.mkdir(parents=True, exist_ok=True)
    models = Models(cfg)
    labels = class_labels(cfg.n)
    for name, members in (("base", ()), (row_id(cfg.stack), cfg.stack)):
        pipe = compose(members, cfg)
        noise = make_noise(cfg.n, 0, pipe.noise_shape)
        pipe.run(models, noise[:2], labels[:2], 0)  # builds (and compiles) outside the clock
        start = time.perf_counter()
        x = pipe.run(models, noise, labels, 0)
        seconds = time.perf_counter() - start
        fdd = held_out_score(cfg.n)(x, None)["fd_digits"]
        path = save_grid(x[:50], out / f"{name}.png")
        print(f"{name}: {seconds:.2f} s for {cfg.n} samples, FDD {fdd:.1f} -> {path}")
