"""The rows the benchmark compares and how each samples: every row on the clipped ODE.

Idea
====
Every row solves the harness's one problem, the probability-flow ODE of the *clipped* denoiser
(`reference.harness.ode`), with DDIM on the trailing timesteps from the same noise and labels,
so that its distance to the converged solution of that noise measures only what the row changes.
A forecasting row runs the same 50 DDIM steps as the baseline; on the steps the schedule skips
(`reference.accelerate_method.schedule.compute_mask`) the noise prediction is forecast from the
cached full computations (`reference.accelerate_method.forecast`), and DDIM turns it into the
clipped x̂₀ of eq. (1) of `reference.harness.ode`:

    ε̂_t = forecast(ε at the last full steps)          on a skipped step                   (1)
    x̂₀ = clip((x_t - √(1-ᾱ_t) ε̂_t) / √ᾱ_t, -1, 1)                                         (2)

The same-NFE control takes fewer, larger DDIM steps with as many network evaluations as the
forecast made (counted in the run). diffusers' ``apply_taylorseer_cache`` on the zoo DiT
forecasts the last transformer block's output instead (`reference.accelerate_method
.diffusers_hook`) and is sampled the same way.

Pitfalls
========
* Near t = 999 (ᾱ = 2.4e-9) an error in ε̂ is multiplied by about 2·10⁴ in (2); clipping bounds
  it, and the warm-up computes the first steps fully.
* A forecaster and a hooked model hold state: a fresh forecaster, and a reset hook, per run.
"""

from __future__ import annotations

from typing import Any

import torch

from reference.harness.builders import Run, counted_variant
from reference.harness.compare import Variant

from .config import BASELINE, BASELINE_STEPS, Config
from .forecast import StepForecastConfig
from .schedule import full_computations


def ddim(model: torch.nn.Module, steps: int) -> Run:
    """``steps`` DDIM steps of ``model`` on the clipped ODE; every step runs the network."""
    from reference.harness import count_nfe, model_eps_fn, ode

    def run(noise: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
        counter = count_nfe(model_eps_fn(model))
        return ode.solve(counter, noise, steps=steps, labels=labels), counter.nfe

    return run


def forecast(model: torch.nn.Module, config: StepForecastConfig) -> Run:
    """50 DDIM steps on the clipped ODE with the noise prediction forecast (1) on the steps the
    schedule skips; returns the network evaluations the forecaster made."""
    from reference.harness import ode

    from .forecast import apply_step_forecasting

    def run(noise: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
        eps = apply_step_forecasting(model, config)  # fresh state per run
        x = ode.solve(eps, noise, steps=BASELINE_STEPS, labels=labels)
        return x, eps.full_calls

    return run


def hooked(dit: torch.nn.Module, config: StepForecastConfig) -> Run:
    """diffusers' TaylorSeer hook on a copy of ``dit``, 50 DDIM steps on the clipped ODE; its
    network evaluations are those of the schedule (the hook computes on the same steps)."""
    from reference.harness import model_eps_fn, ode

    from .diffusers_hook import diffusers_taylorseer, taylorseer_run

    model = diffusers_taylorseer(dit, config.interval, order=config.order, warmup=config.warmup)
    full = full_computations(BASELINE_STEPS, config.interval, config.warmup)

    def run(noise: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
        with taylorseer_run(model):
            x = ode.solve(model_eps_fn(model), noise, steps=BASELINE_STEPS, labels=labels)
        return x, full

    return run


def variant(
    cfg: Config, id: str, config: dict[str, Any], role: str, run: Run, timed: bool
) -> Variant:
    """One row: ``run`` on a seed's noise and the balanced labels (its evaluations counted as
    ``nfe``) and, if ``timed``, on the latency batch."""
    return counted_variant(cfg, id, config, role, run, counted="nfe", timed=timed)


def _forecast_config(cfg: Config, method: str, order: int, k: int, prefix: str) -> dict[str, Any]:
    return {
        "method": f"{prefix}forecast-{method}",
        "interval": k,
        "order": order,
        "warmup": cfg.forecast_warmup,
        "steps": BASELINE_STEPS,
    }


def unet_variants(cfg: Config, unet: torch.nn.Module) -> list[Variant]:
    """Baseline; at the headline k the Newton forecast of the headline order (technique), the
    reuse of the last output and DDIM with the same NFE (controls), order 1 and TaylorSeer's
    formula (techniques, untimed); at every other k the forecast and its same-NFE DDIM."""
    k, w, m = cfg.interval, cfg.forecast_warmup, cfg.order
    same = full_computations(BASELINE_STEPS, k, w)

    def fc(method: str, order: int, kk: int = k) -> tuple[dict[str, Any], Run]:
        run = forecast(unet, StepForecastConfig(kk, order, w, method))
        return _forecast_config(cfg, method, order, kk, ""), run

    def v(id: str, spec: tuple[dict[str, Any], Run], role: str, timed: bool = False) -> Variant:
        return variant(cfg, id, spec[0], role, spec[1], timed)

    base = ({"method": "ddim", "steps": BASELINE_STEPS}, ddim(unet, BASELINE_STEPS))
    ctrl = ({"method": "ddim-same-nfe", "steps": same, "interval": k}, ddim(unet, same))
    out = [
        v(BASELINE, base, "baseline", True),
        v("newton", fc("newton", m), "technique", True),
        v("reuse", fc("reuse", 0), "control", True),
        v("ddim-same", ctrl, "control", True),
        v("newton1", fc("newton", 1), "technique"),
        v("taylor", fc("taylorseer", m), "technique"),
    ]
    for kk in sorted(set(cfg.intervals) - {k}):
        nfe = full_computations(BASELINE_STEPS, kk, w)
        other = ({"method": "ddim-same-nfe", "steps": nfe, "interval": kk}, ddim(unet, nfe))
        out += [
            v(f"newton-k{kk}", fc("newton", m, kk), "technique"),
            v(f"ddim-k{kk}", other, "control"),
        ]
    return out


def dit_variants(cfg: Config, dit: torch.nn.Module) -> list[Variant]:
    """The zoo DiT: DDIM (its baseline), our Newton forecasts of the headline order and of order
    1, DDIM with the same NFE, and diffusers' ``apply_taylorseer_cache`` of order 1."""
    k, w, m = cfg.interval, cfg.forecast_warmup, cfg.order
    same = full_computations(BASELINE_STEPS, k, w)
    p = "dit-"
    return [
        variant(cfg, f"{p}{BASELINE}", {"method": f"{p}ddim", "steps": BASELINE_STEPS},
                "baseline", ddim(dit, BASELINE_STEPS), True),
        variant(cfg, f"{p}newton", _forecast_config(cfg, "newton", m, k, p), "technique",
                forecast(dit, StepForecastConfig(k, m, w, "newton")), True),
        variant(cfg, f"{p}newton1", _forecast_config(cfg, "newton", 1, k, p), "technique",
                forecast(dit, StepForecastConfig(k, 1, w, "newton")), False),
        variant(cfg, f"{p}ddim-same", {"method": f"{p}ddim-same-nfe", "steps": same,
                "interval": k}, "control", ddim(dit, same), True),
        variant(cfg, f"{p}diffusers", {**_forecast_config(cfg, "taylorseer", 1, k, p),
                "method": f"{p}diffusers-taylorseer"}, "technique",
                hooked(dit, StepForecastConfig(k, 1, w, "taylorseer")), True),
    ]  # fmt: skip
