"""Projection fusion on diffusers' production classes: ``FusionConfig`` + ``apply_fusion``.

Idea
====
Production diffusion networks have no BatchNorm to fold (they normalise with GroupNorm,
LayerNorm or AdaLN, whose statistics depend on the input; see
[`reference.conv_fusion`][reference.conv_fusion]). What they do have is several linear maps
reading the *same* tensor: the query, key and value projections of every self-attention, the key
and value projections of every cross-attention, and the projections of the text stream in joint
attention (SD3, Flux). Fusing them turns three thin matrix products into one wide one: the input
is read once and one kernel is launched instead of three. Where a GroupNorm feeds the projections
directly (the spatial self-attention of ``UNet2DModel``), its affine ``gamma, beta`` is folded
into them first ([`fold_attention_norm_affine`][reference.conv_fusion.fold_attention_norm_affine]).

How it is done here, and why
============================
Every attention module keeps its own processor; only its ``to_q`` / ``to_k`` / ``to_v`` (and
``add_q_proj`` / ``add_k_proj`` / ``add_v_proj``) are replaced by *parts* of one shared fused
``nn.Linear``. The first part called on an input computes the fused product (1) and keeps its
slices (2); the other parts called on the *same* tensor object (which is what every diffusers
processor does: ``attn.to_q(x); attn.to_k(x); attn.to_v(x)``) take their slice without computing
anything. A part called on another input computes the product afresh, so the result is always
correct, only the saving depends on the processor. This works with any processor (diffusers'
SDPA, joint and Flux processors, or a user's own), which is why Flux is supported too; diffusers'
``fuse_qkv_projections`` instead swaps in a processor class per model family.

Math
====
For projections ``W_q, W_k, W_v`` (``d_i x d``) and biases ``b_q, b_k, b_v`` reading ``x``::

    W = [W_q; W_k; W_v] ((d_q + d_k + d_v) x d),  b = [b_q; b_k; b_v]          (1)
    [q; k; v] = W x + b,  q = rows 0..d_q, k = the next d_k, v = the last d_v   (2)

Each output entry is the same dot product of length ``d`` as before; only the blocking of the
matrix product may change the order in which its ``d`` terms are summed, so a fused output differs
from the unfused one by at most float32's reordering error ``~ d u sum_j |W_ij x_j|``
(``u = 2^-24``), and usually not at all. The norm fold (3), computed in float64, is exact algebra::

    W (gamma * n + beta) + b = (W diag(gamma)) n + (W beta + b)                (3)

Sources
=======
* Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762 (the projections).
* Wu and He, "Group Normalization", ECCV 2018, arXiv:1803.08494 (the affine after GroupNorm).
* diffusers' ``Attention.fuse_projections`` / ``fuse_qkv_projections``: the same fusion with
  fused processors; the tests compare our fused weights and outputs with it.

Pitfalls
========
* The handed-out slices are views of one tensor, like diffusers' ``torch.split`` of its fused
  output; processors reshape them with ``view``, which works on these strided views.
* The first part keeps the fused output until every part has taken its slice: at most one fused
  activation per attention module at a time.
* A part recognises "the same input" by tensor identity and version counter; an in-place change
  of the input between ``to_q`` and ``to_k`` makes it recompute (correct, no saving).
* A module already fused by diffusers (``fused_projections``) is skipped, and so are projections
  that are not plain ``nn.Linear`` (low rank, LoRA): apply the fusion before those.
* Python-side state does not suit ``torch.compile``: combine with compilation by compiling a
  diffusers-fused model instead.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reference.harness.production import Applied, denoiser, replace_child, require
from reference.zoo.shapes import CLASS_OF

from .groupnorm import fold_attention_norm_affine

SUPPORTED = tuple(CLASS_OF.values())
"""All six production classes (Flux too: the fusion does not depend on the processor)."""

TECHNIQUE = "projection fusion"

QKV = ("to_q", "to_k", "to_v")
KV = ("to_k", "to_v")
ADDED_QKV = ("add_q_proj", "add_k_proj", "add_v_proj")
SLOTS = {QKV: "fused_qkv", KV: "fused_kv", ADDED_QKV: "fused_added_qkv"}
"""The attribute under which the attention module holds each fused projection."""


@dataclass(frozen=True)
class FusionConfig:
    """What [`apply_fusion`][reference.conv_fusion.production.apply_fusion] fuses.

    ``qkv``: fuse Q, K, V of self-attention, K, V of cross-attention, and the added (text-stream)
    Q, K, V of joint attention. ``norm``: fold the affine of a GroupNorm that feeds Q, K, V
    directly (3).
    """

    qkv: bool = True
    norm: bool = True


class SharedProjection(nn.Module):
    """One ``nn.Linear`` computing several projections of one input (1); slices handed out (2)."""

    def __init__(self, layers: Sequence[nn.Linear]) -> None:
        super().__init__()
        first = layers[0]
        with torch.no_grad():
            weight = torch.cat([layer.weight for layer in layers])  # (1) W = [W_q; W_k; W_v]
            has_bias = any(layer.bias is not None for layer in layers)
            self.linear = nn.Linear(
                first.in_features,
                weight.shape[0],
                bias=has_bias,
                device=weight.device,
                dtype=weight.dtype,
            )
            self.linear.weight.copy_(weight)
            if has_bias:
                self.linear.bias.copy_(torch.cat([_bias(layer) for layer in layers]))  # (1) b
        self.sizes = tuple(int(layer.out_features) for layer in layers)
        self._input: torch.Tensor | None = None
        self._version: int | None = None
        self._slices: tuple[torch.Tensor, ...] = ()
        self._taken: set[int] = set()

    def part(self, x: torch.Tensor, index: int) -> torch.Tensor:
        """Slice ``index`` of ``W x + b`` (2), computing the product only for a new input."""
        version = None if x.is_inference() else x._version
        fresh = x is not self._input or version != self._version or index in self._taken
        if fresh:
            out = self.linear(x)  # (2) one product for all parts
            self._input, self._version = x, version
            self._slices = out.split(self.sizes, dim=-1)
            self._taken = set()
        self._taken.add(index)
        piece = self._slices[index]
        if len(self._taken) == len(self.sizes):
            self._input, self._slices = None, ()  # every part served: drop the activation
        return piece


def _bias(layer: nn.Linear) -> torch.Tensor:
    if layer.bias is not None:
        return layer.bias
    return layer.weight.new_zeros(layer.out_features)


class ProjectionPart(nn.Module):
    """Stands in for one projection: slice ``index`` of a `SharedProjection` (2)."""

    def __init__(self, shared: SharedProjection, index: int, original: nn.Linear) -> None:
        super().__init__()
        self.__dict__["shared"] = shared  # owned (registered) by the attention module
        self.index = index
        self.in_features = int(original.in_features)
        self.out_features = int(original.out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.__dict__["shared"].part(x, self.index)


# --------------------------------------------------------------------------- which modules


def attention_modules(model: nn.Module) -> dict[str, nn.Module]:
    """``{name: module}`` of every attention module with plain-Linear ``to_q/to_k/to_v``."""
    return {
        name: m
        for name, m in model.named_modules()
        if all(type(getattr(m, p, None)) is nn.Linear for p in QKV)
    }


def projection_groups(attn: nn.Module) -> list[tuple[str, ...]]:
    """The projection names fused together in ``attn``: Q, K, V (self-attention) or K, V
    (cross-attention), and the added Q, K, V of joint attention."""
    cross = bool(getattr(attn, "is_cross_attention", False))
    same_input = len({getattr(attn, p).in_features for p in QKV}) == 1
    groups = [KV if cross or not same_input else QKV]
    if all(type(getattr(attn, p, None)) is nn.Linear for p in ADDED_QKV):
        groups.append(ADDED_QKV)
    return groups


def _foldable_norm(attn: nn.Module) -> bool:
    gn = getattr(attn, "group_norm", None)
    return (
        isinstance(gn, nn.GroupNorm)
        and gn.affine
        and not getattr(attn, "is_cross_attention", False)
        and getattr(attn, "spatial_norm", None) is None
    )


# --------------------------------------------------------------------------- the rewrite


def _fold_norm(applied: Applied, attn: nn.Module) -> None:
    """Fold (3) on copies of the GroupNorm and Q, K, V; swap the copies in (removable)."""
    shell = types.SimpleNamespace(
        group_norm=attn.group_norm,
        is_cross_attention=False,
        spatial_norm=None,
        **{p: copy.deepcopy(getattr(attn, p)) for p in QKV},
    )
    fold_attention_norm_affine(shell)  # (3) on the copies; the originals stay untouched
    replace_child(applied, attn, "group_norm", shell.group_norm)
    for p in QKV:
        replace_child(applied, attn, p, getattr(shell, p))


def _fuse(applied: Applied, attn: nn.Module, names: tuple[str, ...]) -> None:
    """Replace ``names`` of ``attn`` by parts of one `SharedProjection` (removable)."""
    layers = [getattr(attn, p) for p in names]
    shared = SharedProjection(layers)
    slot = SLOTS[names]
    attn.add_module(slot, shared)
    applied.on_remove(lambda: delattr(attn, slot))
    for i, (p, layer) in enumerate(zip(names, layers, strict=True)):
        replace_child(applied, attn, p, ProjectionPart(shared, i, layer))


@torch.no_grad()
def apply_fusion(target: Any, config: FusionConfig | None = None) -> Applied:
    """Fold GroupNorm affines into Q, K, V (``norm``) and fuse the projections (``qkv``) of
    every attention module of ``target`` (a production model or its pipeline).

    ``Applied.state``: ``fused`` (``{attention name: [fused groups]}``), ``norm_folded``
    (attention names), ``skipped`` (``{name: reason}``). ``remove()`` puts the original
    projection and norm modules back.
    """
    config = config or FusionConfig()
    model = denoiser(target)
    require(model, SUPPORTED, TECHNIQUE)
    applied = Applied(model, TECHNIQUE)
    fused: dict[str, list[str]] = {}
    folded: list[str] = []
    skipped: dict[str, str] = {}
    try:
        for name, attn in attention_modules(model).items():
            if getattr(attn, "fused_projections", False):
                skipped[name] = "already fused by diffusers (fused_projections)"
                continue
            if config.norm and _foldable_norm(attn):
                _fold_norm(applied, attn)
                folded.append(name)
            if config.qkv:
                groups = projection_groups(attn)
                for group in groups:
                    _fuse(applied, attn, group)
                fused[name] = ["+".join(g) for g in groups]
    except BaseException:
        applied.remove()  # nothing half-done
        raise
    applied.state.update(fused=fused, norm_folded=folded, skipped=skipped)
    return applied
