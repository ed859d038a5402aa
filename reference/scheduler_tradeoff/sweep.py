"""The sweep: every scheduler at every NFE from the same noise, and the benchmark's extra runs.

``measure(cfg)`` takes the benchmark's :class:`~reference.scheduler_tradeoff.bench.Config` (any
object with its fields) and returns a :class:`Study`; :mod:`.bench` turns it into rows.
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
    """One (scheduler, NFE) measurement of the sweep."""

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


def sweep(unet: Any, cfg: Any) -> list[Point]:
    """FDD and wall time of every scheduler at every NFE of ``cfg`` (same noise for all)."""
    from tqdm.auto import tqdm

    from reference.harness import frechet_digits_distance, make_noise

    noise = make_noise(cfg.samples, cfg.seed)
    jobs = [(s, k) for s in cfg.schedulers for k in cfg.nfe_grid]
    points = []
    for name, nfe in tqdm(jobs, desc="schedulers", leave=False):
        steps = nfe // model_calls_per_step(name)
        start = time.perf_counter()
        x, calls = run_sampler(unet, make_scheduler(name), noise, steps, cfg.seed)
        seconds = time.perf_counter() - start
        if calls != nfe:
            raise RuntimeError(f"{name}: expected {nfe} model calls, counted {calls}")
        points.append(Point(name, nfe, frechet_digits_distance(x), seconds, x))
    return points


def nfe_to_match(points: list[Point], name: str, target: float) -> int | None:
    """Smallest NFE at which scheduler ``name`` reaches FDD <= ``target`` (None if never)."""
    hits = [p.nfe for p in points if p.scheduler == name and p.fd_digits <= target]
    return min(hits) if hits else None


TIMED = ("ddim_base", "dpmpp2m", "unipc", "ddim", "euler")
"""The latency comparison: DDIM at the baseline NFE first, the others at the headline NFE."""


@dataclass
class Study:
    """The sweep, the reference runs, our schedulers against diffusers', and the latency."""

    points: list[Point]
    ref: dict[str, float]
    ours: dict[str, dict[str, Any]]
    lat: Any  # reference.harness.cost.LatencyComparison
    timed: dict[str, tuple[str, int]]

    def point(self, scheduler: str, nfe: int) -> Point:
        return next(p for p in self.points if (p.scheduler, p.nfe) == (scheduler, nfe))


def measure(cfg: Any) -> Study:
    """The sweep plus DDPM-1000, unclipped DDIM, ours vs diffusers and the interleaved timing."""
    from reference import zoo
    from reference.harness import compare_latency, frechet_digits_distance, make_noise, model_eps_fn

    unet = frozen(zoo.load_teacher())
    points = sweep(unet, cfg)
    by = {(p.scheduler, p.nfe): p for p in points}
    # DDPM with all 1000 training steps, on the first ref_samples noises (noise sets nest).
    ref_noise = make_noise(cfg.ref_samples, cfg.seed)
    ddpm_ref, _ = run_sampler(unet, make_scheduler("ddpm"), ref_noise, cfg.ref_steps, cfg.seed)
    base = by[("ddim", cfg.baseline_nfe)]
    ref = {
        "ddpm": frechet_digits_distance(ddpm_ref),
        "ddim_base": frechet_digits_distance(base.samples[: cfg.ref_samples]),
    }
    # The same DDIM without x0 clipping: what clipping buys on the cosine schedule.
    noise = make_noise(cfg.samples, cfg.seed)
    unclipped, _ = run_sampler(unet, make_scheduler("ddim", clip=False), noise, cfg.headline_nfe)
    ref["ddim_unclipped"] = frechet_digits_distance(unclipped)
    # Ours vs diffusers: the same step inputs, and the final samples of the full loop.
    step_noise = make_noise(cfg.latency_batch, cfg.seed + 1)
    eps_fn = model_eps_fn(unet)
    ours: dict[str, dict[str, Any]] = {}
    for name, nfe in (("ddim", cfg.baseline_nfe), ("dpmpp2m", cfg.headline_nfe)):
        x, _ = run_sampler(unet, make_minimal(name), noise, nfe)
        ours[name] = {
            "step_diff": max_step_difference(
                make_minimal(name), make_scheduler(name), eps_fn, step_noise, nfe
            ),
            "nfe": nfe,
            "fd_digits": frechet_digits_distance(x),
            "sample_diff": float((x - by[(name, nfe)].samples).abs().max()),
        }
    # Interleaved latency of the headline rows at a small batch.
    lat_noise = make_noise(cfg.latency_batch, cfg.seed)
    timed = {
        "ddim_base": ("ddim", cfg.baseline_nfe),
        "dpmpp2m": ("dpmpp2m", cfg.headline_nfe),
        "unipc": ("unipc", cfg.headline_nfe),
        "ddim": ("ddim", cfg.headline_nfe),
        "euler": ("euler", cfg.headline_nfe),
    }
    timed = {k: v for k, v in timed.items() if v[0] in cfg.schedulers}
    funcs = {
        key: (lambda s=s, k=k: run_sampler(unet, make_scheduler(s), lat_noise, k))
        for key, (s, k) in timed.items()
    }
    with torch.inference_mode():
        lat = compare_latency(funcs, repeats=cfg.repeats, warmup=cfg.warmup)
    return Study(points, ref, ours, lat, timed)
