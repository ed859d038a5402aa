"""Efficient stochastic reparameterization: parameterizations and sampling that tame the noise.

The idea
========
A diffusion model is trained by stochastic gradient descent on a Monte-Carlo estimate of an
expectation over three random things: the clean example ``x_0``, the noise level ``t`` and the
noise ``eps`` (the *reparameterization* ``x_t = alpha_t x_0 + sigma_t eps`` turns sampling
``x_t`` into a differentiable function of ``eps``). How noisy that estimate is decides how many
examples training needs. Two different levers act on it:

1. **Sampling** (pure variance reduction: the expected objective is unchanged). Stratify the
   noise levels of a minibatch (low-discrepancy ``t_i = (u + i/B) mod 1``, Kingma et al. 2021),
   draw ``t`` from an importance distribution ``q(t) ∝ sqrt(E[L_t^2])`` learned from a running
   loss history and reweight by ``p/q`` (Nichol & Dhariwal 2021), or couple the noise in
   antithetic pairs ``(eps, -eps)``.
2. **Parameterization and weighting** (the objective changes). Predicting ``eps``, ``x_0`` or
   ``v = alpha_t eps - sigma_t x_0`` (Salimans & Ho 2022), or EDM's preconditioned ``F`` with
   ``D = c_skip x + c_out F(c_in x; c_noise)``, loss weight ``lambda(sigma)`` and log-normal
   ``sigma`` (Karras et al. 2022), all regress the same posterior mean but weight the noise
   levels differently (``SNR_t``, ``1``, ``1 + SNR_t``, ``SNR_t + 1/sigma_data^2`` per unit of
   x0-error) and give the network targets of different scales.

The mathematics
===============
With ``t ~ q`` the minibatch estimate ``J_hat = (1/B) sum_i p(t_i)/q(t_i) l_i`` is unbiased for
``J = E_{t~p}[l]``. Its per-example variance splits as
``Var(l) = Var_t(E[l | t]) + E_t[Var(l | t)]``: stratifying ``t`` removes (most of) the first
term; importance sampling minimises ``E_q[(p/q)^2 l^2]``, smallest for ``q ∝ p sqrt(E[l_t^2])``;
antithetic pairs cancel the part of ``l`` that is odd in ``eps`` (and halve the number of
distinct ``x_0, t``). A parameterization changes ``l`` itself: the eps-loss of an eps-network is
``SNR_t ||x_0 - x0_hat||^2``, whose size varies by orders of magnitude across ``t``; EDM's
``c_out`` and ``lambda = 1/c_out^2`` make the target unit-variance so every level contributes a
loss of the same size, and its log-normal ``p`` concentrates the samples where the loss can
still be reduced. Variances of *different* objectives are compared scale-free: the relative
variance ``Var(J_hat)/J^2`` and the gradient noise-to-signal ``tr Cov(g)/|E g|^2``.

What this package shows
=======================
*
  [`reference.stochastic_reparameterization.objectives`][reference.stochastic_reparameterization.objectives]
  - the four parameterizations on the zoo's discrete cosine schedule, with EDM's preconditioning,
  exact conversions between them and the x0-error weight of each.
*
  [`reference.stochastic_reparameterization.samplers`][reference.stochastic_reparameterization.samplers]
  - uniform, log-normal (discretised) and loss-history importance proposals, low-discrepancy
  timesteps and antithetic noise.
*
  [`reference.stochastic_reparameterization.variance`][reference.stochastic_reparameterization.variance]
  - repeated-draw variance of loss and gradient estimators (covariance trace, random projections),
  bootstrap intervals, the variance decomposition that explains them.
*
  [`reference.stochastic_reparameterization.training`][reference.stochastic_reparameterization.training]
  - a tiny U-Net trained from scratch per scheme on common yardsticks;
  [`training_runs`][reference.stochastic_reparameterization.training_runs] runs every scheme with
  the same training seeds and budget, and scores the samples of every trained model over paired
  noise seeds (the same noise for every scheme on each seed).
*
  [`reference.stochastic_reparameterization.studies`][reference.stochastic_reparameterization.studies]
  - the estimators, the schemes and the variance studies on the zoo teacher and the tiny U-Nets;
  [`notes`][reference.stochastic_reparameterization.notes] and
  [`figures`][reference.stochastic_reparameterization.figures] turn them into the result's notes and
  figures;
  [`reference.stochastic_reparameterization.bench`][reference.stochastic_reparameterization.bench]
  is the benchmark (``python -m reference.stochastic_reparameterization``, see ``--help``).

When to use it
==============
Low-discrepancy timesteps cost nothing and rarely hurt: use them. Antithetic noise and
importance sampling help only when their variance term dominates (measure it - the tests and
the benchmark show how). v-prediction or EDM preconditioning matter most when the model must be
accurate at very low SNR (few-step sampling, distillation, high resolution), where an
eps-network's implied ``x0_hat = (x_t - sigma_t eps_hat)/alpha_t`` amplifies its errors by
``sigma_t/alpha_t = SNR_t^(-1/2)``.

Pitfalls
========
* Importance sampling without the ``p/q`` weight silently changes the objective; with a stale
  or noisy history the weights can be large and *raise* the variance (hence the uniform mixing).
* A variance ratio between different objectives is meaningless unless made scale-free; a lower
  loss variance of a reweighted objective says nothing about sample quality by itself.
* Antithetic pairs share ``x_0`` and ``t``: with a small batch they can increase the variance.
* Losses of different parameterizations are on different scales: compare training runs on a
  common yardstick, not on their own losses, and use an optimizer that is invariant to the loss
  scale (Adam) or rescale the learning rate.

Sources
=======
* Kingma, Salimans, Poole, Ho. *Variational Diffusion Models.* 2021, arXiv:2107.00630
  (low-discrepancy timesteps).
* Nichol, Dhariwal. *Improved Denoising Diffusion Probabilistic Models.* 2021, arXiv:2102.09672
  (importance sampling with a loss history; cosine schedule).
* Salimans, Ho. *Progressive Distillation for Fast Sampling of Diffusion Models.* 2022,
  arXiv:2202.00512 (v-prediction).
* Karras, Aittala, Aila, Laine. *Elucidating the Design Space of Diffusion-Based Generative
  Models.* 2022, arXiv:2206.00364 (EDM preconditioning, weighting, log-normal sigma).
* Kingma, Gao. *Understanding Diffusion Objectives as the ELBO with Simple Data Augmentation.*
  2023, arXiv:2303.00848 (all these objectives as weightings of one loss).
* McCandlish, Kaplan, Amodei et al. *An Empirical Model of Large-Batch Training.* 2018,
  arXiv:1812.06162 (gradient noise scale).

In production
=============
diffusers: ``prediction_type="epsilon" | "v_prediction" | "sample"`` on every scheduler and
``DDPMScheduler.get_velocity``; ``EDMEulerScheduler`` / ``EDMDPMSolverMultistepScheduler``
(``precondition_inputs``, ``precondition_noise``, ``precondition_outputs``); the training
scripts' ``--snr_gamma`` option (Min-SNR loss weighting). The improved-DDPM code's
``LossSecondMomentResampler``; k-diffusion's ``utils.rand_log_normal`` and ``layers.Denoiser``;
``diffusers.training_utils.compute_snr`` for SNR-based loss weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .objectives import (
        PARAMETERIZATIONS,
        EDMPreconditioning,
        NoiseSchedule,
        Parameterization,
        sigma_data_of,
    )
    from .samplers import (
        LossSecondMomentHistory,
        Sampling,
        TimestepProposal,
        draw,
        edm_proposal,
        low_discrepancy_uniforms,
        uniform_proposal,
    )

__all__ = [
    "PARAMETERIZATIONS",
    "EDMPreconditioning",
    "LossSecondMomentHistory",
    "NoiseSchedule",
    "Parameterization",
    "Sampling",
    "TimestepProposal",
    "draw",
    "edm_proposal",
    "low_discrepancy_uniforms",
    "sigma_data_of",
    "uniform_proposal",
]

__getattr__ = attributes(__name__)
