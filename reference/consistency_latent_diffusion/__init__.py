"""Latent consistency distillation: one to four network calls instead of fifty.

Idea
====
A deterministic diffusion sampler follows a trajectory of the probability-flow ODE from noise
``z_T`` to an image latent ``z_0``. A **consistency model** ``f_theta(z_t, t)`` maps *every*
point of such a trajectory straight to its origin (Song et al. 2023, arXiv:2303.01469), so that
``f_theta(z_t, t) = f_theta(z_t', t')`` along a trajectory ("self-consistency") and one network
call turns noise into a sample. Latent Consistency Models (Luo et al. 2023, arXiv:2310.04378) do
this in the latent space of an autoencoder, as latent diffusion does; the sample is then decoded
by the VAE, a fixed cost per sample that no step reduction removes.

Boundary condition
==================
The origin of a trajectory is itself: ``f(z, 0) = z``. It is built into the parameterisation
instead of being learned:

    f_theta(z_t, t) = c_skip(t) z_t + c_out(t) x_hat_theta(z_t, t),
    c_skip(t) = sigma_d^2 / ((s t)^2 + sigma_d^2),   c_out(t) = s t / sqrt((s t)^2 + sigma_d^2)

with ``c_skip(0) = 1, c_out(0) = 0``
([`boundary_scalings`][reference.consistency_latent_diffusion.boundary_scalings]; LCM's constants
``sigma_d = 0.5``, ``s = 10``). ``x_hat_theta = (z_t - sigma_t eps_theta) / alpha_t`` comes from an
epsilon-prediction U-Net initialised as a copy of the teacher - exactly what diffusers'
``LCMScheduler`` assumes, so the same network samples with it (tested bit for bit).

Consistency distillation (LCM's algorithm)
==========================================
For a clean latent ``z_0`` (the VAE encoding of a training digit):

1. pick ``t_{n+k}`` on the solver grid ``19, 39, ..., 979`` (``N = 50`` points, **skipping
   step** ``k = 20``) and noise it: ``z_{t_{n+k}} = alpha z_0 + sigma eps``;
2. one DDIM step of the frozen latent teacher (the ODE solver ``Phi``) goes from ``t_{n+k}`` to
   ``t_n = t_{n+k} - k``
   ([`ddim_solver_step`][reference.consistency_latent_diffusion.ddim_solver_step]);
3. minimise ``d(f_theta(z_{t_{n+k}}, t_{n+k}), f_theta-(z^_{t_n}, t_n))`` with the pseudo-Huber
   distance ``d`` and the **target network** ``theta-``, an EMA of ``theta`` (``mu = 0.95``) that
   gets no gradient
   ([`consistency_distillation_loss`][reference.consistency_latent_diffusion.consistency_distillation_loss]).

The skipping step matters: adjacent timesteps (``k = 1``) differ so little that the loss carries
almost no signal per update; LCM's ``k = 20`` trades a little solver error for much faster
convergence. The boundary condition anchors the chain at ``t = 0``, and the consistency
propagates up the grid as training proceeds.

Sampling ======== Multistep consistency sampling
([`consistency_sample`][reference.consistency_latent_diffusion.consistency_sample]; Song et al.
Algorithm 1): ``x = f(z_T, tau_1)``; for each further ``tau_i`` re-noise ``z = alpha_tau x +
sigma_tau eps`` and denoise again ``x = f(z, tau_i)``. One call per step; the timesteps follow
``LCMScheduler``'s rule (1 step: ``[979]``, 2 steps: ``[979, 499]``, 4 steps: ``[979, 739, 499,
259]``).

Pitfalls
========
* The zoo's capped cosine schedule ends at ``alpha_999 = 5e-5``: converting an epsilon prediction to
  ``x_0`` there divides by 5e-5, and a DDIM step from 999 amplifies the teacher's error 600-fold.
  The grid therefore stops at ``t = 979``
  ([`MAX_TIMESTEP`][reference.consistency_latent_diffusion.MAX_TIMESTEP]; Stable Diffusion's
  schedule has ``alpha_999 = 0.068``, where LCM works from 999). The same holds for any
  epsilon-prediction sampler: the controls start at 979 too.
* Latents are not images: ``clip_sample`` must be off for every latent scheduler (the zoo's
  default configuration clips ``x_0`` to [-1, 1], right only in pixel space).
* More steps are not always better: each step re-injects fresh noise, so quality saturates
  after 2-4 steps instead of converging to the teacher.
* The decoder caps the end-to-end speedup: with U-Net call cost ``u`` and decode cost ``d``,
  ``(50u + d) / (2u + d)`` instead of the 25x fewer network calls. Neither figure bounds a
  measured speedup (the samplers' per-step overheads differ), and FLOPs do not give ``d / u``
  on a tiny, overhead-bound network: the benchmark states the decoder's FLOPs and its time apart.
* At equal steps the consistency model costs what the teacher's sampler costs (same U-Net), so
  the claim to test is quality at the same steps (against the teacher's DPM-Solver++ on the
  same timesteps) and against the teacher's many-step DDIM.
* Guidance: LCM distils the classifier-free-guided teacher and conditions the student on the
  guidance scale ``w``; here the conditional teacher is distilled without guidance (``w = 1``).

In production
=============
diffusers: ``LCMScheduler`` + ``LatentConsistencyModelPipeline`` (or any Stable Diffusion
pipeline with ``LCMScheduler`` and the LCM-LoRA adapter, Luo et al. 2023, arXiv:2311.05556), the
training script ``examples/consistency_distillation/train_lcm_distill_sd_wds.py``; the original
pixel-space consistency models sample with ``CMStochasticIterativeScheduler``.

Package ``reference/consistency_latent_diffusion/`` (was ``reference.consistency``):
[`reference.consistency_latent_diffusion.core`][reference.consistency_latent_diffusion.core]
(boundary conditions, grids, solver, loss, sampler),
[`reference.consistency_latent_diffusion.schedulers`][reference.consistency_latent_diffusion.schedulers]
(diffusers' ``LCMScheduler`` and the DPM-Solver++ control at the consistency timesteps),
[`reference.consistency_latent_diffusion.train`][reference.consistency_latent_diffusion.train] (zoo
spec ``consistency_latent``) and
[`reference.consistency_latent_diffusion.bench`][reference.consistency_latent_diffusion.bench]
(configuration, benchmark, demo; its measuring helpers are shared with
[`reference.timestep_distillation.few_step`][reference.timestep_distillation.few_step]). Run it with
``python -m reference.consistency_latent_diffusion`` (demo) or ``--bench`` (see ``--help``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .core import (
        MAX_TIMESTEP,
        ORIGINAL_STEPS,
        SIGMA_DATA,
        TIMESTEP_SCALING,
        boundary_scalings,
        consistency_distillation_loss,
        consistency_fn,
        consistency_sample,
        ddim_solver_step,
        ema_update,
        pseudo_huber,
        sampling_timesteps,
        skipping_timesteps,
    )
    from .model import load_consistency_model
    from .schedulers import dpm_solver, lcm_scheduler, with_timesteps
    from .train import ZOO_NAME, ZOO_SPECS

__all__ = [
    "MAX_TIMESTEP",
    "ORIGINAL_STEPS",
    "SIGMA_DATA",
    "TIMESTEP_SCALING",
    "ZOO_NAME",
    "ZOO_SPECS",
    "boundary_scalings",
    "consistency_distillation_loss",
    "consistency_fn",
    "consistency_sample",
    "ddim_solver_step",
    "dpm_solver",
    "ema_update",
    "lcm_scheduler",
    "load_consistency_model",
    "pseudo_huber",
    "sampling_timesteps",
    "skipping_timesteps",
    "with_timesteps",
]

__getattr__ = attributes(__name__)
