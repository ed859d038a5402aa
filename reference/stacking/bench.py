"""Benchmark and demo of `reference.stacking` (the contract of `reference.harness.cli`).

Rows: the teacher with DDIM-50 (baseline); every element of the study alone (its headline
configuration); step variants of the two students; every compatible pair; the greedy stacks;
DDIM with fewer steps (the matched-cost controls: each pair and stack is set beside the one of
nearest latency); the real-digit reference.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference.harness.cli import Option, at_least, check_seeds, int_tuple, name_tuple

STUDY_ELEMENTS = (
    "solver",
    "forecast",
    "deepcache",
    "pruned",
    "lowrank",
    "fusion",
    "compile",
    "student",
    "consistency",
    "guidance",
)
"""Every element that composes (the two runtimes own their loops and compose with nothing)."""


@dataclass(frozen=True)
class Config:
    """Sizes of a run and the operating point of each element (its technique's headline)."""

    n: int = 256
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    latency_batch: int = 16
    repeats: int = 15
    warmup: int = 1
    base_steps: int = 50
    budget: float = 1.1
    elements: tuple[str, ...] = STUDY_ELEMENTS
    variants: tuple[tuple[str, int], ...] = (("student", 2), ("student", 8), ("consistency", 2))
    control_steps: tuple[int, ...] = (2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 25, 32, 40)
    solver: str = "dpmpp2m"
    solver_steps: int = 10
    cache_interval: int = 3
    cache_branch: int = 1
    forecast: tuple[int, int, int] = (2, 2, 2)  # interval, order, warm-up
    student_steps: int = 4
    cm_steps: int = 4
    cg_scale: float = 2.0
    lowrank_budget: float = 0.5
    lowrank_calib_n: int = 32
    compile_backend: str = "inductor"
    max_stages: int = 5
    stack: tuple[str, ...] = ("solver", "deepcache", "compile")

    def validate(self) -> None:
        from .compose import check
        from .elements import ELEMENTS

        at_least(self, n=2, latency_batch=1, repeats=2, warmup=0, base_steps=2, solver_steps=1)
        at_least(self, cache_interval=1, cm_steps=1, max_stages=1, lowrank_calib_n=2)
        check_seeds(self.seeds)
        if not self.budget > 1.0:
            raise ValueError(f"--budget must be above 1 (an FDD ratio), got {self.budget}")
        bad = [e for e in (*self.elements, *self.stack) if e not in ELEMENTS]
        if bad:
            raise ValueError(f"unknown element {bad[0]!r}; known: {', '.join(ELEMENTS)}")
        if len(self.elements) < 2:
            raise ValueError("--elements needs at least two elements")
        if self.student_steps not in (2, 4, 8):
            raise ValueError(f"--student-steps must be 2, 4 or 8, got {self.student_steps}")
        check(self.stack)


FULL = Config()
QUICK = Config(
    n=20,
    seeds=(0, 1),
    latency_batch=4,
    repeats=2,
    warmup=0,
    base_steps=10,
    variants=(("student", 2),),
    control_steps=(2, 5),
    solver_steps=4,
    cm_steps=2,
    lowrank_calib_n=4,
    compile_backend="eager",
    max_stages=3,
)
DEMO = Config(n=64, seeds=(0, 1), repeats=3)
OPTIONS = (
    Option("n"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("latency_batch"),
    Option("repeats"),
    Option("budget", float, "X"),
    Option("elements", name_tuple, "E,E,..."),
    Option("control_steps", int_tuple, "N,N,..."),
    Option("compile_backend", str, "NAME"),
    Option("max_stages"),
    Option("stack", name_tuple, "E,E,..."),
)


def _bar(iterable: Any, **kw: Any) -> Any:
    from tqdm import tqdm

    return tqdm(iterable, leave=False, **kw)


def benchmark(cfg: Config, out: Path) -> Any:
    """Run the study (`reference.stacking.study.run_study`) and return its `Measurement`."""
    from .measurement import measurement
    from .study import run_study

    start = time.monotonic()
    study = run_study(cfg, _bar)
    return measurement(study, wall_s=time.monotonic() - start)


def demo(cfg: Config, out: Path) -> None:
    """Sample ``cfg.stack`` and the baseline from the same noise; print their FDD and time; save
    both grids into ``out``."""
    from reference.harness import class_labels, frechet_digits_distance, make_noise, save_grid

    from .compose import Models, compose
    from .elements import row_id

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
        fdd = frechet_digits_distance(x)
        path = save_grid(x[:50], out / f"{name}.png")
        print(f"{name}: {seconds:.2f} s for {cfg.n} samples, FDD {fdd:.1f} -> {path}")
