"""Benchmark and demo of [`reference.accelerate_method`][reference.accelerate_method] (the technique
contract of `reference.harness.cli`).

Rows, over paired noise seeds: the zoo U-Net with plain DDIM (baseline); step forecasting every
``k`` steps with Newton forecasts of order ``m`` and 1 and with TaylorSeer's formula (technique);
reusing the last output and plain DDIM with the same number of network evaluations (control,
timed); the same at the other intervals; on the zoo DiT, plain DDIM (reference), our forecasts
and diffusers' ``apply_taylorseer_cache``; the class-balanced real digits (reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from reference.harness.cli import Option, at_least, check_seeds, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)
from reference.harness.seeds import N_QUALITY, SEEDS

from .figures import plot_fdd_vs_nfe
from .runs import Study, measure
from .schedule import speedup_limit

SLUG = "accelerate-method"
GRID_ROWS = ("base", "newton", "reuse", "ddim-same")
"""The rows of the sample grid, top to bottom."""


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    samples: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    steps: int = 50
    interval: int = 2
    warmup: int = 2
    order: int = 2
    intervals: tuple[int, ...] = (2, 3, 4)
    latency_batch: int = 32
    repeats: int = 15
    timing_warmup: int = 1
    dit: bool = True

    def validate(self) -> None:
        at_least(self, steps=2, interval=1)
        if not self.intervals or min(self.intervals) < 1:
            raise ValueError(f"--intervals must be >= 1, got {self.intervals}")
        if self.warmup < 1:
            raise ValueError(
                f"--warmup must be >= 1 (the first step has no history), got {self.warmup}"
            )
        at_least(self, order=0)
        if self.samples < 20:
            raise ValueError(f"--samples must be >= 20 (two per class), got {self.samples}")
        check_seeds(self.seeds)
        at_least(self, latency_batch=1, repeats=2)
        if self.timing_warmup < 0:
            raise ValueError(f"warm-up rounds must be >= 0, got {self.timing_warmup}")


FULL = Config()
QUICK = Config(
    samples=20,
    seeds=(0, 1),
    steps=6,
    intervals=(2,),
    latency_batch=4,
    repeats=2,
    timing_warmup=0,
)
DEMO = Config(
    samples=64, seeds=(0, 1), steps=20, intervals=(2, 3), latency_batch=16, repeats=2, dit=False
)
OPTIONS = (
    Option("samples"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("steps"),
    Option("interval"),
    Option("warmup"),
    Option("order"),
    Option("intervals", int_tuple, "N,N,..."),
    Option("latency_batch"),
    Option("repeats"),
)


def _rows(study: Study) -> list[Row]:
    rows = []
    for r in study.runs:
        group = study.lat.get("dit" if r.dit else "unet")
        values, intervals, seeds = study.quality.row_fields(r.key)
        values["nfe"] = float(r.nfe)
        spread = {}
        if group is not None and r.key in group.stats:
            values |= {"latency_ms": group.median_ms(r.key), "speedup": group.speedup[r.key]}
            intervals["speedup"] = group.speedup_interval(r.key)
            spread = {"latency_ms": group.iqr_ms(r.key)}
        rows.append(Row(r.key, r.config, r.role, values, intervals, spread, seeds))  # type: ignore[arg-type]
    return rows


def _aims(study: Study, cfg: Config, limit: float, same: int) -> list:
    """Against the same-NFE DDIM control and the baseline (paired FDD ratios), and the speedup."""
    lat, q, k = study.lat["unet"], study.quality, cfg.interval
    vs_ctrl = q.ratio("newton", "ddim-same", "fd_digits")
    quality = q.ratio("newton", "base", "fd_digits")
    speed, speed_ci = lat.speedup["newton"], lat.speedup_interval("newton")
    return [
        aim(
            "beats-same-nfe",
            vs_ctrl.value,
            1.0,
            "<",
            vs_ctrl.interval,
            row="newton",
            against="ddim-same",
            k=k,
            full=same,
        ),
        aim(
            "quality",
            quality.value,
            1.1,
            "<=",
            quality.interval,
            row="newton",
            against="base",
            k=k,
            steps=cfg.steps,
        ),
        aim(
            "speedup",
            speed,
            1.7,
            ">=",
            speed_ci,
            row="newton",
            against="base",
            k=k,
            steps=cfg.steps,
            limit=limit,
        ),
    ]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Step forecasting on the zoo U-Net (and DiT) over paired seeds; figures into ``out``."""
    from reference.harness import quality_note, real_reference_row, save_grid

    study = measure(cfg)
    q, lat = study.quality, study.lat["unet"]
    n, k, w = cfg.steps, cfg.interval, cfg.warmup
    same = next(r.nfe for r in study.runs if r.key == "newton")  # counted in the run
    limit = n / same  # the baseline's N network calls over the forecast's: a bound (see note)
    vs_ctrl = q.ratio("newton", "ddim-same", "fd_digits")
    ctrl_speed = lat.speedup_over("newton", "ddim-same")
    ctrl_lo, ctrl_hi = lat.speedup_interval("newton", against="ddim-same")
    quality = q.ratio("newton", "base", "fd_digits")
    figures = [Figure(f"{SLUG}.png", "fdd-vs-nfe"), Figure(f"{SLUG}-samples.png", "samples")]
    plot_fdd_vs_nfe(study, cfg, out / figures[0].file)
    grid = torch.cat([study.samples[key][:10] for key in GRID_ROWS])
    save_grid(grid, out / figures[1].file, nrow=10)
    aims = _aims(study, cfg, limit, same)
    notes = [
        note("setup", steps=n, n=cfg.samples),
        quality_note(cfg.samples, cfg.seeds),
        note("schedule", warmup=w, k=k, full=same, steps=n, limit=limit),
        latency_note(cfg.repeats, cfg.latency_batch),
        note(
            "same-nfe-control",
            full=same,
            ratio=vs_ctrl.value,
            lo=vs_ctrl.interval[0],
            hi=vs_ctrl.interval[1],
            speed=ctrl_speed,
            speed_lo=ctrl_lo,
            speed_hi=ctrl_hi,
        ),
    ]
    if cfg.dit:
        notes.append(note("dit-hook"))
    if aims[0].state == "missed":
        notes.append(note("forecast-loses", k=k, ratio=vs_ctrl.value, full=same))
    return Measurement(
        settings=settings_of(cfg, scheduler="ddim"),
        metrics=metrics(
            "nfe",
            "latency_ms",
            "speedup",
            "fd_digits",
            "kid_digits",
            "accuracy",
            "diversity",
            "psnr_vs_baseline",
        ),
        rows=[*_rows(study), real_reference_row(cfg.samples)],
        headline=speedup_headline(
            "newton",
            lat,
            limit=limit,
            limit_kind="bound",
            quality_ratio=quality.value,
            quality_interval=quality.interval,
        ),
        aims=aims,
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Every configuration's NFE, mean FDD and latency; the figure and a sample grid."""
    from reference.harness import save_grid

    study = measure(cfg)
    lat = study.lat["unet"]
    print(f"{'row':14} {'NFE':>4} {'FDD':>7} {'ms':>8} {'speedup':>7}")
    for r in study.runs:
        timed = r.key in lat.stats
        ms = f"{lat.median_ms(r.key):8.0f}" if timed else f"{'-':>8}"
        sp = f"{lat.speedup[r.key]:7.2f}" if timed else f"{'-':>7}"
        fd = study.quality.summary(r.key, "fd_digits").value
        print(f"{r.key:14} {r.nfe:4d} {fd:7.2f} {ms} {sp}")
    limit = speedup_limit(cfg.steps, cfg.interval, cfg.warmup)
    print(f"limit N / (w + ceil((N - w) / k)) = {limit:.2f}")
    fig = plot_fdd_vs_nfe(study, cfg, out / f"{SLUG}-demo.png")
    grid = torch.cat([study.samples[key][:10] for key in GRID_ROWS])
    path = save_grid(grid, out / f"{SLUG}-demo-samples.png", nrow=10)
    print(f"{fig}\n{path} (rows: {', '.join(GRID_ROWS)})")
