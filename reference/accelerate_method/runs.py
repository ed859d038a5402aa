"""The configurations the benchmark compared before its port to the clipped ODE (the zoo
scheduler's DDIM); the benchmark now declares its rows in `reference.accelerate_method.samplers`.
Kept because the package docstring links here; it goes with that docstring's next change.

On every noise seed, every run samples the same noise with the zoo's DDIM scheduler (paired);
forecasting runs check that the network ran exactly as often as
[`full_computations`][reference.accelerate_method.schedule.full_computations] says, so the speedup
limit is computed from the work the run actually did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .diffusers_hook import diffusers_taylorseer, taylorseer_run
from .forecast import StepForecastConfig, apply_step_forecasting
from .schedule import full_computations

Sampler = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Run:
    """One configuration: its row id, config (method id + parameters), role, sampler, NFE."""

    key: str
    config: dict[str, Any]
    role: str
    sample: Sampler
    nfe: int
    timed: bool = False

    @property
    def dit(self) -> bool:
        return self.key.startswith("dit-")


def _ddim(model: torch.nn.Module, steps: int) -> Sampler:
    from reference import zoo
    from reference.harness import class_labels, model_eps_fn, sample

    return lambda noise: sample(
        model_eps_fn(model),
        zoo.teacher_scheduler(),
        noise,
        steps=steps,
        labels=class_labels(len(noise)),
    )


def _forecast(model: torch.nn.Module, steps: int, config: StepForecastConfig, nfe: int) -> Sampler:
    from reference import zoo
    from reference.harness import class_labels, sample

    def run(noise: torch.Tensor) -> torch.Tensor:
        eps = apply_step_forecasting(model, config)
        x = sample(
            eps, zoo.teacher_scheduler(), noise, steps=steps, labels=class_labels(len(noise))
        )
        if eps.full_calls != nfe:
            raise RuntimeError(f"forecaster ran the network {eps.full_calls} times, not {nfe}")
        return x

    return run


def unet_runs(model: torch.nn.Module, cfg: Any, prefix: str = "") -> list[Run]:
    """DDIM, forecasts (Newton order m and 1, TaylorSeer's formula, reuse) and same-NFE DDIM."""
    n, k, w, m = cfg.steps, cfg.interval, cfg.warmup, cfg.order
    same = full_computations(n, k, w)

    def fc(method: str, order: int, kk: int = k) -> dict[str, Any]:
        return {
            "method": f"{prefix}forecast-{method}",
            "interval": kk,
            "order": order,
            "warmup": w,
            "steps": n,
        }

    def sampler(method: str, order: int, kk: int, nfe: int) -> Sampler:
        return _forecast(model, n, StepForecastConfig(kk, order, w, method), nfe)

    ddim_same = {"method": f"{prefix}ddim-same-nfe", "steps": same, "interval": k}
    runs = [
        Run("base", {"method": f"{prefix}ddim", "steps": n}, "baseline", _ddim(model, n), n, True),
        Run("newton", fc("newton", m), "technique", sampler("newton", m, k, same), same, True),
        Run("reuse", fc("reuse", 0), "control", sampler("reuse", 0, k, same), same, True),
        Run("ddim-same", ddim_same, "control", _ddim(model, same), same, True),
        Run("newton1", fc("newton", 1), "technique", sampler("newton", 1, k, same), same),
        Run("taylor", fc("taylorseer", m), "technique", sampler("taylorseer", m, k, same), same),
    ]
    for kk in cfg.intervals:
        if kk == k:
            continue
        nfe = full_computations(n, kk, w)
        ctrl = {"method": f"{prefix}ddim-same-nfe", "steps": nfe, "interval": kk}
        runs += [
            Run(
                f"newton-k{kk}",
                fc("newton", m, kk),
                "technique",
                sampler("newton", m, kk, nfe),
                nfe,
            ),
            Run(f"ddim-k{kk}", ctrl, "control", _ddim(model, nfe), nfe),
        ]
    return runs


def dit_runs(dit: torch.nn.Module, cfg: Any) -> list[Run]:
    """The DiT: DDIM (reference), our forecasts, same-NFE DDIM and diffusers' TaylorSeer hook."""
    from reference import zoo
    from reference.harness import class_labels, model_eps_fn, sample

    hooked = diffusers_taylorseer(dit, cfg.interval, order=1, warmup=cfg.warmup)

    def run_hooked(noise: torch.Tensor) -> torch.Tensor:
        with taylorseer_run(hooked):
            return sample(
                model_eps_fn(hooked),
                zoo.teacher_scheduler(),
                noise,
                steps=cfg.steps,
                labels=class_labels(len(noise)),
            )

    keep = ("base", "newton", "newton1", "ddim-same")
    runs = [r for r in unet_runs(dit, cfg, prefix="dit-") if r.key in keep]
    for r in runs:
        r.key, r.role = "dit-" + r.key, ("reference" if r.key == "base" else r.role)
    same = full_computations(cfg.steps, cfg.interval, cfg.warmup)
    config = {
        "method": "dit-diffusers-taylorseer",
        "interval": cfg.interval,
        "order": 1,
        "warmup": cfg.warmup,
        "steps": cfg.steps,
    }
    runs.append(Run("dit-diffusers", config, "technique", run_hooked, same, True))
    return runs


@dataclass
class Study:
    """Paired quality of every run over the seeds, the first seed's samples, the latency of the
    timed U-Net and DiT runs."""

    runs: list[Run]
    quality: Any  # reference.harness.seeds.SeedTable
    samples: dict[str, torch.Tensor]
    lat: dict[str, Any]  # "unet" / "dit" -> reference.harness.cost.LatencyComparison


def paired_quality(runs: list[Run], cfg: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """FDD, KID, accuracy, diversity and PSNR against the baseline (``base`` for the U-Net,
    ``dit-base`` for the DiT) of every run over ``cfg.seeds``: on each seed every run samples
    ``make_noise(cfg.samples, seed)`` with the same labels. Also the first seed's samples."""
    from reference.harness import (
        class_labels,
        make_noise,
        over_seeds,
        psnr_per_sample,
        quality_report,
    )

    labels = class_labels(cfg.samples)
    first: dict[str, torch.Tensor] = {}

    def sampler(r: Run) -> Callable[[int], torch.Tensor]:
        def run(seed: int) -> torch.Tensor:
            with torch.inference_mode():
                x = r.sample(make_noise(cfg.samples, seed))
            if seed == cfg.seeds[0]:
                first[r.key] = x[:10]
            return x

        return run

    def measure(key: str, x: torch.Tensor, same: dict[str, torch.Tensor]) -> dict[str, float]:
        base = same["dit-base" if key.startswith("dit-") else "base"]
        psnr = float(psnr_per_sample(x, base).mean())
        return {**quality_report(x, labels), "psnr_vs_baseline": psnr}

    table = over_seeds({r.key: sampler(r) for r in runs}, measure, cfg.seeds)
    return table, first


def measure(cfg: Any) -> Study:
    """Paired quality of every run, interleaved latency of the timed ones."""
    from reference import zoo
    from reference.harness import compare_latency, make_noise
    from reference.harness.sampling import frozen

    runs = unet_runs(frozen(zoo.load_teacher()), cfg)
    if cfg.dit:
        runs += dit_runs(frozen(zoo.load_dit()), cfg)
    table, first = paired_quality(runs, cfg)
    lat_noise = make_noise(cfg.latency_batch, cfg.seeds[0] + 1)
    lat = {}
    for group in ("unet", "dit"):
        timed = {r.key: r for r in runs if r.timed and r.dit == (group == "dit")}
        if timed:
            funcs = {key: (lambda r=r: r.sample(lat_noise)) for key, r in timed.items()}
            with torch.inference_mode():
                lat[group] = compare_latency(funcs, repeats=cfg.repeats, warmup=cfg.timing_warmup)
    return Study(runs, table, first, lat)
