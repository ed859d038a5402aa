"""The sizes of a run of the timestep distillation benchmark, their bounds and the checks that
refuse a bad one before any work (`reference.timestep_distillation.bench` re-exports them for the
command line). The numbered aims (1), (1') and (2) are those of that module.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.harness import sizes
from reference.harness.entry import integer, integers

from .core import BASE_STEPS
from .students import STUDENTS

BASELINE_STEPS = 50
"""The harness's one baseline: DDIM on the clipped ODE, trailing timesteps, 50 steps."""
BASELINE = f"ddim{BASELINE_STEPS}"
CONTROL_AIM = 1.0
"""(1): a student beats the teacher's DDIM on its own timesteps: paired FDD ratio below 1."""
QUALITY_TOLERANCE = 1.1
"""(2): the headline student keeps the baseline's FDD within 10% (paired ratio)."""


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`), and the students it measures."""

    steps: tuple[int, ...] = (8, 4, 2)
    headline_steps: int = 4

    def validate(self) -> None:
        bad = [s for s in self.steps if s not in STUDENTS]
        if bad:
            raise ValueError(
                f"--steps must be distilled student steps {sorted(STUDENTS)}, got {self.steps}"
            )
        sizes.check_one_of("headline_steps", self.headline_steps, "steps", self.steps)
        super().validate()


FULL = Config()
QUICK = Config(steps=(4,), n_quality=20, seeds=(0, 1), batch_latency=4, repeats=2, warmup=0)
DEMO = Config(steps=(4,), n_quality=100, seeds=(0, 1), batch_latency=8, repeats=3, warmup=1)
OPTIONS = (
    integers("steps", low=1, high=BASE_STEPS),
    integer("headline_steps", low=1, high=BASE_STEPS),
    *sizes.SCORED_OPTIONS,
    *sizes.TIMED_OPTIONS,
)
