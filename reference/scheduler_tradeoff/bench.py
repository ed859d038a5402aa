"""Benchmark and demo of [`reference.scheduler_tradeoff`][reference.scheduler_tradeoff] (the
technique contract of `reference.harness.cli`).

Rows, over paired noise seeds: DDIM at the baseline NFE (baseline); DPM-Solver++(2M) and UniPC at
the headline NFE (technique); DDIM (the matched-NFE control), Euler and DDPM at the headline NFE
and DDIM there without x0 clipping (control); our minimal DDIM and DPM-Solver++(2M) with their
largest difference to diffusers (technique); DDPM with all 1000 training steps on fewer samples
and seeds (reference); the class-balanced real digits (reference). The sweep (every scheduler at
every NFE, on the first seed) is in the settings and the figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from reference.harness.cli import Option, at_least, check_seeds, int_tuple, name_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)
from reference.harness.seeds import N_QUALITY, SEEDS

from .figures import plot_tradeoff, save_sample_grid
from .schedulers import LABELS, SCHEDULERS, TIMESTEP_SPACING, make_scheduler
from .sweep import Runs, Study, measure, nfe_to_match, row_specs, sweep

SLUG = "scheduler-tradeoff"
NFE_GRID: tuple[int, ...] = (1, 2, 4, 8, 10, 15, 20, 25, 50)
ROLES = {"ddim_base": "baseline", "dpmpp2m": "technique", "unipc": "technique"}


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    samples: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    nfe_grid: tuple[int, ...] = NFE_GRID
    schedulers: tuple[str, ...] = tuple(SCHEDULERS)
    headline_nfe: int = 10
    baseline_nfe: int = 50
    ref_samples: int = 64
    ref_seeds: int = 2
    ref_steps: int = 1000
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 1

    def validate(self) -> None:
        unknown = [s for s in self.schedulers if s not in SCHEDULERS]
        if unknown:
            raise ValueError(
                f"--schedulers: unknown scheduler {unknown[0]!r}; choose from "
                f"{', '.join(SCHEDULERS)}"
            )
        if "ddim" not in self.schedulers or "dpmpp2m" not in self.schedulers:
            raise ValueError(f"--schedulers must include ddim and dpmpp2m, got {self.schedulers}")
        if len(set(self.schedulers)) != len(self.schedulers):
            raise ValueError(f"--schedulers repeats a name: {self.schedulers}")
        bad = [k for k in self.nfe_grid if not 1 <= k <= 1000]
        if bad or not self.nfe_grid:
            raise ValueError(f"--nfe-grid must be in [1, 1000], got {bad[0] if bad else 'none'}")
        if len(set(self.nfe_grid)) != len(self.nfe_grid):
            raise ValueError(f"--nfe-grid repeats a value: {self.nfe_grid}")
        if not 1 <= self.headline_nfe < self.baseline_nfe:
            raise ValueError(
                f"--headline-nfe must be >= 1 and below --baseline-nfe {self.baseline_nfe}, "
                f"got {self.headline_nfe}"
            )
        for name, k in (
            ("--headline-nfe", self.headline_nfe),
            ("--baseline-nfe", self.baseline_nfe),
        ):
            if k not in self.nfe_grid:
                raise ValueError(f"{name} {k} is not one of --nfe-grid {self.nfe_grid}")
        if self.samples < 20:
            raise ValueError(f"--samples must be >= 20 (two per class), got {self.samples}")
        if not 20 <= self.ref_samples <= self.samples:
            raise ValueError(
                f"--ref-samples must be in [20, --samples {self.samples}], got {self.ref_samples}"
            )
        check_seeds(self.seeds)
        if not 2 <= self.ref_seeds <= len(self.seeds):
            raise ValueError(
                f"--ref-seeds must be in [2, {len(self.seeds)} seeds], got {self.ref_seeds}"
            )
        if not 1 <= self.ref_steps <= 1000:
            raise ValueError(f"--ref-steps must be in [1, 1000], got {self.ref_steps}")
        at_least(self, latency_batch=1, repeats=2, warmup=0)


FULL = Config()
QUICK = Config(
    samples=20,
    seeds=(0, 1),
    nfe_grid=(1, 2, 4),
    headline_nfe=2,
    baseline_nfe=4,
    ref_samples=20,
    ref_steps=10,
    latency_batch=4,
    repeats=2,
    warmup=0,
)
DEMO = Config(samples=64, seeds=(0, 1), nfe_grid=(1, 2, 5, 10, 20), headline_nfe=5, baseline_nfe=20)
OPTIONS = (
    Option("samples"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("nfe_grid", int_tuple, "N,N,..."),
    Option("schedulers", name_tuple, "NAME,NAME,..."),
    Option("headline_nfe"),
    Option("baseline_nfe"),
    Option("ref_samples"),
    Option("ref_seeds"),
    Option("ref_steps"),
    Option("latency_batch"),
    Option("repeats"),
)


def _rows(study: Study, cfg: Config) -> list[Row]:
    """Every row's paired quality; the timed ones with latency and speedup (and its interval)."""
    from reference.harness import real_reference_row

    lat, q = study.lat, study.table
    rows = []
    for key, (name, nfe, clip) in row_specs(cfg).items():
        values, intervals, seeds = q.row_fields(key)
        values["nfe"] = float(study.nfe[key])
        spread = {}
        if key in study.timed:
            values["latency_ms"], values["speedup"] = lat.median_ms(key), lat.speedup[key]
            intervals["speedup"], spread["latency_ms"] = lat.speedup_interval(key), lat.iqr_ms(key)
        method = name if clip else f"{name}-unclipped"
        row_id = f"{name}-{nfe}" + ("" if clip else "-unclipped")
        role = ROLES.get(key, "control")
        config = {"method": method, "nfe": nfe}
        rows.append(Row(row_id, config, role, values, intervals, spread, seeds))  # type: ignore[arg-type]
    for name, o in study.ours.items():
        rows.append(
            Row(
                f"minimal-{name}-{o['nfe']}",
                {"method": f"minimal-{name}", "nfe": o["nfe"]},
                "technique",
                {"nfe": float(o["nfe"]), "max_diff": o["step_diff"]},
            )
        )
    values, intervals, seeds = study.ref.row_fields("ddpm_ref")
    values["nfe"] = float(cfg.ref_steps)
    n, k = cfg.ref_samples, cfg.ref_seeds
    config = {"method": "ddpm-reference", "nfe": cfg.ref_steps, "samples": n, "seeds": k}
    rows.append(Row(f"ddpm-{cfg.ref_steps}", config, "reference", values, intervals, seeds=seeds))
    return [*rows, real_reference_row(cfg.samples)]


def _notes(study: Study, cfg: Config, target: float) -> list:
    """Setup, protocols, the shared settings, the DDPM reference, the sweep, ours vs diffusers."""
    from reference.harness import quality_note

    h, b, ours = cfg.headline_nfe, cfg.baseline_nfe, study.ours
    abar_last = float(make_scheduler("ddim").alphas_cumprod[-1])
    sigma_max = math.sqrt((1.0 - abar_last) / abar_last)  # Euler's first sigma, at t = 999
    ref = study.ref.ratio("ddpm_ref", "ddim_ref", "fd_digits")
    reach = [nfe_to_match(study.points, s, target) for s in cfg.schedulers]
    return [
        note("setup", n=cfg.samples, seeds=len(cfg.seeds), seed=cfg.seeds[0]),
        quality_note(cfg.samples, cfg.seeds),
        note("shared-settings", nfe=h, sigma_max=sigma_max, x0_error=1e-3 * sigma_max),
        note(
            "ddpm-reference",
            ref_steps=cfg.ref_steps,
            ref_n=cfg.ref_samples,
            ref_seeds=cfg.ref_seeds,
            baseline_nfe=b,
            ratio=ref.value,
            lo=ref.interval[0],
            hi=ref.interval[1],
            n=cfg.samples,
        ),
        note(
            "nfe-to-match",
            baseline_nfe=b,
            target=target,
            grid=list(cfg.nfe_grid),
            seed=cfg.seeds[0],
            schedulers=list(cfg.schedulers),
            reach=reach,
        ),
        note(
            "latency",
            baseline_nfe=b,
            headline_nfe=h,
            limit=study.nfe["ddim_base"] / study.nfe["dpmpp2m"],
            n=cfg.samples,
        ),
        latency_note(cfg.repeats, cfg.latency_batch),
        note(
            "ours-vs-diffusers",
            ddim_step=ours["ddim"]["step_diff"],
            dpm_step=ours["dpmpp2m"]["step_diff"],
            ddim_sample=ours["ddim"]["sample_diff"],
            dpm_sample=ours["dpmpp2m"]["sample_diff"],
        ),
    ]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """The scheduler rows over paired seeds, the sweep and the controls; figures into ``out``."""
    from reference.harness import real_reference

    study = measure(cfg)
    q, h, b = study.table, cfg.headline_nfe, cfg.baseline_nfe
    quality = q.ratio("dpmpp2m", "ddim_base", "fd_digits")
    vs_ctrl = q.ratio("dpmpp2m", "ddim", "fd_digits")
    target = 1.1 * study.point("ddim", b).fd_digits  # on the sweep's seed
    figures = [Figure(f"{SLUG}.png", "tradeoff"), Figure(f"{SLUG}-samples.png", "samples")]
    levels = {
        f"real digits (n={cfg.samples})": real_reference(cfg.samples).fd_mean,
        f"DDIM {b} x 1.1": target,
    }
    plot_tradeoff(study.points, out / figures[0].file, levels)
    save_sample_grid(study.points, h, out / figures[1].file)
    per = {s: [p for p in study.points if p.scheduler == s] for s in cfg.schedulers}
    return Measurement(
        settings=settings_of(
            cfg,
            timestep_spacing=TIMESTEP_SPACING,
            sweep_seed=cfg.seeds[0],
            sweep_fd_digits=[[round(p.fd_digits, 4) for p in ps] for ps in per.values()],
            sweep_seconds=[[round(p.seconds, 3) for p in ps] for ps in per.values()],
        ),
        metrics=metrics(
            "nfe",
            "latency_ms",
            "speedup",
            "fd_digits",
            "kid_digits",
            "accuracy",
            "diversity",
            max_diff=Metric("", "lower"),
        ),
        rows=_rows(study, cfg),
        headline=speedup_headline(
            f"dpmpp2m-{h}",
            study.lat,
            "dpmpp2m",
            limit=study.nfe["ddim_base"] / study.nfe["dpmpp2m"],  # counted NFE: an estimate
            limit_kind="estimate",
            quality_ratio=quality.value,
            quality_interval=quality.interval,
        ),
        aims=[
            aim(
                "quality",
                quality.value,
                1.1,
                "<=",
                quality.interval,
                row=f"dpmpp2m-{h}",
                against=f"ddim-{b}",
                nfe=h,
                baseline_nfe=b,
            ),
            aim(
                "quality-vs-control",
                vs_ctrl.value,
                1.0,
                "<=",
                vs_ctrl.interval,
                row=f"dpmpp2m-{h}",
                against=f"ddim-{h}",
                nfe=h,
            ),
        ],
        notes=_notes(study, cfg, target),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """FDD and seconds of every scheduler at every NFE of ``cfg`` (first seed); the figures."""
    from reference import zoo
    from reference.harness.sampling import frozen

    with torch.inference_mode():
        points = sweep(Runs(frozen(zoo.load_teacher())), cfg)
    header = " ".join(f"{k:>7}" for k in cfg.nfe_grid)
    for what in ("fd_digits", "seconds"):
        print(f"{what:18} {header}")
        for s in cfg.schedulers:
            vals = [getattr(p, what) for p in points if p.scheduler == s]
            print(f"{LABELS[s]:18} " + " ".join(f"{v:7.2f}" for v in vals))
    fig = plot_tradeoff(points, out / f"{SLUG}-demo.png", {})
    grid = save_sample_grid(points, cfg.headline_nfe, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(cfg.schedulers)}; NFE {cfg.headline_nfe})")
