"""Low rank on diffusers' production classes: ``LowRankConfig`` + ``apply_low_rank``.

Idea
====
Every eligible ``nn.Linear`` (and, with ``conv``, every ungrouped ``nn.Conv2d``) of a U-Net or
transformer is replaced *in place* by its truncated-SVD factor pair
([`factorize_layer`][reference.low_rank_inference.factorize.factorize_layer]): a layer with the
weight matrix ``W`` (``out x in``; a k x k convolution is ``out x in k k``) becomes two layers
``B (A x)`` of rank ``r``. The returned handle's ``remove()`` puts the original layer objects back,
so the model is again bit for bit what it was.

Math
====
With ``W = U diag(s) V^T`` (computed in float64) and ``n = min(out, in)``::

    r    = max(1, round(rank_fraction * n))                                   (1)
    W_r  = (U_r diag(sqrt s_r)) (diag(sqrt s_r) V_r^T) = B A                  (2)
    cost = r (in + out) < in * out   <=>   r <= break_even_rank(W)            (3)
    rel. weight error = sqrt(sum_{i>r} s_i^2 / sum_i s_i^2)                   (4)

(2) is the best rank-``r`` approximation in Frobenius norm (Eckart and Young 1936,
doi:10.1007/BF02288367); a convolution's first factor keeps the k x k kernel and the second is a
1 x 1 convolution (Denton et al. 2014, "Exploiting Linear Structure Within Convolutional Networks
for Efficient Evaluation", arXiv:1404.0736). A layer is factorised only where (3) holds (fewer
multiply-adds than the dense layer), unless ``savings_only=False``; at ``rank_fraction=1`` nothing
is truncated and (4) is 0.

Knobs
=====
``rank_fraction`` (1), ``min_features`` (layers with ``n < min_features`` stay dense: at small
widths two thin products are slower than one), ``conv`` (factorise convolutions too),
``savings_only`` (apply (3)), ``exclude`` (``fnmatch`` patterns of qualified layer names kept
dense, e.g. the output projection). Plain SVD only: the activation-aware variant of
[`apply_low_rank`][reference.low_rank_inference.plan.apply_low_rank] needs calibration inputs,
which a production model built without data does not have.

Pitfalls
========
* For a square layer, (3) needs ``r < n / 2``: the default ``rank_fraction = 0.5`` leaves square
  layers (attention projections) dense and factorises the rectangular ones (feed-forward layers,
  k x k convolutions, whose matrix is ``out x 9 in``).
* The SVD is a full float64 one per layer (exact, slow): at the SD-1.5 U-Net's shape the
  default factorises 139 layers (141 square ones stay dense), 860 M -> 541 M parameters and 63%
  of the multiply-adds at 32 x 32 latents, and applying it took about 15 minutes on a busy
  2-core CPU: apply it once per process, not per sampling run.
* Random weights have flat spectra, so (4) is large at any ``r < n``: at production shapes with
  random weights only the cost is meaningful, never the quality.
* [`factorize_layer`][reference.low_rank_inference.factorize.factorize_layer] builds its layers
  in the default dtype (float32) and copies the factors into them, so a float64 or half model
  would get float32 pairs; the pair is therefore built with the layer's dtype as the default.
* The factor pair answers ``in_features`` / ``out_features`` (``in_channels`` /
  ``out_channels``) like the layer it replaces, but has no ``weight``: code that rewrites weights
  (diffusers' ``fuse_qkv_projections``, LoRA loading) fails loudly on a factorised model instead
  of silently using one factor. Remove the low rank first, or apply it last.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from reference.harness.production import Applied, denoiser, replace_child, require
from reference.zoo.shapes import CLASS_OF

from .factorize import (
    LowRankConv2d,
    LowRankLinear,
    Spectrum,
    break_even_rank,
    factorize_layer,
    max_rank,
    spectrum,
)

SUPPORTED = tuple(CLASS_OF.values())
"""Every production class: any model made of ``nn.Linear`` / ``nn.Conv2d`` layers qualifies."""

TECHNIQUE = "low-rank inference"


@dataclass(frozen=True)
class LowRankConfig:
    """What [`apply_low_rank`][reference.low_rank_inference.production.apply_low_rank]
    factorises (see the module's Knobs)."""

    rank_fraction: float = 0.5
    min_features: int = 64
    conv: bool = True
    savings_only: bool = True
    exclude: tuple[str, ...] = field(default_factory=tuple)

    def validate(self) -> None:
        """One-line ``ValueError`` for a knob out of range."""
        if not 0.0 < self.rank_fraction <= 1.0:
            raise ValueError(f"rank_fraction must be in (0, 1], got {self.rank_fraction}")
        if self.min_features < 1:
            raise ValueError(f"min_features must be >= 1, got {self.min_features}")


class ProductionLowRankLinear(LowRankLinear):
    """[`LowRankLinear`][reference.low_rank_inference.factorize.LowRankLinear] that also answers
    ``in_features`` / ``out_features`` like the ``nn.Linear`` it replaces."""

    @property
    def in_features(self) -> int:
        return int(self.first.in_features)  # type: ignore[arg-type]

    @property
    def out_features(self) -> int:
        return int(self.second.out_features)  # type: ignore[arg-type]


class ProductionLowRankConv2d(LowRankConv2d):
    """[`LowRankConv2d`][reference.low_rank_inference.factorize.LowRankConv2d] that also answers
    ``in_channels`` / ``out_channels`` like the ``nn.Conv2d`` it replaces."""

    @property
    def in_channels(self) -> int:
        return int(self.first.in_channels)  # type: ignore[arg-type]

    @property
    def out_channels(self) -> int:
        return int(self.second.out_channels)  # type: ignore[arg-type]


def eligible_layers(model: nn.Module, config: LowRankConfig) -> dict[str, nn.Module]:
    """``{qualified name: layer}`` of the ``nn.Linear`` / ungrouped ``nn.Conv2d`` layers that
    ``config`` admits (width, ``conv``, ``exclude``); ranks are not checked here."""
    kinds: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d) if config.conv else (nn.Linear,)
    out: dict[str, nn.Module] = {}
    for name, layer in model.named_modules():
        if type(layer) not in kinds:  # exact type: a subclass may compute something else
            continue
        if isinstance(layer, nn.Conv2d) and layer.groups != 1:
            continue
        if any(fnmatch.fnmatchcase(name, p) for p in config.exclude):
            continue
        if max_rank(layer) >= config.min_features:
            out[name] = layer
    return out


def layer_rank(layer: nn.Module, config: LowRankConfig) -> int | None:
    """The rank (1) of ``layer``, or ``None`` when (3) says the factor pair costs more."""
    full = max_rank(layer)
    rank = max(1, min(full, round(config.rank_fraction * full)))  # (1)
    if config.savings_only and rank > break_even_rank(layer):  # (3)
        return None
    return rank


@contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _factor_pair(layer: nn.Module, rank: int, spec: Spectrum) -> nn.Module:
    """The rank-``rank`` pair (2) as a production-shaped module sharing nothing with ``layer``,
    in the layer's dtype (see Pitfalls)."""
    with _default_dtype(layer.weight.dtype):
        pair = factorize_layer(layer, rank, spec)  # (2)
    cls = ProductionLowRankLinear if isinstance(layer, nn.Linear) else ProductionLowRankConv2d
    pair.__class__ = cls  # the same module, with the production attributes
    return pair


@torch.no_grad()
def apply_low_rank(target: Any, config: LowRankConfig | None = None) -> Applied:
    """Replace every eligible layer of ``target`` (a production model or its pipeline) by its
    truncated-SVD factor pair where that saves multiply-adds (3).

    ``Applied.state``: ``ranks`` (``{name: rank}``), ``errors`` (relative weight error (4) per
    layer), ``dense`` (eligible layers left dense by (3)). ``remove()`` puts the original layer
    objects back.
    """
    config = config or LowRankConfig()
    model = denoiser(target)
    require(model, SUPPORTED, TECHNIQUE)
    config.validate()
    applied = Applied(model, TECHNIQUE)
    ranks: dict[str, int] = {}
    errors: dict[str, float] = {}
    dense: list[str] = []
    try:
        for name, layer in eligible_layers(model, config).items():
            rank = layer_rank(layer, config)
            if rank is None:
                dense.append(name)
                continue
            spec = spectrum(layer)  # W = U diag(s) V^T in float64
            parent, _, child = name.rpartition(".")
            replace_child(
                applied, model.get_submodule(parent), child, _factor_pair(layer, rank, spec)
            )
            ranks[name] = rank
            errors[name] = spec.error_at(rank)  # (4)
    except BaseException:
        applied.remove()  # nothing half-done
        raise
    applied.state.update(ranks=ranks, errors=errors, dense=dense)
    return applied
