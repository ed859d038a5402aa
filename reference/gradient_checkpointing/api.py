"""One public shape for every policy: ``apply_gradient_checkpointing(unet, CheckpointConfig(...))``.

Like diffusers' ``enable_gradient_checkpointing()`` and torch's
``apply_activation_checkpointing(model, check_fn=...)``, the model is patched in place and keeps its
parameters, its ``state_dict`` keys and its call signature; only the training step's memory and time
change.
[`remove_gradient_checkpointing`][reference.gradient_checkpointing.api.remove_gradient_checkpointing]
undoes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .policies import (
    check_stageable,
    checkpoint_modules,
    even_segments,
    remove_module_checkpoints,
    sqrt_segments,
    staged_forward,
    unet_module_types,
    unet_stages,
)

POLICIES = ("none", "diffusers", "module", "stage", "sqrt")
"""none; diffusers' own switch; every ResNet/attention module; every stage; sqrt(n) segments."""


@dataclass(frozen=True)
class CheckpointConfig:
    """Where to put the checkpoints of a ``diffusers.UNet2DModel``.

    ``policy``: one of [`POLICIES`][reference.gradient_checkpointing.api.POLICIES]; ``segments``
    overrides the number of stage segments of ``"sqrt"`` (default ``round(sqrt(n))``, Chen et al.);
    ``preserve_rng_state`` replays the RNG of each region in its recomputation (needed for exact
    gradients with dropout).
    """

    policy: str = "sqrt"
    segments: int | None = None
    preserve_rng_state: bool = True

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; choose from {', '.join(POLICIES)}")
        if self.segments is not None and self.policy != "sqrt":
            raise ValueError("segments applies to the 'sqrt' policy only")


def stage_segments(unet: nn.Module, config: CheckpointConfig) -> list[range]:
    """The checkpointed segments of stages a ``stage`` or ``sqrt`` policy runs."""
    n = len(unet_stages(unet))
    if config.policy == "stage":
        return even_segments(n, n)
    return even_segments(n, config.segments or sqrt_segments(n))


def apply_gradient_checkpointing(unet: nn.Module, config: CheckpointConfig) -> nn.Module:
    """Make ``unet`` recompute its activations in the backward pass under ``config``; returns it.

    Patch a copy (``copy.deepcopy`` first) if the original must stay as it was: a deep copy of a
    patched model would still call the original's modules.
    """
    if config.policy == "diffusers":
        unet.enable_gradient_checkpointing()
    elif config.policy == "module":
        checkpoint_modules(unet, unet_module_types(), config.preserve_rng_state)
    elif config.policy in ("stage", "sqrt"):
        check_stageable(unet)
        segments = stage_segments(unet, config)
        from diffusers.models.unets.unet_2d import UNet2DOutput

        def forward(
            sample: torch.Tensor,
            timestep: torch.Tensor,
            class_labels: torch.Tensor | None = None,
            return_dict: bool = True,
        ) -> Any:
            out = staged_forward(
                unet, sample, timestep, class_labels, segments, config.preserve_rng_state
            )
            return UNet2DOutput(sample=out) if return_dict else (out,)

        unet.forward = forward  # type: ignore[method-assign]
    return unet


def remove_gradient_checkpointing(unet: nn.Module) -> nn.Module:
    """Undo
    [`apply_gradient_checkpointing`][reference.gradient_checkpointing.api.apply_gradient_checkpointing]
    (every policy); returns ``unet``."""
    remove_module_checkpoints(unet)
    if getattr(unet, "is_gradient_checkpointing", False):
        unet.disable_gradient_checkpointing()
    return unet
