"""Classifier guidance: steer an unconditional diffusion model with a noise-aware classifier.

Idea
====
Bayes' rule on noisy samples: ``grad log p(x_t | y) = grad log p(x_t) + grad log p(y | x_t)``.
The denoiser gives the first term (``grad log p(x_t) = -eps(x_t, t) / sqrt(1 - abar_t)``), a
classifier trained on noised images ``p_phi(y | x_t, t)`` the second. Dhariwal & Nichol 2021
(arXiv:2105.05233, Algorithm 2) fold both into a modified noise prediction for DDIM:

    eps_hat(x_t, t) = eps(x_t, t) - sqrt(1 - abar_t) * s * grad_x log p_phi(y | x_t, t)

with a *guidance scale* ``s``: ``s = 1`` samples ``p(x | y)`` in theory, ``s > 1`` sharpens
towards ``p(y | x)^s`` (more class-typical, less diverse). Here the unconditional model is the
zoo teacher fed the null class 10, and ``p_phi`` is the zoo's ``NoisyDigitsClassifier``.

Classifier-free guidance (Ho & Salimans 2022, arXiv:2207.12598) needs no classifier: one network
trained with label dropout gives both ``eps(x_t, t, y)`` and ``eps(x_t, t, null)``, and
``eps_uncond + w (eps_cond - eps_uncond)`` plays the same role (``w = 1``: plain conditional).
The zoo teacher was trained that way, so both methods run on the same weights.

Cost per step
=============
* classifier guidance: one U-Net pass + one classifier forward **and backward** to ``x_t``;
* classifier-free guidance: two U-Net passes (batched as one call with twice the rows).
Which is cheaper depends on the classifier's size relative to the U-Net; the benchmark measures
both (latency of whole sampling runs, FLOPs counted by ``torch.utils.flop_counter``, backward
included). Comparing the two at the same number of steps favours the cheaper one, so the
benchmark's control at the same cost is classifier-free guidance with the fewer steps whose FLOPs
per sample equal those of classifier guidance (``k = round(K F_cg / F_cfg)``), and its aims judge
classifier guidance against that control on accuracy and FDD, paired over noise seeds.

Pitfalls
========
* The classifier must be trained on ``x_t`` at every noise level of the schedule; a clean
  classifier's gradients on noisy inputs are meaningless (adversarial-like directions).
* Gradients need ``torch.enable_grad()`` inside the (no-grad) sampling loop, and a classifier
  without batch statistics (GroupNorm, not BatchNorm in train mode), or samples interact.
* Accuracy measured with a classifier that guided the samples is circular: this module scores
  with the *clean* zoo classifier, a different network; large scales still exploit shared
  features, so FDD and diversity are reported beside accuracy.
* "Guidance lets fewer steps reach equal quality" is not a property of guidance: it changes
  *what* is sampled (sharper class-typical digits), not the ODE discretisation error; measure
  accuracy and FDD against NFE (the benchmark does).

Production: classifier guidance is ``guided_diffusion``'s ``cond_fn`` (Dhariwal & Nichol's
code); diffusers has no built-in classifier-guidance pipeline (community pipelines only), while
classifier-free guidance is the ``guidance_scale`` argument of every conditional pipeline.

The package
===========
* [`reference.classifier_guidance.guidance`][reference.classifier_guidance.guidance] - the
  technique: [`log_prob_grad`][reference.classifier_guidance.log_prob_grad],
  [`classifier_guided_eps_fn`][reference.classifier_guidance.classifier_guided_eps_fn] (Algorithm 2)
  and the public shape ``apply_classifier_guidance(model, ClassifierGuidanceConfig(classifier,
  alphas_cumprod, scale))``, which returns an ``EpsFn`` for `reference.harness.sampling.sample`;
  [`finite_difference_grad`][reference.classifier_guidance.finite_difference_grad] is the oracle of
  the gradient test.
* [`reference.classifier_guidance.study`][reference.classifier_guidance.study] - the sweep over
  scales and NFE on paired seeds, the FLOPs of one step, the same-cost steps
  ([`matched_steps`][reference.classifier_guidance.matched_steps]), the timed runs,
  [`pick_scale`][reference.classifier_guidance.pick_scale] and
  [`first_reaching`][reference.classifier_guidance.first_reaching].
* [`reference.classifier_guidance.figures`][reference.classifier_guidance.figures] - the figures;
  [`reference.classifier_guidance.bench`][reference.classifier_guidance.bench] - the benchmark and
  demo (the technique contract).

Run ``python -m reference.classifier_guidance`` for a demonstration, ``--bench`` for the benchmark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .guidance import (
        ClassifierGuidanceConfig,
        apply_classifier_guidance,
        classifier_guided_eps_fn,
        finite_difference_grad,
        log_prob_grad,
    )
    from .study import Models, Study, first_reaching, matched_steps, measure, pick_scale

__all__ = [
    "ClassifierGuidanceConfig",
    "Models",
    "Study",
    "apply_classifier_guidance",
    "classifier_guided_eps_fn",
    "finite_difference_grad",
    "first_reaching",
    "log_prob_grad",
    "matched_steps",
    "measure",
    "pick_scale",
]

__getattr__ = attributes(__name__)
