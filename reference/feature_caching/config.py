"""The sizes of a run of the feature caching benchmark, the aims' targets, and the checks that
refuse a bad run before any work (`reference.feature_caching.bench` re-exports them for the
command line). The numbered aims are those of that module.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.harness import sizes
from reference.harness.builders import quick
from reference.harness.entry import integer, integers, real, switch

BASELINE_STEPS = 50
"""The harness's one baseline: the teacher's DDIM on the clipped ODE, trailing timesteps, 50
steps. DeepCache takes the same 50 steps and runs the whole U-Net on some of them."""
BASELINE = f"ddim{BASELINE_STEPS}"
MAX_BRANCH = 3
"""The zoo teacher's skip branches (one per resolution below the input's)."""
SPEEDUP_AIM = 1.6
"""(1): DeepCache at the headline interval runs at least 1.6x as fast as the baseline."""
FIDELITY_AIM = 2.0
"""(2): it stays within twice the baseline's own distance to the solution (the tolerance the
low-rank and forecasting benchmarks ask)."""
QUALITY_AIM = 1.15
"""(3): it keeps the baseline's held-out FDD within 15% (paired ratio)."""
CONTROL_AIM = 1.0
"""(4)-(5): it is closer to the solution than, and at least as fast as, DDIM at its FLOPs."""


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`), and the cache it headlines."""

    batch_latency: int = 16
    warmup: int = 2
    intervals: tuple[int, ...] = (2, 3, 5)
    headline_interval: int = 3
    branch: int = 1
    fbc_threshold: float = 0.1
    pab_skip: int = 3
    dit: bool = True
    solution_steps: int = sizes.SOLUTION_STEPS
    """Steps of the converged solution (`reference.harness.ode.SOLUTION`); fewer only in QUICK."""

    def validate(self) -> None:
        sizes.check_one_of("headline_interval", self.headline_interval, "intervals", self.intervals)
        super().validate()


FULL = Config()
QUICK = quick(Config, intervals=(3,), solution_steps=20)
DEMO = Config(intervals=(3,), n_quality=60, seeds=(0, 1), batch_latency=8, repeats=3, dit=False)
OPTIONS = (
    integers("intervals", low=1, high=BASELINE_STEPS),
    integer("headline_interval", low=1, high=BASELINE_STEPS),
    integer("branch", low=1, high=MAX_BRANCH),
    *sizes.SCORED_OPTIONS,
    *sizes.TIMED_OPTIONS,
    real("fbc_threshold", low=0.0, high=1.0),
    integer("pab_skip", low=1, high=BASELINE_STEPS),
    switch("dit"),
    integer("solution_steps", low=20, high=1000),
)
