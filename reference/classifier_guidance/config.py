"""The sizes of a run of the classifier guidance benchmark, the aims' targets, and the checks that
refuse a bad run before any work (`reference.classifier_guidance.bench` re-exports them for the
command line). The numbered aims are those of that module.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.harness import sizes
from reference.harness.builders import quick
from reference.harness.entry import integers, real, reals

BASELINE_STEPS = 50
"""The harness's one baseline: the conditional teacher's DDIM on the clipped ODE, trailing
timesteps, 50 steps."""
BASELINE = f"ddim{BASELINE_STEPS}"
ACCURACY_AIM = 0.9
"""(1): the headline classifier guidance puts at least 90% of its samples in their target class."""
UNGUIDED_AIM = 1.0
"""(2): guidance improves the FDD of the unconditional model it guides (paired ratio below 1)."""
SAME_COST_AIM = 1.0
"""(4): classifier guidance has at most the FDD of classifier-free guidance at the same FLOPs."""
MAX_SCALE = 20.0


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`; two untimed rounds: the guided rows
    warm up the classifier's backward pass too). The headline scales are fixed before the run
    (``cg_scale``, ``cfg_scale``), not chosen on the seeds they are reported on."""

    cg_scales: tuple[float, ...] = (1.0, 2.0, 4.0)
    cfg_scales: tuple[float, ...] = (1.5, 2.0, 3.0)
    cg_scale: float = 2.0
    cfg_scale: float = 1.5
    nfe_grid: tuple[int, ...] = (2, 5, 10, 20)
    warmup: int = 2

    def validate(self) -> None:
        super().validate()
        sizes.check_one_of("cg_scale", self.cg_scale, "cg_scales", self.cg_scales)
        sizes.check_one_of("cfg_scale", self.cfg_scale, "cfg_scales", self.cfg_scales)
        if BASELINE_STEPS in self.nfe_grid:
            raise ValueError(
                f"--nfe-grid must not repeat the main steps {BASELINE_STEPS}, got "
                f"{list(self.nfe_grid)}"
            )


FULL = Config()
QUICK = quick(Config, cg_scales=(2.0,), cfg_scales=(1.5,), nfe_grid=(2,), batch_latency=2)
DEMO = Config(n_quality=60, seeds=(0, 1), cg_scales=(1.0, 2.0), cfg_scales=(1.5,), nfe_grid=(5,))
OPTIONS = (
    *sizes.SCORED_OPTIONS,
    reals("cg_scales", low=0.0, high=MAX_SCALE, open_low=True),
    reals("cfg_scales", low=1.0, high=MAX_SCALE, open_low=True),
    real("cg_scale", low=0.0, high=MAX_SCALE),
    real("cfg_scale", low=1.0, high=MAX_SCALE),
    integers("nfe_grid", low=1, high=BASELINE_STEPS - 1),
    *sizes.TIMED_OPTIONS,
)
