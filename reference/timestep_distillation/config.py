"""The sizes of a run of the timestep distillation benchmark, their bounds and the checks that
refuse a bad one before any work (`reference.timestep_distillation.bench` re-exports them for the
command line). The numbered aims (1), (1') and (2) are those of that module.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.harness.entry import integer, integers, seeds

from .core import BASE_STEPS
from .students import STUDENTS

BASELINE_STEPS = 50
"""The harness's one baseline: DDIM on the clipped ODE, trailing timesteps, 50 steps."""
BASELINE = f"ddim{BASELINE_STEPS}"
CONTROL_AIM = 1.0
"""(1): a student beats the teacher's DDIM on its own timesteps: paired FDD ratio below 1."""
QUALITY_TOLERANCE = 1.1
"""(2): the headline student keeps the baseline's FDD within 10% (paired ratio)."""
MIN_QUALITY = 20
"""The smallest sample per seed with two samples per class (the class-weighted KID and the
within-class diversity need pairs) at which the real row is defined."""
MAX_QUALITY = 140
"""The largest class-balanced sample the held-out real half offers (`scores.MAX_REAL_N`)."""
LATENCY_SEED = 1000
"""Noise seed of the latency batch (apart from the quality seeds)."""


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run, and the students it measures."""

    steps: tuple[int, ...] = (8, 4, 2)
    headline_steps: int = 4
    n_quality: int = MAX_QUALITY
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    batch_latency: int = 32
    repeats: int = 15
    warmup: int = 1

    def validate(self) -> None:
        bad = [s for s in self.steps if s not in STUDENTS]
        if bad:
            raise ValueError(
                f"--steps must be distilled student steps {sorted(STUDENTS)}, got {self.steps}"
            )
        if self.headline_steps not in self.steps:
            raise ValueError(
                f"--headline-steps {self.headline_steps} is not one of --steps {self.steps}"
            )
        if self.n_quality % 10:
            raise ValueError(
                f"--n-quality must be a multiple of 10 (classes), got {self.n_quality}"
            )


FULL = Config()
QUICK = Config(steps=(4,), n_quality=20, seeds=(0, 1), batch_latency=4, repeats=2, warmup=0)
DEMO = Config(steps=(4,), n_quality=100, seeds=(0, 1), batch_latency=8, repeats=3, warmup=1)
OPTIONS = (
    integers("steps", low=1, high=BASE_STEPS),
    integer("headline_steps", low=1, high=BASE_STEPS),
    integer("n_quality", low=MIN_QUALITY, high=MAX_QUALITY),
    seeds(),
    integer("batch_latency", low=1, high=256),
    integer("repeats", low=1, high=200),
    integer("warmup", low=0, high=20),
)
