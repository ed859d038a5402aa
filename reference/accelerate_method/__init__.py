"""Step forecasting ("accelerate method"): run the denoiser only every k-th step, forecast the rest.

Idea
====
Along a sampling trajectory the denoiser's output changes slowly from one step to the next. So
compute it fully only at some steps and *forecast* it at the steps in between from the cached
history of full computations. TaylorSeer (Liu et al. 2025, arXiv:2503.06923) does this on the
features of diffusion transformers: it estimates the derivatives of a feature ``F`` along the
steps by finite differences of the cached full computations and extrapolates with a Taylor
series. With full computations ``k`` steps apart (``Delta^i F`` the ``i``-th backward difference
of the cached values) a step ``d`` past the last full computation gets:

    F(s + d) ~ sum_{i=0..m} Delta^i F / (i! k^i) * d^i                       (TaylorSeer)

This package forecasts the whole denoiser output ``eps(x_t, t)`` (any
`EpsFn`, U-Net or DiT)
with the polynomial that *interpolates* the last ``m + 1`` full computations, in Newton's
divided-difference form over the timesteps ``t_j`` at which they were made:

    eps(t) ~ f[t_0] + f[t_0, t_1] (t - t_0) + ... + f[t_0..t_m] (t - t_0)...(t - t_{m-1})

Both agree for ``m <= 1`` (order 0 is "reuse the last output", order 1 linear extrapolation). For
``m >= 2`` the Newton form is exact on any polynomial trajectory of degree ``<= m`` (tested), while
the finite-difference Taylor series is not (it misses terms of order ``k d``: for ``F = s^2`` it
predicts ``s^2 + (2s - k) d + d^2``);
[`taylorseer_forecast`][reference.accelerate_method.taylorseer_forecast] implements the paper's
formula for comparison.

Cost and the limit
==================
With ``N`` sampler steps, the first ``w`` computed fully (warm-up: the history must fill, and the
first steps change fastest), then one full computation every ``k`` steps, the network runs
``w + ceil((N - w) / k)`` times, so the speedup is at most:

    N / (w + ceil((N - w) / k))           e.g. N = 50, w = 2, k = 2: 50 / 26 = 1.92x

minus the forecast arithmetic (a few tensor additions). It is a true bound of the latency ratio:
both runs take the same ``N`` scheduler steps and call the same network at the same batch, and
the forecasts only add work. The key control is plain DDIM with the same number of network
evaluations: forecasting only pays if it beats simply taking fewer, larger steps. The benchmark
decides it, and whether forecasting keeps the quality of the full schedule, on FDD ratios paired
over noise seeds (every configuration starts from the same noise on each seed).

Pitfalls
========
* The forecaster is stateful: one object per sampling run
  ([`forecasting_eps_fn`][reference.accelerate_method.forecasting_eps_fn] builds a fresh one); it
  assumes one denoiser call per sampler step (DDIM, DPM-Solver multistep).
* Forecasting extrapolates; high orders with large ``k`` amplify the noise of the history.
* Classifier-free guidance doubles the batch; forecast the guided output, or each branch.

Production: ``diffusers`` ``apply_taylorseer_cache(model, TaylorSeerCacheConfig(cache_interval=k,
max_order=m, disable_cache_before_step=w + 1))`` hooks chosen sub-modules (by default attention
modules whose names end in ``attn``; none in ``DiTTransformer2DModel``, whose attention is
``attn1``, so the benchmark passes identifiers explicitly); related caches: ``FirstBlockCache``,
``PyramidAttentionBroadcast``, ``FasterCache`` in ``diffusers.hooks``.

The package
===========
* [`reference.accelerate_method.schedule`][reference.accelerate_method.schedule] -
  [`compute_mask`][reference.accelerate_method.compute_mask],
  [`full_computations`][reference.accelerate_method.full_computations] and
  [`speedup_limit`][reference.accelerate_method.speedup_limit] (which steps run the network, and the
  limit above).
* [`reference.accelerate_method.forecast`][reference.accelerate_method.forecast] -
  [`newton_forecast`][reference.accelerate_method.newton_forecast],
  [`taylorseer_forecast`][reference.accelerate_method.taylorseer_forecast], the
  [`StepForecaster`][reference.accelerate_method.StepForecaster] ``EpsFn`` and the public shape
  ``apply_step_forecasting(model, StepForecastConfig(interval, order, warmup, method))``.
* [`reference.accelerate_method.diffusers_hook`][reference.accelerate_method.diffusers_hook] -
  [`diffusers_taylorseer`][reference.accelerate_method.diffusers_taylorseer] and
  [`taylorseer_run`][reference.accelerate_method.taylorseer_run] (diffusers' hook on the zoo DiT).
* [`reference.accelerate_method.runs`][reference.accelerate_method.runs] - the compared
  configurations and their measurement;
  [`reference.accelerate_method.figures`][reference.accelerate_method.figures];
  [`reference.accelerate_method.bench`][reference.accelerate_method.bench] - the benchmark and demo
  (the technique contract).

Run ``python -m reference.accelerate_method`` for a demonstration, ``--bench`` for the benchmark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .diffusers_hook import diffusers_taylorseer, taylorseer_run
    from .forecast import (
        METHODS,
        StepForecastConfig,
        StepForecaster,
        apply_step_forecasting,
        forecasting_eps_fn,
        newton_forecast,
        taylorseer_forecast,
    )
    from .schedule import check_schedule, compute_mask, full_computations, speedup_limit

__all__ = [
    "METHODS",
    "StepForecastConfig",
    "StepForecaster",
    "apply_step_forecasting",
    "check_schedule",
    "compute_mask",
    "diffusers_taylorseer",
    "forecasting_eps_fn",
    "full_computations",
    "newton_forecast",
    "speedup_limit",
    "taylorseer_forecast",
    "taylorseer_run",
]

__getattr__ = attributes(__name__)
