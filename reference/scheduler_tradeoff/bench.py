"""Benchmark and demo of :mod:`reference.scheduler_tradeoff` (the technique contract of
:mod:`reference.harness.cli`).

Rows: DDIM at the baseline NFE (baseline); DPM-Solver++(2M) and UniPC at the headline NFE
(technique); DDIM, Euler and DDPM at the headline NFE and DDIM without x0 clipping (control);
our minimal DDIM and DPM-Solver++(2M) with their largest step difference to diffusers
(technique); DDPM with all 1000 training steps on fewer samples (reference). The whole sweep (every
scheduler at every NFE) is in the settings and the figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from reference.harness.cli import Option, at_least, int_tuple, name_tuple
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

from .figures import plot_tradeoff, save_sample_grid
from .schedulers import LABELS, SCHEDULERS, TIMESTEP_SPACING, make_scheduler
from .sweep import Study, measure, nfe_to_match, sweep

SLUG = "scheduler-tradeoff"
NFE_GRID: tuple[int, ...] = (1, 2, 4, 8, 10, 15, 20, 25, 50, 100)
ROLES = {"ddim_base": "baseline", "dpmpp2m": "technique", "unipc": "technique"}


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    samples: int = 128
    nfe_grid: tuple[int, ...] = NFE_GRID
    schedulers: tuple[str, ...] = tuple(SCHEDULERS)
    headline_nfe: int = 10
    baseline_nfe: int = 50
    ref_samples: int = 64
    ref_steps: int = 1000
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 1
    seed: int = 0

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
        if self.samples < 2:
            raise ValueError(f"--samples must be >= 2 (for the FDD), got {self.samples}")
        if not 2 <= self.ref_samples <= self.samples:
            raise ValueError(
                f"--ref-samples must be in [2, --samples {self.samples}], got {self.ref_samples}"
            )
        if not 1 <= self.ref_steps <= 1000:
            raise ValueError(f"--ref-steps must be in [1, 1000], got {self.ref_steps}")
        at_least(self, latency_batch=1, repeats=1)
        if self.warmup < 0:
            raise ValueError(f"warm-up rounds must be >= 0, got {self.warmup}")


FULL = Config()
QUICK = Config(
    samples=12,
    nfe_grid=(1, 2, 4),
    headline_nfe=2,
    baseline_nfe=4,
    ref_samples=6,
    ref_steps=10,
    latency_batch=4,
    repeats=2,
    warmup=0,
)
DEMO = Config(samples=64, nfe_grid=(1, 2, 5, 10, 20), headline_nfe=5, baseline_nfe=20)
OPTIONS = (
    Option("samples"),
    Option("nfe_grid", int_tuple, "N,N,..."),
    Option("schedulers", name_tuple, "NAME,NAME,..."),
    Option("headline_nfe"),
    Option("baseline_nfe"),
    Option("ref_samples"),
    Option("ref_steps"),
    Option("latency_batch"),
    Option("repeats"),
)


def _rows(study: Study, cfg: Config) -> list[Row]:
    lat, h, b = study.lat, cfg.headline_nfe, cfg.baseline_nfe
    target = 1.1 * study.point("ddim", b).fd_digits
    rows = []
    for key, (name, nfe) in study.timed.items():
        values = {
            "nfe": float(nfe),
            "latency_ms": lat.median_ms(key),
            "speedup": lat.speedup[key],
            "fd_digits": study.point(name, nfe).fd_digits,
        }
        if key != "ddim_base":
            reach = nfe_to_match(study.points, name, target)
            values["nfe_to_match"] = None if reach is None else float(reach)
        rows.append(
            Row(
                f"{name}-{nfe}",
                {"method": name, "nfe": nfe},
                ROLES.get(key, "control"),  # type: ignore[arg-type]
                values,
                intervals={"speedup": lat.speedup_interval(key)},
                spread={"latency_ms": lat.iqr_ms(key)},
            )
        )
    if "ddpm" in cfg.schedulers:
        reach = nfe_to_match(study.points, "ddpm", target)
        values = {"nfe": float(h), "fd_digits": study.point("ddpm", h).fd_digits}
        values["nfe_to_match"] = None if reach is None else float(reach)
        rows.append(Row(f"ddpm-{h}", {"method": "ddpm", "nfe": h}, "control", values))
    rows.append(
        Row(
            f"ddim-{h}-unclipped",
            {"method": "ddim-unclipped", "nfe": h},
            "control",
            {"nfe": float(h), "fd_digits": study.ref["ddim_unclipped"]},
        )
    )
    for name, o in study.ours.items():
        rows.append(
            Row(
                f"minimal-{name}-{o['nfe']}",
                {"method": f"minimal-{name}", "nfe": o["nfe"]},
                "technique",
                {"nfe": float(o["nfe"]), "fd_digits": o["fd_digits"], "max_diff": o["step_diff"]},
            )
        )
    rows.append(
        Row(
            f"ddpm-{cfg.ref_steps}",
            {"method": "ddpm-reference", "nfe": cfg.ref_steps, "samples": cfg.ref_samples},
            "reference",
            {"nfe": float(cfg.ref_steps), "fd_digits": study.ref["ddpm"]},
        )
    )
    return rows


def benchmark(cfg: Config, out: Path) -> Measurement:
    """The scheduler sweep and its controls; figures into ``out``."""
    from reference.harness import fdd_floor

    study = measure(cfg)
    lat, ours, ref = study.lat, study.ours, study.ref
    h, b = cfg.headline_nfe, cfg.baseline_nfe
    base, tech = study.point("ddim", b), study.point("dpmpp2m", h)
    q_ratio = tech.fd_digits / base.fd_digits
    floor = fdd_floor(cfg.samples)
    figures = [Figure(f"{SLUG}.png", "tradeoff"), Figure(f"{SLUG}-samples.png", "samples")]
    levels = {f"real digits (n={cfg.samples})": floor, f"DDIM {b} x 1.1": 1.1 * base.fd_digits}
    plot_tradeoff(study.points, out / figures[0].file, levels)
    save_sample_grid(study.points, h, out / figures[1].file)
    abar_last = float(make_scheduler("ddim").alphas_cumprod[-1])
    sigma_max = math.sqrt((1.0 - abar_last) / abar_last)  # Euler's first sigma, at t = 999
    notes = [
        note("setup", n=cfg.samples),
        note("fdd-at-n", n=cfg.samples, floor=floor),
        note("shared-settings", nfe=h, sigma_max=sigma_max, x0_error=1e-3 * sigma_max),
        note(
            "ddpm-reference",
            ref_steps=cfg.ref_steps,
            ref_n=cfg.ref_samples,
            ddpm=ref["ddpm"],
            baseline_nfe=b,
            ddim=ref["ddim_base"],
            n=cfg.samples,
            floor=fdd_floor(cfg.ref_samples),
        ),
        note("nfe-to-match", baseline_nfe=b, target=1.1 * base.fd_digits, grid=list(cfg.nfe_grid)),
        note("latency", baseline_nfe=b, headline_nfe=h, n=cfg.samples),
        latency_note(cfg.repeats, cfg.latency_batch),
        note(
            "ours-vs-diffusers",
            ddim_step=ours["ddim"]["step_diff"],
            dpm_step=ours["dpmpp2m"]["step_diff"],
            ddim_sample=ours["ddim"]["sample_diff"],
            dpm_sample=ours["dpmpp2m"]["sample_diff"],
        ),
    ]
    aims = [
        aim("quality", q_ratio, 1.1, "<=", nfe=h, baseline_nfe=b),
        aim("ddim-matches-diffusers", ours["ddim"]["step_diff"], 1e-5, "<=", nfe=b),
        aim("dpmpp2m-matches-diffusers", ours["dpmpp2m"]["step_diff"], 1e-5, "<=", nfe=h),
    ]
    per = {s: [p for p in study.points if p.scheduler == s] for s in cfg.schedulers}
    return Measurement(
        settings=settings_of(
            cfg,
            timestep_spacing=TIMESTEP_SPACING,
            sweep_fd_digits=[[round(p.fd_digits, 4) for p in ps] for ps in per.values()],
            sweep_seconds=[[round(p.seconds, 3) for p in ps] for ps in per.values()],
        ),
        metrics=metrics(
            "nfe",
            "latency_ms",
            "speedup",
            "fd_digits",
            max_diff=Metric("", "lower"),
            nfe_to_match=Metric("", "lower"),
        ),
        rows=_rows(study, cfg),
        headline=speedup_headline(
            f"dpmpp2m-{h}", lat, "dpmpp2m", limit=b / h, limit_kind="bound", quality_ratio=q_ratio
        ),
        aims=aims,
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """FDD and seconds of every scheduler at every NFE of ``cfg``; the figure and a grid."""
    from reference import zoo

    unet = zoo.load_teacher().eval()
    with torch.inference_mode():
        points = sweep(unet, cfg)
    header = " ".join(f"{k:>7}" for k in cfg.nfe_grid)
    for what in ("fd_digits", "seconds"):
        print(f"{what:18} {header}")
        for s in cfg.schedulers:
            vals = [getattr(p, what) for p in points if p.scheduler == s]
            print(f"{LABELS[s]:18} " + " ".join(f"{v:7.2f}" for v in vals))
    fig = plot_tradeoff(points, out / f"{SLUG}-demo.png", {})
    grid = save_sample_grid(points, cfg.headline_nfe, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(cfg.schedulers)}; NFE {cfg.headline_nfe})")
