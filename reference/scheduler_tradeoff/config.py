"""The sizes of a run of the scheduler trade-off, their bounds and the checks that refuse a bad
one before any work (`reference.scheduler_tradeoff.bench` re-exports them for the command line).

The numbered aims (1)-(3) are those of `reference.scheduler_tradeoff.bench`.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.harness import sizes
from reference.harness.builders import quick
from reference.harness.entry import integer, integers, names

from .schedulers import SCHEDULERS

NFE_GRID: tuple[int, ...] = (1, 2, 4, 8, 10, 15, 20, 25, 50)
CONTROL_AIM = 1.0
"""(1): a solver lands closer to the solution than DDIM at the same NFE."""
FIDELITY_AIM = 1.0
"""(2): the headline solver at least as close to the solution as the baseline."""
QUALITY_TOLERANCE = 1.1
"""(3): the headline solver keeps the baseline's FDD within 10% (paired ratio)."""
TECHNIQUES = ("dpmpp2m", "unipc")


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`), the solvers and their NFE grid, and
    the DDPM reference."""

    nfe_grid: tuple[int, ...] = NFE_GRID
    schedulers: tuple[str, ...] = tuple(SCHEDULERS)
    headline_nfe: int = 10
    baseline_nfe: int = 50
    ref_seeds: int = 2
    ref_steps: int = 1000
    solution_steps: int = sizes.SOLUTION_STEPS
    """Steps of the converged solution (`reference.harness.ode.SOLUTION`); fewer only in QUICK."""

    def validate(self) -> None:
        missing = [s for s in ("ddim", "dpmpp2m") if s not in self.schedulers]
        if missing:
            raise ValueError(f"--schedulers must include ddim and dpmpp2m, got {self.schedulers}")
        if not self.headline_nfe < self.baseline_nfe:
            raise ValueError(
                f"--headline-nfe must be below --baseline-nfe {self.baseline_nfe}, "
                f"got {self.headline_nfe}"
            )
        sizes.check_one_of("headline_nfe", self.headline_nfe, "nfe_grid", self.nfe_grid)
        sizes.check_one_of("baseline_nfe", self.baseline_nfe, "nfe_grid", self.nfe_grid)
        super().validate()
        if self.ref_seeds > len(self.seeds):
            raise ValueError(
                f"--ref-seeds must be at most the {len(self.seeds)} seeds, got {self.ref_seeds}"
            )
        if self.ref_steps <= self.headline_nfe:
            raise ValueError(
                f"--ref-steps must be above --headline-nfe {self.headline_nfe}, "
                f"got {self.ref_steps}"
            )


FULL = Config()
QUICK = quick(
    Config, nfe_grid=(1, 2, 4), headline_nfe=2, baseline_nfe=4, ref_steps=10, solution_steps=20
)
DEMO = Config(
    n_quality=60, seeds=(0, 1), nfe_grid=(1, 2, 5, 10, 20), headline_nfe=5, baseline_nfe=20
)
OPTIONS = (
    *sizes.SCORED_OPTIONS,
    integers("nfe_grid", low=1, high=1000),
    names("schedulers", tuple(SCHEDULERS), min_count=2),
    integer("headline_nfe", low=1, high=1000),
    integer("baseline_nfe", low=2, high=1000),
    integer("ref_seeds", low=2, high=100),
    integer("ref_steps", low=2, high=1000),
    *sizes.TIMED_OPTIONS,
)
