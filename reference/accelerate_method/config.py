"""The sizes of a run of the step forecasting benchmark, the aims' targets, and the checks that
refuse a bad run before any work (`reference.accelerate_method.bench` re-exports them for the
command line). The numbered aims are those of that module.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.harness import sizes
from reference.harness.builders import quick
from reference.harness.entry import integer, integers, switch

BASELINE_STEPS = 50
"""The harness's one baseline: the teacher's DDIM on the clipped ODE, trailing timesteps, 50
steps. Forecasting takes the same 50 scheduler steps and runs the network on some of them."""
BASELINE = f"ddim{BASELINE_STEPS}"
SAME_NFE_AIM = 1.0
"""(1): forecasting lands closer to the solution than DDIM with the same network evaluations."""
FIDELITY_AIM = 2.0
"""(2): forecasting stays within twice the baseline's own distance to the solution (the
tolerance the low-rank benchmark asks of its factorised DiT)."""
QUALITY_AIM = 1.1
"""(3): forecasting keeps the baseline's held-out FDD within 10% (paired ratio)."""
SPEEDUP_AIM = 1.7
"""(4): at k = 2 and warm-up 2 the bound is 50 / 26 = 1.92x; 1.7x leaves the forecasts' work."""


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`), and the forecast it headlines:
    a full step every ``interval`` steps after ``forecast_warmup`` full ones, extrapolated at
    ``order``."""

    interval: int = 2
    forecast_warmup: int = 2
    order: int = 2
    intervals: tuple[int, ...] = (2, 3, 4)
    dit: bool = True
    solution_steps: int = sizes.SOLUTION_STEPS
    """Steps of the converged solution (`reference.harness.ode.SOLUTION`); fewer only in QUICK."""

    def validate(self) -> None:
        super().validate()
        sizes.check_one_of("interval", self.interval, "intervals", self.intervals)
        if self.forecast_warmup >= BASELINE_STEPS:
            raise ValueError(
                f"--forecast-warmup must be below the {BASELINE_STEPS} steps, "
                f"got {self.forecast_warmup}"
            )


FULL = Config()
QUICK = quick(Config, intervals=(2,), batch_latency=2, solution_steps=20)
DEMO = Config(n_quality=60, seeds=(0, 1), intervals=(2, 3), batch_latency=8, repeats=3, dit=False)
OPTIONS = (
    *sizes.SCORED_OPTIONS,
    integer("interval", low=1, high=BASELINE_STEPS),
    integer("forecast_warmup", low=1, high=BASELINE_STEPS - 1),
    integer("order", low=0, high=4),
    integers("intervals", low=1, high=BASELINE_STEPS),
    *sizes.TIMED_OPTIONS,
    switch("dit"),
    integer("solution_steps", low=20, high=1000),
)
