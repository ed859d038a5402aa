"""Benchmark and demo of [`reference.timestep_distillation`][reference.timestep_distillation] (the
technique contract of `reference.harness.cli`).

Rows: the zoo teacher with diffusers' DDIM at 64 steps (baseline), the distilled students at 8, 4
and 2 steps on their nested grids (technique), the teacher's DDIM on exactly the students'
timesteps (control: the same network at the same NFE, so the same cost), the teacher's DDIM with
diffusers' default spacing at the headline step count and class-balanced real digits
(references). Quality over paired noise seeds, latency interleaved on one batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from reference.harness.cli import Option, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Aim,
    Figure,
    Measurement,
    Row,
    aim,
    metrics,
    note,
    settings_of,
)
from reference.harness.sampling import IMAGE_SHAPE, EpsFn

from . import few_step
from .core import BASE_STEPS, GridDDIMScheduler
from .students import STUDENTS, load_student
from .train import PLAN

SLUG = "timestep-distillation"
"""Sampling steps -> zoo name of the committed students (8, 4, 2)."""
CONTROL_AIM = 1.0
"""A student must beat the teacher's DDIM at its own steps: paired FDD ratio below 1."""
QUALITY_TOLERANCE = 1.1
"""The headline student keeps the FDD of the teacher's DDIM-64 within 10% (paired ratio)."""


@dataclass(frozen=True)
class Config(few_step.Sizes):
    """Sizes of a benchmark or demonstration run, and the students it measures."""

    steps: tuple[int, ...] = (8, 4, 2)
    headline_steps: int = 4

    def validate(self) -> None:
        super().validate()
        bad = [s for s in self.steps if s not in STUDENTS]
        if not self.steps or bad:
            raise ValueError(
                f"--steps must be distilled student steps {sorted(STUDENTS)}, got {self.steps}"
            )
        if self.headline_steps not in self.steps:
            raise ValueError(
                f"--headline-steps {self.headline_steps} is not one of --steps {self.steps}"
            )


FULL = Config()
QUICK = Config(n=20, seeds=(0, 1), latency_batch=4, repeats=2, warmup=0, steps=(4,))
DEMO = Config(n=100, seeds=(0, 1), latency_batch=8, repeats=2, warmup=1, steps=(4,))
OPTIONS = (
    *few_step.SIZE_OPTIONS,
    Option("steps", int_tuple, "N,N,..."),
    Option("headline_steps"),
)


def make_runs(cfg: Config, teacher: EpsFn, students: dict[int, EpsFn]) -> few_step.MakeRuns:
    """Teacher DDIM-64, each student and the teacher on its grid, diffusers' re-spaced DDIM (all
    deterministic: the seed only picks the noise)."""
    from reference import zoo
    from reference.harness import sample

    config, h = zoo.teacher_scheduler_config(), cfg.headline_steps

    def grid(eps: EpsFn, noise, labels, steps: int) -> Callable[[], torch.Tensor]:  # type: ignore[no-untyped-def]
        return lambda: sample(eps, GridDDIMScheduler(config), noise, steps=steps, labels=labels)

    def runs(noise, labels, seed, wrap) -> few_step.Runs:  # type: ignore[no-untyped-def]
        base = wrap("teacher64", teacher)
        out = {
            "teacher64": lambda: sample(
                base, zoo.teacher_scheduler(), noise, steps=BASE_STEPS, labels=labels
            )
        }
        for s in cfg.steps:
            out[f"student{s}"] = grid(wrap(f"student{s}", students[s]), noise, labels, s)
            out[f"teacher{s}"] = grid(wrap(f"teacher{s}", teacher), noise, labels, s)
        ref = wrap("diffusers", teacher)
        out["diffusers"] = lambda: sample(
            ref, zoo.teacher_scheduler(), noise, steps=h, labels=labels
        )
        return out

    return runs


def _models(cfg: Config) -> tuple[EpsFn, dict[int, EpsFn]]:
    from reference import zoo
    from reference.harness import model_eps_fn

    students = {s: model_eps_fn(load_student(s)) for s in cfg.steps}
    return model_eps_fn(zoo.load_teacher()), students


def _rows(cfg: Config, s: few_step.Sampled, lat) -> list[Row]:  # type: ignore[no-untyped-def]
    from reference.harness import real_reference_row

    spec: dict[str, tuple[dict[str, object], str]] = {
        "teacher64": ({"method": "teacher-ddim", "steps": BASE_STEPS}, "baseline")
    }
    for n in cfg.steps:
        spec[f"student{n}"] = ({"method": "student", "steps": n}, "technique")
    for n in cfg.steps:
        spec[f"teacher{n}"] = ({"method": "teacher-grid-ddim", "steps": n}, "control")
    spec["diffusers"] = (
        {"method": "teacher-ddim-leading", "steps": cfg.headline_steps},
        "reference",
    )
    rows = [few_step.row(key, config, role, s, lat) for key, (config, role) in spec.items()]
    return [*rows, real_reference_row(cfg.n)]


def _curve(cfg: Config, s: few_step.Sampled, path: Path) -> None:
    from reference.harness import curve_plot, real_reference

    steps = sorted(cfg.steps)

    def fdd(key: str) -> float:
        return s.table.summary(key, "fd_digits").value

    curve_plot(
        steps,
        {
            "distilled student": [fdd(f"student{n}") for n in steps],
            "teacher DDIM, same timesteps": [fdd(f"teacher{n}") for n in steps],
        },
        path,
        xlabel="sampling steps (NFE)",
        ylabel=f"FDD, mean over {len(cfg.seeds)} seeds (lower is better)",
        logx=True,
        hlines={
            f"teacher DDIM {BASE_STEPS}": fdd("teacher64"),
            "real digits": real_reference(cfg.n).fd_mean,
        },
    )


def _aims(cfg: Config, s: few_step.Sampled) -> list[Aim]:
    """Each student against the teacher's DDIM at the same steps (the claim of distillation),
    and the headline student against the teacher's DDIM-64 (within a tolerance)."""
    aims = []
    for n in sorted(cfg.steps, reverse=True):
        r = s.table.ratio(f"student{n}", f"teacher{n}", "fd_digits")
        aims.append(
            aim(
                "beats-control",
                r.value,
                CONTROL_AIM,
                "<",
                interval=r.interval,
                row=f"student{n}",
                against=f"teacher{n}",
                steps=n,
            )
        )
    h = cfg.headline_steps
    r = s.table.ratio(f"student{h}", "teacher64", "fd_digits")
    aims.append(
        aim(
            "quality",
            r.value,
            QUALITY_TOLERANCE,
            "<=",
            interval=r.interval,
            row=f"student{h}",
            against="teacher64",
            steps=h,
            base_steps=BASE_STEPS,
        )
    )
    return aims


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Teacher DDIM-64 vs the distilled students vs the teacher's DDIM at the students' steps."""
    from reference import zoo
    from reference.harness import compare_latency, quality_note

    runs = make_runs(cfg, *_models(cfg))
    s = few_step.sample_seeds(runs, cfg.n, cfg.seeds, IMAGE_SHAPE)
    timed = few_step.timed_runs(runs, cfg.latency_batch, cfg.seeds, IMAGE_SHAPE)
    with torch.inference_mode():
        lat = compare_latency(timed, repeats=cfg.repeats, warmup=cfg.warmup)

    h = cfg.headline_steps
    head = f"student{h}"
    nfe_ratio = s.nfe["teacher64"] / s.nfe[head]  # (counted) network calls: the work done
    distil_s, teacher_s = few_step.train_seconds(*PLAN), few_step.train_seconds("teacher")
    leading = zoo.teacher_scheduler()
    leading.set_timesteps(h)

    figures = [Figure(f"{SLUG}.png", "quality-vs-steps"), Figure(f"{SLUG}-samples.png", "samples")]
    _curve(cfg, s, out / figures[0].file)
    few_step.save_samples(s.images, ["teacher64", head, f"teacher{h}"], out / figures[1].file)
    same_lo, same_hi = lat.speedup_interval(head, against=f"teacher{h}")  # same rounds
    notes = [
        quality_note(cfg.n, cfg.seeds),
        latency_note(cfg.repeats, cfg.latency_batch),
        note(
            "same-architecture",
            steps=h,
            base_steps=BASE_STEPS,
            nfe_ratio=nfe_ratio,
            same=lat.speedup_over(head, f"teacher{h}"),
            same_lo=same_lo,
            same_hi=same_hi,
        ),
        note(
            "distillation-cost",
            base=BASE_STEPS,
            final=min(STUDENTS),
            rounds=int(math.log2(BASE_STEPS // min(STUDENTS))),
            distil=distil_s,
            teacher=teacher_s,
            ratio=distil_s / teacher_s,
        ),
        note("x-space-student"),
        note("nested-grid", steps=h, start=int(leading.timesteps[0])),
    ]
    return Measurement(
        settings=settings_of(
            cfg,
            base_steps=BASE_STEPS,
            guidance_scale=1.0,
            distillation_train_seconds=round(distil_s, 1),
            teacher_train_seconds=round(teacher_s, 1),
        ),
        metrics=metrics("latency_ms", "speedup", "fd_digits", "kid_digits", "accuracy", "nfe"),
        rows=_rows(cfg, s, lat),
        # the NFE ratio as an estimate: the baseline's diffusers scheduler costs more per step
        headline=few_step.headline(head, lat, nfe_ratio, s, "teacher64"),
        aims=_aims(cfg, s),
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """The headline student against its teacher: a table and a sample grid."""
    h = cfg.headline_steps
    runs = make_runs(cfg, *_models(cfg))
    titles = {
        "teacher64": f"teacher DDIM {BASE_STEPS}",
        f"student{h}": f"student {h} steps",
        f"teacher{h}": f"teacher DDIM {h} (same timesteps)",
    }
    timed = few_step.timed_runs(runs, cfg.latency_batch, cfg.seeds, IMAGE_SHAPE)
    few_step.run_demo(runs, timed, titles, cfg, IMAGE_SHAPE, out / f"{SLUG}-demo.png")
