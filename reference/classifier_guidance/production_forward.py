"""Calling a diffusers denoiser through a wrapper: arguments by name, its output's structure,
its null label, and the one-line refusal with a reason. Shared by both guidance wrappers of
[`reference.classifier_guidance.production`][reference.classifier_guidance.production].

Pitfalls
========
* diffusers' classes name their input ``sample`` (U-Nets) or ``hidden_states`` (transformers),
  and take it positionally or by name: arguments are bound to the signature, never by position.
* A class-conditional ``UNet2DModel`` has no declared null label; the last row of its class
  table is taken (the zoo's convention), a continuous class embedding has none.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from reference.harness.production import UnsupportedModel, require


def require_with_reason(
    model: nn.Module, supported: tuple[str, ...], technique: str, reasons: Mapping[str, str]
) -> str:
    """`require`, with the reason in the one line when the class is refused for a known one."""
    name = type(model).__name__
    if name in reasons:
        raise UnsupportedModel(
            f"{technique} does not support {name} ({reasons[name]}); "
            f"supported: {', '.join(supported)}"
        )
    return require(model, supported, technique)


def sample_name(model: nn.Module) -> str:
    """The name of the noisy input of ``model``'s ``forward``."""
    return "sample" if type(model).__name__.startswith("UNet") else "hidden_states"


def null_class(model: nn.Module) -> int | None:
    """The label of "no class" of a class-conditional model; ``None`` for an unconditional one.

    DiT: ``num_embeds_ada_norm`` (its label table has one extra row, trained by class dropout).
    ``UNet2DModel``: the last row of its class table, ``num_class_embeds - 1`` (the zoo's
    convention); a continuous class embedding (``class_embed_type``) has no null label.
    """
    name = type(model).__name__
    if name == "DiTTransformer2DModel":
        return int(model.config.num_embeds_ada_norm)
    embedding = getattr(model, "class_embedding", None)
    if embedding is None:
        return None
    if not isinstance(embedding, nn.Embedding):
        raise UnsupportedModel(
            f"{name} with class_embed_type={model.config.class_embed_type!r} has no null label;"
            " pass it as uncond={'class_labels': ...}"
        )
    return embedding.num_embeddings - 1


def bind_arguments(forward: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by name (positional ones included)."""
    return dict(inspect.signature(forward).bind(*args, **kwargs).arguments)


def eps_of(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out.sample


def output_like(out: Any, eps: torch.Tensor) -> Any:
    """``eps`` in the structure of the model's own output (tuple or output class)."""
    return (eps, *out[1:]) if isinstance(out, tuple) else type(out)(sample=eps)


def as_rows(value: torch.Tensor, like: torch.Tensor, n: int) -> torch.Tensor:
    """``value`` (batch 1 or ``n``) as ``n`` rows with ``like``'s device and dtype."""
    value = torch.as_tensor(value).to(like.device, like.dtype)
    if value.dim() == like.dim() - 1:
        value = value.unsqueeze(0)
    if value.shape[0] not in (1, n):
        raise ValueError(f"unconditional input has batch {value.shape[0]}, expected 1 or {n}")
    return value.expand(n, *like.shape[1:])


def paired_batch(cond: Any, uncond: Any, n: int) -> Any:
    """The batch of ``2n`` rows: conditional rows first, then the unconditional ones.

    Tensors with ``n`` rows are doubled (with ``uncond``'s rows where it differs), dictionaries
    (``added_cond_kwargs``) recursively; everything else (scalars, flags) is shared.
    """
    if isinstance(cond, Mapping):
        other = uncond if isinstance(uncond, Mapping) else {}
        return {k: paired_batch(v, other.get(k, v), n) for k, v in cond.items()}
    if torch.is_tensor(cond) and cond.dim() >= 1 and cond.shape[0] == n:
        return torch.cat([cond, as_rows(uncond, cond, n)])
    return cond


def eps_channels(eps: torch.Tensor, channels: int) -> int:
    """Channels that carry epsilon: the first half of a learned-variance output, else all."""
    return channels if eps.shape[1] == 2 * channels else eps.shape[1]
