"""Classifier-free and classifier guidance as removable wrappers of diffusers' denoisers.

Idea
====
Both guidances change only the noise prediction a sampler sees, so each is a wrapper of the
denoiser's ``forward``: every pipeline, scheduler and sampling loop keeps working unchanged.

* **Classifier-free guidance** (Ho and Salimans 2022, arXiv:2207.12598, Sec. 3.2, eq. (6)):
  the wrapped denoiser is called once with the conditional inputs and evaluates the
  unconditional ones in the same batch (twice the rows, one call):

      eps_hat = eps_u + w (eps_c - eps_u)                                              (1)

  with ``eps_c = eps(x_t, t, c)``, ``eps_u = eps(x_t, t, null)``. The paper writes
  ``(1 + w') eps_c - w' eps_u``; ``w = 1 + w'`` is diffusers' ``guidance_scale``, so ``w = 1`` is
  the plain conditional model and ``w = 0`` the unconditional one. The null input is the null
  text embedding for text models (``uncond={"encoder_hidden_states": ...}``), the extra label
  ``num_embeds_ada_norm`` of DiT's label table (the row its class dropout trained), and for a
  class-conditional ``UNet2DModel`` the last row of its class table (the zoo's convention:
  ``num_class_embeds = 11``, label 10 = "no label").

* **Classifier guidance** (Dhariwal and Nichol 2021, arXiv:2105.05233, Sec. 4.2, Algorithm 2):
  Bayes' rule adds the score of a noise-aware classifier to the denoiser's; for an epsilon model

      eps_hat = eps(x_t, t) - s sqrt(1 - abar_t) grad_x log p_phi(y | x_t, t)           (2)

  with the scale ``s`` and the schedule's cumulative ``abar_t`` (``alphas_cumprod``; from the
  config, a scheduler in the config, or the pipeline passed). The target classes arrive as the
  wrapped model's ``class_labels``; the denoiser itself sees the null label (an unconditional
  score, as in the package's study) or, with ``conditional=True``, the same labels (guiding a
  conditional model, which the paper also does). The gradient is the package's own
  ``log_prob_grad``.

Learned variance: DiT predicts ``[eps, v]`` (``out_channels = 2 in_channels``); (1) and (2) act on
the ``eps`` channels only and the variance channels are the conditional rows' (as in the rows
``DiTPipeline`` keeps after its own guidance).

Usage
=====
.. code-block:: python

    handle = apply_cfg(pipe, CFGConfig(4.0))              # DiT: the null label is known
    images = pipe(labels, guidance_scale=1.0).images       # the pipeline's own CFG off
    handle.remove()
    handle = apply_cfg(unet, CFGConfig(7.5), uncond={"encoder_hidden_states": null_embedding})
    handle = apply_classifier_guidance(pipe, ClassifierGuidanceConfig(2.0, classifier))

Pitfalls
========
* Classifier-free guidance inside the model doubles the rows of every call: a pipeline that
  already guides (``guidance_scale > 1``) must be called with ``guidance_scale=1`` or it guides
  twice.
* ``w = 1`` equals the conditional output only up to rounding: ``eps_u + (eps_c - eps_u)`` is two
  float operations, and the batched call of ``2N`` rows may sum in another order than ``N`` rows.
* Classifier guidance is undefined without a class label: text-conditioned models are refused.
  Flux-dev is guidance-distilled (the guidance scale is an input embedding of a model distilled
  from a guided teacher), so a second, unconditional pass is refused there.
* Rows whose target is the null class (``DiTPipeline`` labels the unconditional half of its own
  CFG batch with it) get no classifier gradient: there is no class to score.
* ``log_prob_grad`` needs gradients inside a no-grad sampling loop; it enables them itself. The
  classifier must be trained on noisy inputs ``x_t`` at every ``t`` of the schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reference.harness.production import (
    Applied,
    UnsupportedModel,
    denoiser,
    replace_forward,
)

from .guidance import log_prob_grad
from .production_forward import (
    bind_arguments,
    eps_channels,
    eps_of,
    null_class,
    output_like,
    paired_batch,
    require_with_reason,
    sample_name,
)

CFG_SUPPORTED = (
    "UNet2DModel",
    "UNet2DConditionModel",
    "DiTTransformer2DModel",
    "PixArtTransformer2DModel",
    "SD3Transformer2DModel",
)
CG_SUPPORTED = ("UNet2DModel", "DiTTransformer2DModel")
_FLUX = "Flux-dev is guidance-distilled: its guidance scale is an input, not a second pass"
_TEXT = "text-conditioned: no class label for a classifier to score"
CFG_REFUSED = {"FluxTransformer2DModel": _FLUX}
CG_REFUSED = {
    "UNet2DConditionModel": _TEXT,
    "PixArtTransformer2DModel": _TEXT,
    "SD3Transformer2DModel": _TEXT,
    "FluxTransformer2DModel": _TEXT,
}
TEXT_INPUTS = {
    "UNet2DConditionModel": ("encoder_hidden_states",),
    "PixArtTransformer2DModel": ("encoder_hidden_states",),
    "SD3Transformer2DModel": ("encoder_hidden_states", "pooled_projections"),
}
"""Inputs a text model's unconditional branch must be given (the null prompt's encodings)."""


# --------------------------------------------------------------------------- classifier-free


@dataclass(frozen=True)
class CFGConfig:
    """Classifier-free guidance scale ``w`` of (1): 1 = conditional, 0 = unconditional."""

    guidance_scale: float = 7.5


def unconditional_inputs(model: nn.Module, uncond: Mapping[str, Any] | None) -> dict[str, Any]:
    """The inputs that differ in the unconditional branch (checked before any change)."""
    name = type(model).__name__
    if uncond is not None:
        missing = [k for k in TEXT_INPUTS.get(name, ()) if k not in uncond]
        if missing:
            raise ValueError(f"uncond for {name} lacks {', '.join(missing)} (the null prompt's)")
        return dict(uncond)
    if name in TEXT_INPUTS:
        raise ValueError(
            f"classifier-free guidance of {name} needs uncond={{{TEXT_INPUTS[name][0]!r}: "
            "the null prompt's encoding, ...}"
        )
    null = null_class(model)
    if null is None:
        raise UnsupportedModel(
            f"classifier-free guidance does not support an unconditional {name} "
            "(no class embedding); supported: class-conditional ones"
        )
    return {"class_labels": torch.tensor([null], device=next(model.parameters()).device)}


def cfg_combine(eps: torch.Tensor, n: int, guidance_scale: float, channels: int) -> torch.Tensor:
    """(1) on the ``eps`` channels of a ``2n``-row output (conditional rows first)."""
    eps_c, eps_u = eps[:n], eps[n:]
    k = eps_channels(eps, channels)
    guided = eps_u[:, :k] + guidance_scale * (eps_c[:, :k] - eps_u[:, :k])  # (1)
    return torch.cat([guided, eps_c[:, k:]], dim=1) if k < eps.shape[1] else guided


def apply_cfg(target: Any, config: CFGConfig, uncond: Mapping[str, Any] | None = None) -> Applied:
    """Classifier-free guidance inside the denoiser of ``target`` (a model or a pipeline).

    ``uncond``: the inputs of the unconditional branch, by ``forward`` argument name; required
    for text models (``{"encoder_hidden_states": null_embedding}``, SD3 also
    ``"pooled_projections"``; batch 1 or the call's batch), defaulted to the null class for DiT
    and class-conditional ``UNet2DModel``. ``remove()`` restores the original ``forward``.
    """
    model = denoiser(target)
    name = require_with_reason(model, CFG_SUPPORTED, "classifier-free guidance", CFG_REFUSED)
    null_inputs = unconditional_inputs(model, uncond)
    original = model.forward
    key = sample_name(model)
    w = float(config.guidance_scale)

    def forward(*args: Any, **kwargs: Any) -> Any:
        inputs = bind_arguments(original, args, kwargs)
        x = inputs[key]
        n = x.shape[0]
        missing = [k for k in null_inputs if inputs.get(k) is None]
        if missing:
            raise ValueError(f"classifier-free guidance: the call lacks {', '.join(missing)}")
        both = {k: paired_batch(v, null_inputs.get(k, v), n) for k, v in inputs.items()}
        out = original(**both)
        return output_like(out, cfg_combine(eps_of(out), n, w, x.shape[1]))

    applied = Applied(model, "classifier-free guidance", state={"class": name, "scale": w})
    replace_forward(applied, model, forward)
    return applied


# --------------------------------------------------------------------------- classifier guidance


@dataclass(frozen=True, eq=False)
class ClassifierGuidanceConfig:
    """Classifier guidance (2) for `apply_classifier_guidance`.

    ``classifier(x_t, t) -> logits`` must be trained on noised inputs at every ``t``.
    ``alphas_cumprod`` (``abar``) comes from here, else from ``scheduler.alphas_cumprod``, else
    from the scheduler of the pipeline passed as target. ``conditional``: the denoiser sees the
    target labels (a conditional model guided further) instead of the null label.
    ``null_class`` overrides `null_class` (rows asking for it are not guided). ``labels``: the
    target classes for calls that pass none (``DDPMPipeline`` calls ``unet(x, t)``).
    """

    scale: float
    classifier: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    alphas_cumprod: torch.Tensor | None = None
    scheduler: Any = None
    conditional: bool = False
    null_class: int | None = None
    labels: torch.Tensor | None = None


def _alphas_cumprod(config: ClassifierGuidanceConfig, target: Any) -> torch.Tensor:
    for source in (config, config.scheduler, getattr(target, "scheduler", None)):
        abar = getattr(source, "alphas_cumprod", None) if source is not None else None
        if abar is not None:
            return torch.as_tensor(abar).detach().to(torch.float64)
    raise ValueError(
        "classifier guidance needs the schedule: pass alphas_cumprod= or scheduler= in the "
        "config, or a pipeline with a scheduler"
    )


def _timestepas_rows(t: Any, n: int) -> torch.Tensor:
    """Integer timesteps, one per row (diffusers passes a scalar or ``[N]``, int or float)."""
    t = torch.as_tensor(t)
    t = t.round().long() if t.is_floating_point() else t.long()
    return t.reshape(-1).expand(n) if t.numel() == 1 else t.reshape(n)


def classifier_guided(
    eps: torch.Tensor,
    x_t: torch.Tensor,
    t: torch.Tensor,
    y: torch.Tensor,
    config: ClassifierGuidanceConfig,
    abar: torch.Tensor,
    null: int | None,
) -> torch.Tensor:
    """(2) on the ``eps`` channels; rows whose target is ``null`` keep ``eps``."""
    guide = torch.ones_like(y, dtype=torch.bool) if null is None else y != null
    target = torch.where(guide, y, torch.zeros_like(y))
    grad = log_prob_grad(config.classifier, x_t, t, target)  # grad_x log p_phi(y | x_t, t)
    grad = grad * guide.view(-1, *([1] * (grad.dim() - 1))).to(grad.dtype)
    sigma = (1.0 - abar[t]).sqrt().to(eps.dtype).view(-1, *([1] * (eps.dim() - 1)))
    k = eps_channels(eps, x_t.shape[1])
    guided = eps[:, :k] - config.scale * sigma * grad.to(eps.dtype)  # (2)
    return torch.cat([guided, eps[:, k:]], dim=1) if k < eps.shape[1] else guided


def apply_classifier_guidance(target: Any, config: ClassifierGuidanceConfig) -> Applied:
    """Classifier guidance (2) inside a ``UNet2DModel`` or DiT (or a pipeline holding one).

    Call the wrapped model with the *target* classes as ``class_labels`` (or set
    ``config.labels``); the denoiser sees the
    null label (or nothing, if it is unconditional), or the same labels with
    ``config.conditional``. ``scale = 0`` returns the plain denoiser's output exactly.
    """
    model = denoiser(target)
    name = require_with_reason(model, CG_SUPPORTED, "classifier guidance", CG_REFUSED)
    if config.scale < 0:
        raise ValueError(f"classifier guidance scale must be >= 0, got {config.scale}")
    abar = _alphas_cumprod(config, target)
    null = config.null_class if config.null_class is not None else null_class(model)
    class_conditional = name == "DiTTransformer2DModel" or model.class_embedding is not None
    original = model.forward
    key = sample_name(model)

    def forward(*args: Any, **kwargs: Any) -> Any:
        inputs = bind_arguments(original, args, kwargs)
        y = inputs.pop("class_labels", None)
        y = config.labels if y is None else y
        if y is None:
            raise ValueError(
                "classifier guidance: pass the target classes as class_labels or config labels"
            )
        x = inputs[key]
        y = torch.as_tensor(y, device=x.device).long().reshape(-1).expand(x.shape[0])
        if class_conditional:
            inputs["class_labels"] = y if config.conditional else torch.full_like(y, null)
        out = original(**inputs)
        t = _timestepas_rows(inputs["timestep"], x.shape[0]).to(abar.device)
        eps = classifier_guided(eps_of(out), x, t, y, config, abar, null)
        return output_like(out, eps)

    applied = Applied(model, "classifier guidance", state={"class": name, "scale": config.scale})
    replace_forward(applied, model, forward)
    return applied
