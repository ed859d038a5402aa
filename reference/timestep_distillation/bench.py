"""Benchmark and demo of :mod:`reference.timestep_distillation` (the technique contract of
:mod:`reference.harness.cli`).

Rows: the zoo teacher with diffusers' DDIM at 64 steps (baseline), the distilled students at 8, 4
and 2 steps on their nested grids (technique), the teacher's DDIM on exactly the students'
timesteps (control), and the teacher's DDIM with diffusers' default spacing at the headline step
count (reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from reference.harness.cli import Option, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import Figure, Measurement, Row, aim, metrics, note, settings_of
from reference.harness.sampling import EpsFn

from . import few_step
from .core import BASE_STEPS, GridDDIMScheduler
from .train import PLAN, student_steps

SLUG = "timestep-distillation"
STUDENTS = {student_steps(name): name for name in PLAN}
"""Sampling steps -> zoo name of the committed students (8, 4, 2)."""
QUALITY_AIM = 1.5
CONTROL_AIM = 0.75
"""The student must beat the teacher's DDIM at its own steps by a clear margin. FDD cannot fall
below the real-data floor (about 9.3 at n = 300), which bounds this ratio from below."""
SPEED_AIM = 0.8


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
QUICK = Config(n=20, latency_batch=4, repeats=2, warmup=0, steps=(4,))
DEMO = Config(n=100, latency_batch=8, repeats=2, warmup=1, steps=(4,))
OPTIONS = (
    *few_step.SIZE_OPTIONS,
    Option("steps", int_tuple, "N,N,..."),
    Option("headline_steps"),
)


def load_student(steps: int) -> torch.nn.Module:
    """The committed zoo student distilled for ``steps`` DDIM steps (8, 4 or 2)."""
    from reference import zoo

    if steps not in STUDENTS:
        raise ValueError(f"no student for {steps} steps; distilled students: {sorted(STUDENTS)}")
    return zoo.load(STUDENTS[steps])


def make_runs(cfg: Config, teacher: EpsFn, students: dict[int, EpsFn]) -> few_step.MakeRuns:
    """Teacher DDIM-64, each student and the teacher on its grid, diffusers' re-spaced DDIM."""
    from reference import zoo
    from reference.harness import sample

    config, h = zoo.teacher_scheduler_config(), cfg.headline_steps

    def grid(eps: EpsFn, noise, labels, steps: int) -> Callable[[], torch.Tensor]:  # type: ignore[no-untyped-def]
        return lambda: sample(eps, GridDDIMScheduler(config), noise, steps=steps, labels=labels)

    def runs(noise, labels, wrap) -> few_step.Runs:  # type: ignore[no-untyped-def]
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
    return [
        Row(
            key,
            config,
            role,  # type: ignore[arg-type]
            few_step.values(key, s, lat),
            intervals={} if key == "teacher64" else {"speedup": lat.speedup_interval(key)},
            spread={"latency_ms": lat.iqr_ms(key)},
        )
        for key, (config, role) in spec.items()
    ]


def _curve(cfg: Config, fdd: dict[str, float], path: Path) -> None:
    from reference.harness import curve_plot, fdd_floor

    steps = sorted(cfg.steps)
    curve_plot(
        steps,
        {
            "distilled student": [fdd[f"student{s}"] for s in steps],
            "teacher DDIM, same timesteps": [fdd[f"teacher{s}"] for s in steps],
        },
        path,
        xlabel="sampling steps (NFE)",
        ylabel="FDD (lower is better)",
        logx=True,
        hlines={f"teacher DDIM {BASE_STEPS}": fdd["teacher64"], "real digits": fdd_floor(cfg.n)},
    )


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Teacher DDIM-64 vs the distilled students vs the teacher's DDIM at the students' steps."""
    from reference import zoo
    from reference.harness import compare_latency, fdd_floor

    runs = make_runs(cfg, *_models(cfg))
    s = few_step.sample_all(runs, cfg.n, cfg.seed, (1, 16, 16))
    timed = few_step.timed_runs(runs, cfg.latency_batch, cfg.seed, (1, 16, 16))
    with torch.inference_mode():
        lat = compare_latency(timed, repeats=cfg.repeats, warmup=cfg.warmup)

    h = cfg.headline_steps
    head = f"student{h}"
    quality_ratio = s.fdd[head] / s.fdd["teacher64"]
    control_ratio = s.fdd[head] / s.fdd[f"teacher{h}"]
    nfe_ratio = s.nfe["teacher64"] / s.nfe[head]
    distil_s, teacher_s = few_step.train_seconds(*PLAN), few_step.train_seconds("teacher")
    leading = zoo.teacher_scheduler()
    leading.set_timesteps(h)

    figures = [Figure(f"{SLUG}.png", "quality-vs-steps"), Figure(f"{SLUG}-samples.png", "samples")]
    _curve(cfg, s.fdd, out / figures[0].file)
    few_step.save_samples(s.images, ["teacher64", head, f"teacher{h}"], out / figures[1].file)

    notes = [
        note("fdd-at-n", n=cfg.n, floor=fdd_floor(cfg.n)),
        latency_note(cfg.repeats, cfg.latency_batch),
        note("same-architecture", steps=h, nfe_ratio=nfe_ratio),
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
    aims = [
        aim("quality", quality_ratio, QUALITY_AIM, "<=", steps=h, base_steps=BASE_STEPS),
        aim("beats-control", control_ratio, CONTROL_AIM, "<=", steps=h),
        aim(
            "speedup",
            lat.speedup[head],
            SPEED_AIM * nfe_ratio,
            ">=",
            interval=lat.speedup_interval(head),
            steps=h,
            share=SPEED_AIM,
            nfe_ratio=nfe_ratio,
        ),
    ]
    return Measurement(
        settings=settings_of(
            cfg,
            base_steps=BASE_STEPS,
            guidance_scale=1.0,
            distillation_train_seconds=round(distil_s, 1),
            teacher_train_seconds=round(teacher_s, 1),
        ),
        metrics=metrics("latency_ms", "speedup", "fd_digits", "accuracy", "nfe"),
        rows=_rows(cfg, s, lat),
        # NFE ratio as an estimate: the baseline's diffusers scheduler costs more per step
        headline=few_step.headline(head, lat, nfe_ratio, quality_ratio),
        aims=aims,
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """The headline student against its teacher: a table and a sample grid."""
    h, shape = cfg.headline_steps, (1, 16, 16)
    runs = make_runs(cfg, *_models(cfg))
    titles = {
        "teacher64": f"teacher DDIM {BASE_STEPS}",
        f"student{h}": f"student {h} steps",
        f"teacher{h}": f"teacher DDIM {h} (same timesteps)",
    }
    timed = few_step.timed_runs(runs, cfg.latency_batch, cfg.seed, shape)
    few_step.run_demo(runs, timed, titles, cfg, shape, out / f"{SLUG}-demo.png")
