"""The sizes of a run of the classifier guidance benchmark, the aims' targets, and the checks that
refuse a bad run before any work (`reference.classifier_guidance.bench` re-exports them for the
command line). The numbered aims are those of that module.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.harness.entry import integer, integers, real, reals, seeds

BASELINE_STEPS = 50
"""The harness's one baseline: the conditional teacher's DDIM on the clipped ODE, trailing
timesteps, 50 steps."""
BASELINE = f"ddim{BASELINE_STEPS}"
LATENCY_SEED = 1000
"""Noise seed of the latency batch (apart from the quality seeds)."""
MIN_QUALITY = 20
"""The smallest sample per seed with two samples per class (the class-weighted KID and the
within-class diversity need pairs)."""
MAX_QUALITY = 140
"""The largest class-balanced sample the held-out real half offers (`scores.MAX_REAL_N`), so
that the real row is measured at the same n as the models (the FDD is biased by n)."""
ACCURACY_AIM = 0.9
"""(1): the headline classifier guidance puts at least 90% of its samples in their target class."""
UNGUIDED_AIM = 1.0
"""(2): guidance improves the FDD of the unconditional model it guides (paired ratio below 1)."""
SAME_COST_AIM = 1.0
"""(4): classifier guidance has at most the FDD of classifier-free guidance at the same FLOPs."""
MAX_SCALE = 20.0


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run. The headline scales are fixed before the run
    (``cg_scale``, ``cfg_scale``), not chosen on the seeds they are reported on."""

    n_quality: int = MAX_QUALITY
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    cg_scales: tuple[float, ...] = (1.0, 2.0, 4.0)
    cfg_scales: tuple[float, ...] = (1.5, 2.0, 3.0)
    cg_scale: float = 2.0
    cfg_scale: float = 1.5
    nfe_grid: tuple[int, ...] = (2, 5, 10, 20)
    batch_latency: int = 32
    repeats: int = 15
    warmup: int = 2

    def validate(self) -> None:
        if self.n_quality % 10:
            raise ValueError(
                f"--n-quality must be a multiple of 10 (classes), got {self.n_quality}"
            )
        if self.cg_scale not in self.cg_scales:
            raise ValueError(
                f"--cg-scale {self.cg_scale:g} is not one of --cg-scales {list(self.cg_scales)}"
            )
        if self.cfg_scale not in self.cfg_scales:
            raise ValueError(
                f"--cfg-scale {self.cfg_scale:g} is not one of --cfg-scales {list(self.cfg_scales)}"
            )
        if BASELINE_STEPS in self.nfe_grid:
            raise ValueError(
                f"--nfe-grid must not repeat the main steps {BASELINE_STEPS}, got "
                f"{list(self.nfe_grid)}"
            )


FULL = Config()
QUICK = Config(
    n_quality=20,
    seeds=(0, 1),
    cg_scales=(2.0,),
    cfg_scales=(1.5,),
    nfe_grid=(2,),
    batch_latency=2,
    repeats=2,
    warmup=0,
)
DEMO = Config(n_quality=60, seeds=(0, 1), cg_scales=(1.0, 2.0), cfg_scales=(1.5,), nfe_grid=(5,))
OPTIONS = (
    integer("n_quality", low=MIN_QUALITY, high=MAX_QUALITY),
    seeds(),
    reals("cg_scales", low=0.0, high=MAX_SCALE, open_low=True),
    reals("cfg_scales", low=1.0, high=MAX_SCALE, open_low=True),
    real("cg_scale", low=0.0, high=MAX_SCALE),
    real("cfg_scale", low=1.0, high=MAX_SCALE),
    integers("nfe_grid", low=1, high=BASELINE_STEPS - 1),
    integer("batch_latency", low=1, high=256),
    integer("repeats", low=1, high=200),
    integer("warmup", low=0, high=20),
)
