"""The study's settings: sizes of a run and each element's operating point, checked before any
work (`Config.validate`), with the standard, quick and demo configurations and the options of
``python -m reference.stacking``.

Kept apart from the benchmark so that the pieces that only read settings (composing a stack,
the study's steps) do not import the benchmark, and the benchmark does not import them back.
Torch-free, like `reference.stacking.elements`, which it checks against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reference.harness.bounds import at_least, check_seeds
from reference.harness.entry import (
    compile_backend,
    integer,
    integers,
    names,
    real,
    seeds,
)

from .elements import ELEMENTS, IncompatibleStack, check

SEED_MAX = 2**32 - 1
"""The largest seed every generator accepts (as `reference.harness.entry`)."""
MAX_N = 148
"""The most class-balanced samples the held-out real row can match (`reference.harness.scores`)."""
MAX_STEPS = 1000
"""The zoo's training schedule has 1000 steps; no sampler takes more."""
MAX_LATENCY_BATCH = 256
"""The largest latency batch: every configuration's pipeline holds it at once (memory)."""
MAX_REPEATS = 100
"""The most interleaved timing rounds (the standard run takes 15)."""
MAX_BUDGET = 10.0
"""The largest FDD-ratio budget: ten times the baseline's distance admits every configuration."""

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

    n: int = 140
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
        """``ValueError`` naming the first bad option, before any model is loaded."""
        at_least(self, n=20, latency_batch=1, repeats=2, warmup=0, base_steps=2, solver_steps=1)
        at_least(self, cache_interval=1, cm_steps=1, max_stages=1, lowrank_calib_n=2)
        most = {
            "latency_batch": MAX_LATENCY_BATCH,
            "repeats": MAX_REPEATS,
            "max_stages": len(STUDY_ELEMENTS),
        }
        for name, high in most.items():
            if getattr(self, name) > high:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be <= {high}, got {getattr(self, name)}")
        if self.budget > MAX_BUDGET:
            raise ValueError(f"--budget must be <= {MAX_BUDGET}, got {self.budget}")
        check_seeds(self.seeds)
        if max(self.seeds) > SEED_MAX:
            raise ValueError(f"--seeds must be <= {SEED_MAX} (the generators' range)")
        if self.n > MAX_N:
            raise ValueError(f"--n must be <= {MAX_N} (the held-out reference set), got {self.n}")
        if not (math.isfinite(self.budget) and self.budget > 1.0):
            raise ValueError(f"--budget must be a finite FDD ratio above 1, got {self.budget}")
        if not self.control_steps or min(self.control_steps) < 1:
            raise ValueError(
                f"--control-steps must be positive step counts, got {self.control_steps}"
            )
        if max(self.control_steps) > MAX_STEPS or self.base_steps > MAX_STEPS:
            raise ValueError(f"step counts must be <= {MAX_STEPS} (the training schedule's steps)")
        bad = [e for e in (*self.elements, *self.stack) if e not in ELEMENTS]
        if bad:
            raise ValueError(f"unknown element {bad[0]!r}; known: {', '.join(ELEMENTS)}")
        if len(set(self.elements)) != len(self.elements):
            raise ValueError(f"--elements names an element twice: {','.join(self.elements)}")
        if len(self.elements) < 2:
            raise ValueError("--elements needs at least two elements")
        if self.student_steps not in (2, 4, 8):
            raise ValueError(f"--student-steps must be 2, 4 or 8, got {self.student_steps}")
        try:
            check(self.stack)
        except IncompatibleStack as exc:
            a, b = exc.pair
            raise ValueError(f"--stack: {a} and {b} do not stack: {exc}") from None


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
    integer("n", low=20, high=MAX_N),
    seeds(),
    integer("latency_batch", low=1, high=MAX_LATENCY_BATCH),
    integer("repeats", low=2, high=MAX_REPEATS),
    real("budget", low=1.0, high=MAX_BUDGET),  # above 1: `Config.validate`
    names("elements", tuple(ELEMENTS), min_count=2),
    integers("control_steps", low=1, high=MAX_STEPS),
    compile_backend(),
    integer("max_stages", low=1, high=len(STUDY_ELEMENTS)),
    names("stack", tuple(ELEMENTS)),
)
"""The options of ``python -m reference.stacking``, each bounded before any work (the technique
command line, `reference.harness.entry`); `Config.validate` checks what spans options (a stack
whose members do not stack, a budget of exactly 1)."""
