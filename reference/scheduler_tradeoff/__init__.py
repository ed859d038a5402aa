"""Scheduler trade-off: sample quality against the number of denoiser evaluations (NFE).

Idea
====
A trained epsilon-prediction model defines the whole reverse process; the *scheduler* (sampler)
only decides at which noise levels the model is called and how its predictions are combined into
the next sample. The same weights therefore give very different quality for the same compute,
depending on the sampler:

* **DDPM** ancestral sampling (Ho et al. 2020, arXiv:2006.11239) simulates the reverse *stochastic*
  chain; with fewer steps than the 1000 it was trained for, each step adds noise it cannot remove.
* **DDIM** (Song et al. 2020, arXiv:2010.02502) is the deterministic (``eta = 0``) sampler of a
  non-Markovian process with the same marginals. One step from ``t`` to ``s < t`` is (eq. 12):

      x0_hat = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t)
      x_s    = sqrt(abar_s) x0_hat + sqrt(1 - abar_s) eps

  which is the first-order (Euler) step of the probability-flow ODE in the right variables.
* **DPM-Solver++(2M)** (Lu et al. 2022, arXiv:2211.01095) solves the same ODE with an exponential
  integrator in ``lambda = log(alpha / sigma)`` (``alpha = sqrt(abar)``,
  ``sigma = sqrt(1 - abar)``) on the *data* prediction ``D = x0_hat``, reusing the previous
  step's prediction for second order at no extra NFE (Algorithm 2):

      h = lambda_s - lambda_t,  r = h_prev / h
      D = (1 + 1 / (2 r)) D_t - 1 / (2 r) D_prev       (first step and last step: D = D_t)
      x_s = (sigma_s / sigma_t) x_t - alpha_s (exp(-h) - 1) D

* **UniPC** (Zhao et al. 2023, arXiv:2302.04867) adds a corrector that reuses the *next*
  evaluation, raising the order again without extra NFE.
* **Euler** (Karras et al. 2022, arXiv:2206.00364) integrates the ODE in ``sigma = sqrt((1 -
  abar) / abar)`` with plain Euler steps.

The multistep solvers call the model once per step, so NFE = number of steps for all five.

The benchmark compares the five diffusers schedulers at a few NFE (DPM-Solver++ and UniPC at 10 NFE
against DDIM at 50, and against DDIM at the same 10 NFE, the matched-cost control) over paired noise
seeds, sweeps them over NFE 1-50 on one seed for the curves of the Fréchet digits distance (FDD)
against NFE and against wall time, and carries two minimal schedulers written from the papers,
[`MinimalDDIM`][reference.scheduler_tradeoff.MinimalDDIM] and
[`MinimalDPMSolverPP2M`][reference.scheduler_tradeoff.MinimalDPMSolverPP2M], tested step for step
against ``DDIMScheduler`` and ``DPMSolverMultistepScheduler``.

Settings shared by every scheduler (the comparison is only fair if they agree)
==============================================================================
* ``timestep_spacing="trailing"``: the first step is always at ``t = 999``, where the model was
  trained on (almost) pure noise, and the others are spaced evenly below it. ``"leading"`` (the
  DDIM/DDPM default) starts at ``999 - 999 // N * ...`` e.g. ``t = 900`` for ``N = 10``, i.e. it
  feeds pure noise to the model as if it still held 10 % signal; ``"linspace"`` starts at 999 but
  ends at ``t = 0`` and splits the range unevenly. Lin et al. 2023 (arXiv:2305.08891) recommend
  trailing for exactly this reason; at low NFE it matters a lot.
* Final step: every scheduler ends at ``abar = 1`` (sigma = 0): DDIM/DDPM with
  ``set_alpha_to_one``, DPM-Solver++/UniPC/Euler with ``final_sigmas_type="zero"``. The
  multistep solvers take a first-order last step there (``lower_order_final``), since the
  second-order formula degenerates when ``h`` is infinite.
* x0 clipping: the zoo schedule is cosine, whose last timestep has ``abar ~ 2e-9``; the x0
  prediction there divides by ``sqrt(abar) ~ 5e-5`` and amplifies model error ~20000-fold. The
  zoo's configuration therefore clips ``x0_hat`` to [-1, 1] (``clip_sample``). DPM-Solver++ and
  UniPC have no ``clip_sample``; their ``thresholding=True`` with ``sample_max_value=1.0`` clamps
  the dynamic threshold ``s`` to 1, which *is* static clipping to [-1, 1] (same numbers). Euler
  has no such option.
* One equation for all: configured this way the diffusers classes still solve *different*
  problems (DDIM with ``clip_sample`` clips x0 but steps with the raw eps, and drifts as it takes
  more steps; Euler does not clip at all). The benchmark therefore runs DDIM, DPM-Solver++(2M),
  UniPC and Euler on the harness's clipped ODE (`reference.harness.ode`: eps re-derived from the
  clipped x0), where more steps approach one converged solution, and judges them on their
  distance to it; diffusers' own DDIM is a reference row
  ([`reference.scheduler_tradeoff.samplers`][reference.scheduler_tradeoff.samplers]).

Pitfalls
========
* diffusers' DDIM/DDPM compute the previous timestep as ``t - 1000 // N``, not as the next entry of
  ``timesteps``; with trailing spacing the two agree only when ``N`` divides 1000 (at ``N = 15``
  DDIM's target is ``t = 933`` while the next model call is at 932).
  [`MinimalDDIM`][reference.scheduler_tradeoff.MinimalDDIM] follows the paper (the next timestep);
  the step-for-step test uses ``N`` that divide 1000.
* Multistep schedulers keep history: never reuse one object for two sampling loops.
* FDD is biased by the number of samples: every row and every point of the sweep uses the same
  N; the DDPM rows use fewer seeds (1000 steps cost twenty baselines) and are compared only with
  DDIM on the same noises.
* The NFE ratio is not a bound on the latency ratio: the steps call the same U-Net, but the
  schedulers' own arithmetic and per-step overhead differ; the benchmark calls it an estimate.

Production: ``diffusers`` ``DDPMScheduler``, ``DDIMScheduler``, ``DPMSolverMultistepScheduler``
(``algorithm_type="dpmsolver++"``, ``solver_order=2``), ``UniPCMultistepScheduler``,
``EulerDiscreteScheduler``; swap them on any pipeline with
``pipe.scheduler = X.from_config(pipe.scheduler.config, timestep_spacing="trailing")``.

The package
===========
* [`reference.scheduler_tradeoff.schedulers`][reference.scheduler_tradeoff.schedulers] -
  [`SCHEDULERS`][reference.scheduler_tradeoff.SCHEDULERS] (kept in `reference.harness.schedulers`,
  derived from the clipped ODE's samplers that every other benchmark solves),
  [`solver_settings`][reference.scheduler_tradeoff.solver_settings] (class name and configuration)
  and [`make_scheduler`][reference.scheduler_tradeoff.make_scheduler]: the five diffusers classes
  with the shared settings above.
* [`reference.scheduler_tradeoff.solvers`][reference.scheduler_tradeoff.solvers] -
  [`MinimalDDIM`][reference.scheduler_tradeoff.MinimalDDIM] (eq. 12) and
  [`MinimalDPMSolverPP2M`][reference.scheduler_tradeoff.MinimalDPMSolverPP2M] (Algorithm 2) written
  from the papers, with diffusers' ``set_timesteps``/``step`` protocol, and
  [`max_step_difference`][reference.scheduler_tradeoff.max_step_difference], the step-for-step
  check.
* [`reference.scheduler_tradeoff.samplers`][reference.scheduler_tradeoff.samplers] -
  [`runner`][reference.scheduler_tradeoff.runner]: each sampler on the clipped ODE, DDPM
  ancestrally, diffusers' DDIM as configured;
  [`reference.scheduler_tradeoff.sweep`][reference.scheduler_tradeoff.sweep] -
  [`sweep`][reference.scheduler_tradeoff.sweep.sweep] (every scheduler at every NFE from the
  same noise, with its distance to the solution);
  [`reference.scheduler_tradeoff.figures`][reference.scheduler_tradeoff.figures];
  [`reference.scheduler_tradeoff.bench`][reference.scheduler_tradeoff.bench] - the benchmark and
  demo (the technique contract).

There is no ``apply_...`` function: a scheduler *is* the public shape (any object with
``set_timesteps``, ``timesteps``, ``scale_model_input`` and ``step``), passed to
`reference.harness.sampling.sample` or set as ``pipe.scheduler``.

Run ``python -m reference.scheduler_tradeoff`` for a demonstration, ``--bench`` for the benchmark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .samplers import ODE_SAMPLERS, mode_of, runner
    from .schedulers import (
        LABELS,
        SCHEDULERS,
        TIMESTEP_SPACING,
        make_scheduler,
        model_calls_per_step,
        solver_settings,
    )
    from .solvers import (
        MINIMAL,
        MinimalDDIM,
        MinimalDPMSolverPP2M,
        MinimalScheduler,
        StepOutput,
        make_minimal,
        max_step_difference,
        trailing_timesteps,
    )
    from .sweep import Point, curves, nfe_to_match

__all__ = [
    "LABELS",
    "MINIMAL",
    "ODE_SAMPLERS",
    "SCHEDULERS",
    "TIMESTEP_SPACING",
    "MinimalDDIM",
    "MinimalDPMSolverPP2M",
    "MinimalScheduler",
    "Point",
    "StepOutput",
    "curves",
    "make_minimal",
    "make_scheduler",
    "max_step_difference",
    "mode_of",
    "model_calls_per_step",
    "nfe_to_match",
    "runner",
    "solver_settings",
    "trailing_timesteps",
]

__getattr__ = attributes(__name__)
