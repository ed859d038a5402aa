"""The measurements: paired rows over noise seeds, the sweep on one seed, the extra runs.

``measure(cfg)`` takes the benchmark's [`Config`][reference.scheduler_tradeoff.bench.Config] (any
object with its fields) and returns a [`Study`][reference.scheduler_tradeoff.sweep.Study];
[`bench`][reference.scheduler_tradeoff.bench] turns it into rows. Every sampling run goes through
[`Runs`][reference.scheduler_tradeoff.sweep.Runs], which remembers it, so the sweep reuses the rows'
runs on its seed instead of sampling them twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from reference.harness.sampling import frozen

from .schedulers import make_scheduler, model_calls_per_step
from .solvers import make_minimal, max_step_difference


@dataclass
class Point:
    """One (scheduler, NFE) measurement of the sweep (one seed)."""

    scheduler: str
    nfe: int
    fd_digits: float
    seconds: float
    samples: torch.Tensor = field(repr=False)


def run_sampler(
    unet: Any, scheduler: Any, noise: torch.Tensor, steps: int, seed: int = 0
) -> tuple[torch.Tensor, int]:
    """Class-conditional samples (balanced labels) and the number of model calls made."""
    from reference.harness import class_labels, count_nfe, model_eps_fn, sample

    eps = count_nfe(model_eps_fn(unet))
    x = sample(eps, scheduler, noise, steps=steps, labels=class_labels(len(noise)), seed=seed)
    return x, eps.nfe


@dataclass(frozen=True)
class Run:
    """One sampling run: its samples, the model calls it made and its wall time."""

    samples: torch.Tensor
    nfe: int
    seconds: float


class Runs:
    """Sampling runs of the teacher from ``make_noise(n, seed)``, remembered by their settings
    (the seed also seeds DDPM's per-step noise, so a run is a function of its settings)."""

    def __init__(self, unet: Any) -> None:
        self.unet = unet
        self.done: dict[tuple[str, int, bool, int, int], Run] = {}

    def get(self, name: str, nfe: int, seed: int, n: int, clip: bool = True) -> Run:
        from reference.harness import make_noise

        key = (name, nfe, clip, seed, n)
        if key not in self.done:
            steps = nfe // model_calls_per_step(name)
            start = time.perf_counter()
            x, calls = run_sampler(
                self.unet, make_scheduler(name, clip=clip), make_noise(n, seed), steps, seed
            )
            if calls != nfe:
                raise RuntimeError(f"{name}: expected {nfe} model calls, counted {calls}")
            self.done[key] = Run(x, calls, time.perf_counter() - start)
        return self.done[key]


def row_specs(cfg: Any) -> dict[str, tuple[str, int, bool]]:
    """Row key -> (scheduler, NFE, x0 clipping): DDIM at the baseline NFE, every scheduler at
    the headline NFE, and DDIM there without clipping."""
    h, b = cfg.headline_nfe, cfg.baseline_nfe
    specs = {
        "ddim_base": ("ddim", b, True),
        "dpmpp2m": ("dpmpp2m", h, True),
        "unipc": ("unipc", h, True),
        "ddim": ("ddim", h, True),
        "euler": ("euler", h, True),
        "ddpm": ("ddpm", h, True),
        "ddim_unclipped": ("ddim", h, False),
    }
    return {k: v for k, v in specs.items() if v[0] in cfg.schedulers}


TIMED = ("ddim_base", "dpmpp2m", "unipc", "ddim", "euler", "ddpm")
"""The latency comparison: DDIM at the baseline NFE first, the others at the headline NFE."""


def paired_rows(runs: Runs, cfg: Any) -> Any:
    """Quality of every row over ``cfg.seeds`` at ``cfg.samples`` (the same noise and labels
    per seed for all rows): a `SeedTable`."""
    from reference.harness import class_labels, over_seeds, quality_report

    labels = class_labels(cfg.samples)
    samplers = {
        key: (lambda seed, s=s: runs.get(s[0], s[1], seed, cfg.samples, clip=s[2]).samples)
        for key, s in row_specs(cfg).items()
    }
    return over_seeds(samplers, lambda key, x, same: quality_report(x, labels), cfg.seeds)


def sweep(runs: Runs, cfg: Any) -> list[Point]:
    """FDD and wall time of every scheduler at every NFE of ``cfg``, on the first seed."""
    from tqdm.auto import tqdm

    from reference.harness import frechet_digits_distance

    jobs = [(s, k) for s in cfg.schedulers for k in cfg.nfe_grid]
    points = []
    for name, nfe in tqdm(jobs, desc="schedulers", leave=False):
        run = runs.get(name, nfe, cfg.seeds[0], cfg.samples)
        fd = frechet_digits_distance(run.samples)
        points.append(Point(name, nfe, fd, run.seconds, run.samples[:10]))
    return points


def nfe_to_match(points: list[Point], name: str, target: float) -> int | None:
    """Smallest NFE at which scheduler ``name`` reaches FDD <= ``target`` (None if never)."""
    hits = [p.nfe for p in points if p.scheduler == name and p.fd_digits <= target]
    return min(hits) if hits else None


def reference_runs(runs: Runs, cfg: Any) -> Any:
    """DDPM with ``ref_steps`` against DDIM at the baseline NFE, on ``ref_samples`` samples of
    the first ``ref_seeds`` seeds (paired; the expensive reference gets fewer samples)."""
    from reference.harness import class_labels, over_seeds, quality_report

    n, labels = cfg.ref_samples, class_labels(cfg.ref_samples)
    samplers = {
        "ddpm_ref": lambda seed: runs.get("ddpm", cfg.ref_steps, seed, n).samples,
        "ddim_ref": lambda seed: runs.get("ddim", cfg.baseline_nfe, seed, n).samples,
    }
    seeds = cfg.seeds[: cfg.ref_seeds]
    return over_seeds(samplers, lambda key, x, same: quality_report(x, labels), seeds)


def ours_vs_diffusers(runs: Runs, cfg: Any) -> dict[str, dict[str, Any]]:
    """Our minimal schedulers against diffusers': the largest difference of one step given the
    same inputs, and of the final samples of the first seed."""
    from reference.harness import make_noise, model_eps_fn

    step_noise = make_noise(cfg.latency_batch, cfg.seeds[0] + 1)
    noise = make_noise(cfg.samples, cfg.seeds[0])
    ours: dict[str, dict[str, Any]] = {}
    for name, nfe in (("ddim", cfg.baseline_nfe), ("dpmpp2m", cfg.headline_nfe)):
        x, _ = run_sampler(runs.unet, make_minimal(name), noise, nfe)
        theirs = runs.get(name, nfe, cfg.seeds[0], cfg.samples).samples
        step = max_step_difference(
            make_minimal(name), make_scheduler(name), model_eps_fn(runs.unet), step_noise, nfe
        )
        ours[name] = {"step_diff": step, "nfe": nfe, "sample_diff": float((x - theirs).abs().max())}
    return ours


@dataclass
class Study:
    """The paired rows, the sweep, the reference runs, ours against diffusers, the latency."""

    table: Any  # reference.harness.seeds.SeedTable of the rows
    nfe: dict[str, int]
    points: list[Point]
    ref: Any  # SeedTable of the DDPM reference and DDIM on the same samples
    ours: dict[str, dict[str, Any]]
    lat: Any  # reference.harness.cost.LatencyComparison
    timed: dict[str, tuple[str, int, bool]]

    def point(self, scheduler: str, nfe: int) -> Point:
        return next(p for p in self.points if (p.scheduler, p.nfe) == (scheduler, nfe))


def measure(cfg: Any) -> Study:
    """The paired rows, the sweep, the DDPM reference, ours vs diffusers and the timing."""
    from reference import zoo
    from reference.harness import compare_latency, make_noise

    runs = Runs(frozen(zoo.load_teacher()))
    table = paired_rows(runs, cfg)
    specs = row_specs(cfg)
    nfe = {
        k: runs.get(s[0], s[1], cfg.seeds[0], cfg.samples, clip=s[2]).nfe for k, s in specs.items()
    }
    points = sweep(runs, cfg)
    ref = reference_runs(runs, cfg)
    ours = ours_vs_diffusers(runs, cfg)
    lat_noise = make_noise(cfg.latency_batch, cfg.seeds[0])
    timed = {k: specs[k] for k in TIMED if k in specs}
    funcs = {
        key: (lambda s=s: run_sampler(runs.unet, make_scheduler(s[0]), lat_noise, s[1], 0))
        for key, s in timed.items()
    }
    with torch.inference_mode():
        lat = compare_latency(funcs, repeats=cfg.repeats, warmup=cfg.warmup)
    return Study(table, nfe, points, ref, ours, lat, timed)
