"""Benchmark and command line (``python -m reference.timestep_distillation``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from reference import zoo
from reference.harness import (
    BenchmarkResult,
    EpsFn,
    Headline,
    NFECounter,
    Row,
    aim,
    class_accuracy,
    class_labels,
    compare_latency,
    count_nfe,
    curve_plot,
    fdd_floor,
    frechet_digits_distance,
    make_noise,
    metrics,
    model_eps_fn,
    output_dir,
    provenance,
    sample,
    save_grid,
)
from reference.zoo import ZooError

from .core import BASE_STEPS, GridDDIMScheduler
from .train import PLAN, student_steps

SLUG = "timestep-distillation"
MODULE = "reference.timestep_distillation"
STUDENTS = {student_steps(name): name for name in PLAN}
"""Sampling steps -> zoo name of the committed students (8, 4, 2)."""
HEADLINE_STEPS = 4
QUALITY_AIM = 1.5
CONTROL_AIM = 0.75
"""The 4-step student must beat the teacher's 4-step DDIM by a clear margin. FDD cannot fall
below the real-data floor (about 9.3 at n = 300), which bounds this ratio from below."""
SPEED_AIM = 0.8


@dataclass(frozen=True)
class Config:
    n: int
    latency_batch: int
    repeats: int
    warmup: int
    steps: tuple[int, ...]
    seed: int = 0
    threads: int = 2


FULL = Config(n=300, latency_batch=32, repeats=7, warmup=1, steps=(8, 4, 2))
QUICK = Config(n=20, latency_batch=4, repeats=1, warmup=0, steps=(4,))


def load_student(steps: int) -> torch.nn.Module:
    """The committed zoo student distilled for ``steps`` DDIM steps (8, 4 or 2)."""
    if steps not in STUDENTS:
        raise ValueError(f"no student for {steps} steps; distilled students: {sorted(STUDENTS)}")
    return zoo.load(STUDENTS[steps])


def grid_sampler(
    eps: EpsFn, noise: torch.Tensor, labels: torch.Tensor, steps: int
) -> Callable[[], torch.Tensor]:
    """``() -> samples``: DDIM on the nested grid (:class:`GridDDIMScheduler`) at ``steps``."""
    config = zoo.teacher_scheduler_config()
    return lambda: sample(eps, GridDDIMScheduler(config), noise, steps=steps, labels=labels)


def teacher_ddim64(
    eps: EpsFn, noise: torch.Tensor, labels: torch.Tensor
) -> Callable[[], torch.Tensor]:
    """``() -> samples``: the baseline, diffusers' ``DDIMScheduler`` at 64 steps."""
    return lambda: sample(eps, zoo.teacher_scheduler(), noise, steps=BASE_STEPS, labels=labels)


def _distillation_seconds() -> tuple[float, float]:
    distil = sum(float(zoo.manifest_entry(name)["train_seconds"]) for name in PLAN)
    return distil, float(zoo.manifest_entry("teacher")["train_seconds"])


def benchmark(quick: bool = False, cfg: Config | None = None) -> BenchmarkResult:
    """Teacher DDIM-64 vs the distilled students vs the teacher's DDIM at the students' steps."""
    cfg = cfg or (QUICK if quick else FULL)
    torch.set_num_threads(cfg.threads)
    teacher = zoo.load_teacher()
    students = {s: load_student(s) for s in cfg.steps}
    eps = {"teacher": model_eps_fn(teacher)} | {s: model_eps_fn(m) for s, m in students.items()}
    names = {"teacher64": (f"Teacher, DDIM {BASE_STEPS} steps", "baseline")}
    names |= {f"student{s}": (f"Student, {s} steps", "technique") for s in cfg.steps}
    names |= {
        f"teacher{s}": (f"Teacher, DDIM {s} steps (same timesteps)", "control") for s in cfg.steps
    }
    h = HEADLINE_STEPS if HEADLINE_STEPS in cfg.steps else cfg.steps[0]
    names["diffusers"] = (f"Teacher, DDIM {h} steps (diffusers' default spacing)", "reference")

    def samplers(
        noise: torch.Tensor, labels: torch.Tensor, wrap: Callable[[str, EpsFn], EpsFn]
    ) -> dict[str, Callable[[], torch.Tensor]]:
        runs = {"teacher64": teacher_ddim64(wrap("teacher64", eps["teacher"]), noise, labels)}
        for s in cfg.steps:
            runs[f"student{s}"] = grid_sampler(wrap(f"student{s}", eps[s]), noise, labels, s)
            runs[f"teacher{s}"] = grid_sampler(
                wrap(f"teacher{s}", eps["teacher"]), noise, labels, s
            )
        e = wrap("diffusers", eps["teacher"])
        runs["diffusers"] = lambda: sample(
            e, zoo.teacher_scheduler(), noise, steps=h, labels=labels
        )
        return runs

    noise, labels = make_noise(cfg.n, cfg.seed), class_labels(cfg.n)
    counters: dict[str, NFECounter] = {}
    runs = samplers(noise, labels, lambda k, f: counters.setdefault(k, count_nfe(f)))
    samples = {k: fn() for k, fn in runs.items()}
    fdd = {k: frechet_digits_distance(x) for k, x in samples.items()}
    acc = {k: class_accuracy(x, labels) for k, x in samples.items()}
    b = cfg.latency_batch
    timed = samplers(make_noise(b, cfg.seed + 1), class_labels(b), lambda k, f: f)
    lat = compare_latency(timed, repeats=cfg.repeats, warmup=cfg.warmup, threads=cfg.threads)
    rows = [
        Row(
            name,
            role,  # type: ignore[arg-type]
            {
                "latency_ms": lat.median_ms(k),
                "fd_digits": fdd[k],
                "accuracy": acc[k],
                "nfe": float(counters[k].nfe),
            },
            {"latency_ms": lat.iqr_ms(k)},
        )
        for k, (name, role) in names.items()
    ]
    quality_ratio = fdd[f"student{h}"] / fdd["teacher64"]
    control_ratio = fdd[f"student{h}"] / fdd[f"teacher{h}"]
    speedup, limit = lat.speedup[f"student{h}"], BASE_STEPS / h
    distil_s, teacher_s = _distillation_seconds()
    figures = _figures(cfg, samples, fdd, quick)
    notes = [
        f"FDD on {cfg.n} conditional samples (labels 0-9 balanced) from the same noise; "
        f"fdd_floor({cfg.n}) = {fdd_floor(cfg.n):.2f} (real training digits).",
        f"Latency: batch {b}, {cfg.threads} threads, median of {cfg.repeats} interleaved runs; "
        "student and teacher share the architecture, so at equal steps they cost the same.",
        f"Distillation of all rounds ({' -> '.join(str(BASE_STEPS // 2**i) for i in range(6))} "
        f"steps) took {distil_s:.0f} s of CPU training vs {teacher_s:.0f} s for the teacher "
        f"({distil_s / teacher_s:.2f}x), both from the zoo manifest.",
        "Students keep the teacher's epsilon output but are trained in x-space with the paper's "
        "truncated-SNR weight max(SNR, 1) and the initialisation reproduces the teacher exactly.",
        "Controls run the teacher's DDIM on exactly the students' timesteps; diffusers' "
        "DDIMScheduler with its default 'leading' spacing re-spaces them (4 steps start at "
        "t=750, far from pure noise), shown as a reference row.",
    ]
    aims = [
        aim(
            f"{h}-step student FDD within {QUALITY_AIM}x of teacher DDIM-{BASE_STEPS}",
            quality_ratio,
            QUALITY_AIM,
            "<=",
        ),
        aim(
            f"{h}-step student FDD <= {CONTROL_AIM}x of teacher DDIM-{h} (same timesteps)",
            control_ratio,
            CONTROL_AIM,
            "<=",
        ),
        aim(
            f"{h}-step speedup >= {SPEED_AIM} x NFE ratio ({limit:.0f}x)",
            speedup,
            SPEED_AIM * limit,
            ">=",
        ),
    ]
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Progressive distillation of the zoo teacher: 64 DDIM steps -> 8, 4, 2",
        quick=quick,
        settings={
            "n": cfg.n,
            "seed": cfg.seed,
            "latency_batch": b,
            "repeats": cfg.repeats,
            "threads": cfg.threads,
            "base_steps": BASE_STEPS,
            "student_steps": list(cfg.steps),
            "guidance_scale": 1.0,
            "distillation_train_seconds": round(distil_s, 1),
            "teacher_train_seconds": round(teacher_s, 1),
        },
        metrics=metrics("latency_ms", "fd_digits", "accuracy", "nfe"),
        rows=rows,
        headline=Headline(
            speedup=speedup,
            speedup_limit=limit,
            quality_ratio=quality_ratio,
            quality_metric="fd_digits",
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance(
            [
                *sorted(Path(__file__).parent.glob("*.py")),
                *zoo.weight_files(
                    "teacher", "pd_student_8", "pd_student_4", "pd_student_2", "classifier"
                ),
            ]
        ),
    )


def _figures(
    cfg: Config, samples: dict[str, torch.Tensor], fdd: dict[str, float], quick: bool
) -> list[str]:
    out = output_dir(quick)
    steps = sorted(cfg.steps)
    curve_plot(
        steps,
        {
            "distilled student": [fdd[f"student{s}"] for s in steps],
            "teacher DDIM, same timesteps": [fdd[f"teacher{s}"] for s in steps],
        },
        out / f"{SLUG}.png",
        xlabel="sampling steps (NFE)",
        ylabel="FDD (lower is better)",
        title="Progressive distillation: quality against steps",
        logx=True,
        hlines={f"teacher DDIM {BASE_STEPS}": fdd["teacher64"], "real digits": fdd_floor(cfg.n)},
    )
    h = HEADLINE_STEPS if HEADLINE_STEPS in cfg.steps else cfg.steps[0]
    keys = ["teacher64", f"student{h}", f"teacher{h}"]
    k = min(10, cfg.n)
    save_grid(torch.cat([samples[key][:k] for key in keys]), out / f"{SLUG}-samples.png", nrow=k)
    return [f"{SLUG}.png", f"{SLUG}-samples.png"]


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.timestep_distillation",
        description="Progressive distillation demo: a distilled student against its teacher.",
    )
    p.add_argument("--steps", type=int, default=HEADLINE_STEPS, help="student steps: 8, 4 or 2")
    p.add_argument("--n", type=int, default=100, help="samples per sampler (>= 10)")
    p.add_argument("--seed", type=int, default=0, help="noise seed")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="output folder")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write the result")
    p.add_argument("--quick", action="store_true", help="with --bench: the small test setting")
    return p


def _demo(steps: int, n: int, seed: int, out: Path) -> None:
    from tqdm.auto import tqdm

    if steps not in STUDENTS:
        raise ValueError(f"--steps must be one of {sorted(STUDENTS)} (the distilled students)")
    if n < 10:
        raise ValueError(f"--n must be >= 10, got {n}")
    teacher, student = zoo.load_teacher(), load_student(steps)
    noise, labels = make_noise(n, seed), class_labels(n)
    runs = {
        f"teacher DDIM {BASE_STEPS}": teacher_ddim64(model_eps_fn(teacher), noise, labels),
        f"student {steps} steps": grid_sampler(model_eps_fn(student), noise, labels, steps),
        f"teacher DDIM {steps} (same timesteps)": grid_sampler(
            model_eps_fn(teacher), noise, labels, steps
        ),
    }
    results = {}
    for name, fn in tqdm(runs.items(), desc="sampling", leave=False):
        x = fn()
        results[name] = (x, frechet_digits_distance(x), class_accuracy(x, labels))
    lat = compare_latency(runs, repeats=3, warmup=1)
    print(f"{'sampler':34} {'ms':>8} {'FDD':>7} {'acc':>6}")
    for name, (_, fd, acc) in results.items():
        print(f"{name:34} {lat.median_ms(name):8.0f} {fd:7.2f} {acc:6.2f}")
    print(f"(FDD of {n} real training digits: {fdd_floor(n):.2f})")
    out.mkdir(parents=True, exist_ok=True)
    grid = torch.cat([x[:10] for x, _, _ in results.values()])
    print(f"samples (rows: {', '.join(results)}): {save_grid(grid, out / 'samples.png', nrow=10)}")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    args = _parser().parse_args(argv)
    try:
        torch.set_num_threads(2)
        if args.quick and not args.bench:
            raise ValueError("--quick only applies to --bench")
        if args.bench:
            from reference.harness import write_and_report

            write_and_report(benchmark(quick=args.quick))
            return 0
        _demo(args.steps, args.n, args.seed, args.out)
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
