"""The public shape of the technique: a configuration and ``apply_pruning(model, config)``.

Like diffusers' cache hooks (``FirstBlockCacheConfig`` + ``apply_first_block_cache``), one frozen
configuration says what to do and one function does it. Pruning changes tensor shapes, so the
function returns a new model (the input is left untouched) together with a report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from .structured import CRITERIA, PruneReport, calibration_batches, prune_unet
from .unstructured import magnitude_prune, weight_sparsity


def check_ranking(ratio: float, criterion: str, knob: str) -> None:
    """One-line ``ValueError`` for a ``ratio`` outside [0, 1) or a ``criterion`` that is not one
    of `CRITERIA` (called ``knob`` in the message)."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"pruning ratio must be in [0, 1), got {ratio}")
    if criterion not in CRITERIA:
        raise ValueError(f"unknown {knob} {criterion!r}; choose from {', '.join(CRITERIA)}")


@dataclass(frozen=True)
class PruningConfig:
    """What [`apply_pruning`][reference.pruning.api.apply_pruning] removes.

    ``structured=True``: a fraction ``ratio`` of the channels of every coupled DepGraph group,
    ranked by ``criterion`` (``l1``, ``taylor`` or ``random``); Taylor importance accumulates the
    diffusion-loss gradients of ``calibration_batches`` batches of ``calibration_batch``
    training digits at timesteps ``t < t_max``. ``structured=False``: the ``ratio`` fraction of
    smallest-magnitude Conv/Linear weights is zeroed (shapes and FLOPs unchanged).
    """

    ratio: float = 0.5
    criterion: str = "taylor"
    structured: bool = True
    t_max: int = 600
    calibration_batches: int = 8
    calibration_batch: int = 64
    seed: int = 1

    def validate(self) -> None:
        check_ranking(self.ratio, self.criterion, "pruning criterion")
        if self.calibration_batches < 1 or self.calibration_batch < 1 or self.t_max < 1:
            raise ValueError("calibration_batches, calibration_batch and t_max must be >= 1")


def apply_pruning(model: nn.Module, config: PruningConfig) -> tuple[nn.Module, PruneReport]:
    """A pruned copy of the ``UNet2DModel`` ``model`` and a
    [`PruneReport`][reference.pruning.api.PruneReport].

    Structured: [`prune_unet`][reference.pruning.structured.prune_unet] (a physically smaller dense
    model whose ``report.config`` rebuilds it). Unstructured:
    [`magnitude_prune`][reference.pruning.unstructured.magnitude_prune] (same shapes, zeros in the
    weights).
    """
    config.validate()
    if not config.structured:
        before = sum(p.numel() for p in model.parameters())
        pruned = magnitude_prune(model, config.ratio)
        cfg: dict[str, Any] = {"sparsity": weight_sparsity(pruned)}
        return pruned, PruneReport(config.ratio, "magnitude", before, before, cfg)
    calibration = None
    if config.criterion == "taylor":
        calibration = calibration_batches(
            config.calibration_batches, config.calibration_batch, seed=config.seed
        )
    return prune_unet(
        model, config.ratio, config.criterion, calibration=calibration, t_max=config.t_max
    )
