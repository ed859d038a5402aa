"""Classifier guidance itself: the classifier's gradient and the guided noise prediction.

Dhariwal & Nichol 2021 (arXiv:2105.05233), Section 4 and Algorithm 2. Bayes' rule on noisy
samples splits the conditional score into the unconditional score (the denoiser) and the score of
a noise-aware classifier; the sampler only ever sees the modified noise prediction ``eps_hat``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from reference.data import NULL_CLASS
from reference.harness.sampling import EpsFn, model_eps_fn


def log_prob_grad(
    classifier: nn.Module, x_t: torch.Tensor, t: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """``grad_x log p_phi(y | x_t, t)`` per sample ``[N, ...]`` (autograd, no parameter grads)."""
    with torch.enable_grad():
        x = x_t.detach().requires_grad_(True)
        log_p = F.log_softmax(classifier(x, t), dim=-1)
        selected = log_p[torch.arange(len(y)), y].sum()  # samples are independent
        # backward(inputs=[x]) rather than autograd.grad: the same gradient, accumulated only
        # into x, and it also runs under torch's FlopCounterMode (which autograd.grad does not).
        torch.autograd.backward(selected, inputs=[x])
    return x.grad


def classifier_guided_eps_fn(
    eps_fn: EpsFn,
    classifier: nn.Module,
    alphas_cumprod: torch.Tensor,
    scale: float,
    null_class: int = NULL_CLASS,
) -> EpsFn:
    """An `EpsFn` for unconditional ``eps_fn`` guided towards the
    ``labels`` it is given.

    The denoiser always receives ``null_class``; the classifier receives the target labels:
    ``eps_hat = eps - sqrt(1 - abar_t) * scale * grad log p(y | x_t, t)``. ``scale = 0``
    reproduces the unguided sampler exactly (the gradient is still computed, then multiplied by
    0, so the cost stays that of guidance).
    """
    if scale < 0:
        raise ValueError(f"guidance scale must be >= 0, got {scale}")
    abar = alphas_cumprod.detach().to(torch.float64)

    def guided(x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        null = torch.full_like(labels, null_class)
        # grad log p(x_t) = -eps(x_t, t) / sqrt(1 - abar_t): the unconditional score
        eps = eps_fn(x_t, t, null)
        # Bayes: grad log p(x_t | y) = grad log p(x_t) + grad log p_phi(y | x_t)
        grad = log_prob_grad(classifier, x_t, t, labels)
        sigma = (1.0 - abar[t.long()]).sqrt().to(eps.dtype).view(-1, *([1] * (eps.dim() - 1)))
        # Algorithm 2: eps_hat = eps - sqrt(1 - abar_t) * s * grad log p_phi(y | x_t)
        return eps - sigma * (scale * grad)

    return guided


def finite_difference_grad(
    classifier: nn.Module, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor, h: float = 1e-6
) -> torch.Tensor:
    """Central differences of ``sum_i log p(y_i | x_i, t_i)`` w.r.t. every element of ``x``."""
    grad = torch.zeros_like(x)
    flat = grad.view(-1)
    with torch.no_grad():

        def f(v: torch.Tensor) -> float:
            log_p = F.log_softmax(classifier(v, t), dim=-1)
            return float(log_p[torch.arange(len(y)), y].sum())

        for i in range(x.numel()):
            e = torch.zeros_like(x).view(-1)
            e[i] = h
            e = e.view_as(x)
            flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return grad


@dataclass(frozen=True, eq=False)
class ClassifierGuidanceConfig:
    """What
    [`apply_classifier_guidance`][reference.classifier_guidance.guidance.apply_classifier_guidance]
    needs besides the denoiser.

    ``classifier(x_t, t) -> logits`` must be trained on noised images at every noise level of
    the schedule whose cumulative products ``alphas_cumprod`` are given; ``scale`` is ``s``.
    """

    classifier: nn.Module
    alphas_cumprod: torch.Tensor
    scale: float = 1.0
    null_class: int = NULL_CLASS


def apply_classifier_guidance(
    model: nn.Module | Callable[..., torch.Tensor], config: ClassifierGuidanceConfig
) -> EpsFn:
    """Guide a denoiser (a diffusers ``UNet2DModel``/DiT, or any ``EpsFn``) with a classifier.

    Returns an ``EpsFn`` for `reference.harness.sampling.sample`: pass the *target* classes
    as ``labels``; the denoiser itself is called with ``config.null_class``:

        eps = apply_classifier_guidance(unet, ClassifierGuidanceConfig(clf, abar, scale=2.0))
        x0 = sample(eps, zoo.teacher_scheduler(), noise, steps=20, labels=targets)
    """
    eps_fn = model_eps_fn(model) if isinstance(model, nn.Module) else model
    return classifier_guided_eps_fn(
        eps_fn, config.classifier, config.alphas_cumprod, config.scale, config.null_class
    )
