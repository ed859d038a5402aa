"""Benchmark and demo of [`reference.conv_fusion`][reference.conv_fusion] (the technique contract of
`reference.harness.entry`: it declares a comparison, the harness measures).

Rows: for the zoo classifier and a toy BatchNorm denoiser at each batch size, the eager
Conv-BN-ReLU network (the baseline of its batch: every other row of that batch is timed against
it, ``Variant.against``), BN folded with the ReLU left as it was and the fx-fused Conv+ReLU
(techniques), and the elementwise passes fusion removes and keeps, timed alone (reference rows,
whose medians give the estimated limit, `reference.conv_fusion.measure` (3)); at the headline
batch, torch.compile of the unfused network with and without Inductor freezing (controls) and of
the fused one (technique); the zoo teacher U-Net eager (its own baseline) and with Q/K/V +
GroupNorm-affine fusion (technique); and every GroupNorm of the teacher frozen on one input
(reference rows, measured once: why GroupNorm cannot be folded).

Quality is fidelity, not a distribution distance: fusion is an identity of the algebra, so every
fused or compiled variant is scored by its deviation from the eager network of its batch on the
same inputs, paired over seeds (`reference.conv_fusion.measure` (1)), and the aims ask that
deviation to stay within float32 rounding of the network's depth and width ((2) there). The
converged sampler solution of the harness (``rms_to_solution``) is not used: the classifier and
the toy denoiser are not samplers, and for the U-Net it would measure the sampler's own error,
the same for both rows.

The headline is the denoiser at the headline batch; its limit is measured in the same rounds
((3) there), an estimate, not a bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference.harness import sizes
from reference.harness.compare import (
    Comparison,
    HeadlineSpec,
    Outcome,
    QualityAim,
    SpeedupAim,
    outcome,
)
from reference.harness.declared import higher, lower
from reference.harness.entry import integer, integers, seeds, switch
from reference.harness.results import Figure, metrics, settings_of

from .measure import FIDELITY

CONTRACT = 2
SLUG = "conv-fusion"
MAX_BATCH = 1024


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    batches: tuple[int, ...] = (1, 8, 32, 128)
    headline_batch: int = 32
    width: int = 32
    depth: int = 12
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    repeats: int = 50
    warmup: int = 5
    compile: bool = True

    def validate(self) -> None:
        sizes.check_one_of("headline_batch", self.headline_batch, "batches", self.batches)


FULL = Config()
QUICK = Config(batches=(1, 8), headline_batch=8, seeds=(0, 1), repeats=3, warmup=1, compile=False)
DEMO = Config(batches=(8, 32), headline_batch=32, seeds=(0, 1), repeats=10, compile=False)
OPTIONS = (
    integers("batches", low=1, high=MAX_BATCH),
    integer("headline_batch", low=1, high=MAX_BATCH),
    integer("width", low=1, high=256),
    integer("depth", low=3, high=64),
    seeds(),
    integer("repeats", low=1, high=1000),
    integer("warmup", low=0, high=100),
    switch("compile"),
)


def aims(hb: int, tolerance: dict[str, float]) -> tuple[Any, ...]:
    """The speedup at the headline batch, and each network's fidelity (1) within (2)."""
    from .rows import SPEEDUP_AIM

    head, batch = f"denoiser-b{hb}", {"batch": hb}
    return (
        SpeedupAim("speedup", f"{head}-fused", f"{head}-eager", ">=", SPEEDUP_AIM, batch),
        *(
            QualityAim(f"fidelity-{net}", f"{net}-b{hb}-fused", None, FIDELITY, "<=",
                       tolerance[net], kind="value", params=batch)
            for net in ("classifier", "denoiser")
        ),
        QualityAim("fidelity-unet", "unet-fused", None, FIDELITY, "<=", tolerance["unet"],
                   kind="value", params=batch),
    )  # fmt: skip


def comparison(cfg: Config, variants: list[Any], tolerance: dict[str, float]) -> Comparison:
    """Every variant on the same seeds and in one interleaved timing; the denoiser at the
    headline batch is the headline, its limit (3) measured in the same rounds."""
    from .measure import limit

    hb = cfg.headline_batch
    return Comparison(
        variants=tuple(variants),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "gflops",
            **lower("rel_rms_to_eager", "max_abs_diff", "groupnorm_rel_error"),
            **lower("elementwise_mb", unit="MB"),
            **higher("speedup_limit", unit="x"),
        ),
        score=lambda samples, same_seed: {},  # every sampled variant brings its own (1)
        seeds=cfg.seeds,
        aims=aims(hb, tolerance),
        headline=HeadlineSpec(
            f"denoiser-b{hb}-fused",
            limit=lambda m: limit(m.latency, f"denoiser-b{hb}"),
            limit_kind="estimate",
        ),
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        ranges={FIDELITY: (0.0, None), "max_abs_diff": (0.0, None)},
    )


def _declared(cfg: Config) -> tuple[Comparison, dict[str, Any]]:
    """The comparison, and what the notes need beside it (library oracles, tolerances, the
    U-Net's fused blocks, its GroupNorm counter-example, the compilation status)."""
    from reference import zoo

    from .measure import (
        compiled_variants,
        inputs,
        library_agreement,
        networks,
        rounding_tolerance,
        sweep_variants,
        with_fidelity,
    )
    from .unet import unet_groupnorm_freeze_error, unet_variants

    nets, teacher = networks(cfg), zoo.load_teacher()
    variants = [v for k, m in nets.items() for b in cfg.batches for v in sweep_variants(k, m, b)]
    status = "skipped"
    if cfg.compile:
        for k, m in nets.items():
            more, status = compiled_variants(k, m, cfg.headline_batch)
            variants += more
            if status != "ok":
                break
    unet, blocks = unet_variants(teacher, cfg.headline_batch)
    tolerance = {k: rounding_tolerance(m) for k, m in {**nets, "unet": teacher}.items()}
    extra = {
        "oracle": {k: library_agreement(m, inputs(k, 8, 0)) for k, m in nets.items()},
        "tolerance": tolerance,
        "blocks": blocks,
        "groupnorm": unet_groupnorm_freeze_error(teacher),
        "status": status,
    }
    return comparison(cfg, with_fidelity(variants + unet), tolerance), extra


def _measured(cfg: Config) -> tuple[Any, dict[str, float], dict[str, Any]]:
    from reference.harness.compare import measure as measure_comparison

    from .measure import NETWORKS
    from .rows import add_limits

    c, extra = _declared(cfg)
    m = measure_comparison(c)
    limits = add_limits(m, [f"{n}-b{b}" for n in NETWORKS for b in cfg.batches])
    return m, limits, extra


def measure(cfg: Config, staging: Path) -> Outcome:
    """Score (paired seeds), time and count every variant; write the figure."""
    from .rows import figure, notes
    from .unet import groupnorm_rows

    m, limits, extra = _measured(cfg)
    figures = [Figure(f"{SLUG}.png", "speedup-vs-batch")]
    figure(m, cfg, staging / figures[0].file)
    return outcome(
        m,
        settings=settings_of(cfg),
        notes=notes(cfg, m, limits, extra),
        figures=figures,
        extra_rows=groupnorm_rows(extra["groupnorm"]),
    )


def demo(cfg: Config, out: Path) -> None:
    """Eager against folded and fused on both BN networks: a table, the fidelity, the figure."""
    from .rows import figure

    m, _, extra = _measured(cfg)
    print(f"{'row':28} {'ms':>8} {'speedup':>8} {'limit':>6} {'rel rms':>9} {'max|diff|':>9}")
    for r in m.rows:
        v = r.values
        if "speedup" not in v or r.role == "reference":
            continue
        shown = {k: v.get(k, float("nan")) for k in ("speedup_limit", FIDELITY, "max_abs_diff")}
        print(
            f"{r.id:28} {v['latency_ms']:8.2f} {v['speedup']:7.2f}x "
            f"{shown['speedup_limit']:5.2f}x {shown[FIDELITY]:9.1e} {shown['max_abs_diff']:9.1e}"
        )
    g = extra["groupnorm"]
    print(
        f"GroupNorm frozen on input 1: relative error {g.on_calibration_input:.1e} on input 1, "
        f"{g.on_other_input:.2f} on input 2 (cannot be folded)"
    )
    for k, diffs in extra["oracle"].items():
        print(f"{k} against torch: " + ", ".join(f"{n} {v:.1e}" for n, v in diffs.items()))
    path = out / f"{SLUG}-demo.png"
    figure(m, cfg, path)
    print(f"{path}: measured speedup and its limit against the batch size")
