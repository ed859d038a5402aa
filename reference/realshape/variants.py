"""What the real-shape study times: each technique through its public ``apply_x`` shape, the
production counterpart a user would pick instead (diffusers' own hook or method for the same
idea, where diffusers has one), and which of them share one set of interleaved rounds.

Every applier takes a private copy of the model and the loop's example inputs, and returns the
module the loop calls. A counterpart is timed in the same rounds as the technique it answers
(`GROUPS`), so the latency ratio between the two is paired round by round. Where a hook keeps
state across calls, the counterpart names what must surround each sampling run (``around``):
diffusers' TaylorSeer and first-block cache hooks need their state reset and a cache context;
ours reset themselves when the timestep goes up (a new run).

Counterparts with the same schedule as ours (diffusers 0.42):

* step forecasting, interval 2, order 1, 2 warm-up calls, the whole output forecast  <->
  ``apply_taylorseer_cache`` with ``cache_interval=2``, ``disable_cache_before_step=3``,
  ``max_order=1`` and the root module as its only cache identifier: both run the network at
  calls 0, 1, 2 and 4 of the 6 and forecast 3 and 5 (the tests show they agree to float32
  rounding);
* first-block caching at a threshold  <->  ``apply_first_block_cache`` at the same threshold
  (the tests show the same decisions and bit-identical outputs);
* QKV projection fusion  <->  ``UNet2DConditionModel.fuse_qkv_projections`` (diffusers has no
  such method on ``DiTTransformer2DModel``);
* regional compilation  <->  ``ModelMixin.compile_repeated_blocks`` (it compiles the classes in
  ``_repeated_blocks``: the U-Net's ``BasicTransformerBlock``; the DiT declares none).

DeepCache, low rank, structured pruning and classifier-free guidance have no diffusers hook of
the same idea to compare with.

Pitfalls
--------
* ``apply_first_block_cache``'s decision depends on the weights: at random weights the
  threshold only fixes how many calls are skipped; the skipped calls count no FLOPs, so the
  estimate follows whatever was skipped, and both sides make the same decisions.
* diffusers' TaylorSeer computes call ``i`` when ``i < D`` or ``(i - D - 1) % k == 0``; ours when
  ``i < w`` or ``(i - w) % k == 0``. With ``D = w + 1`` the two agree at ``k = 2`` only (at
  ``k = 3``, D = 3 computes call 4 where ours computes 5), so the comparison runs at interval 2.
* A copy that rewrites weights is real: at SD 1.5's size it holds 3.4 GB, and pruning's and low
  rank's application needs more for a while; five such copies of the U-Net do not fit in 24 GB
  (the first grouping was killed for memory), hence `GROUPS` and ``shares_weights``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported by the appliers only: the command line checks first
    from torch import nn

Applier = Callable[["nn.Module", dict[str, Any]], "nn.Module"]
"""``(model copy, the loop's inputs) -> the module the loop calls``."""
Around = Callable[["nn.Module"], contextlib.AbstractContextManager[Any]]
"""What surrounds one sampling run of the module (a fresh hook state, a cache context)."""

UNET, DIT = "unet2d-condition", "dit"
FORECAST_INTERVAL, FORECAST_WARMUP, FORECAST_ORDER = 2, 2, 1
"""Interval 2: the one interval at which diffusers' schedule can be ours (see Pitfalls)."""
FBC_THRESHOLD = 0.2
"""The relative L1 change of the first block's residual below which the other blocks are
skipped (both sides); at random weights it fixes how many of the loop's calls run in full."""
COMPILE = {"backend": "inductor", "fullgraph": False, "dynamic": False}


@dataclass(frozen=True)
class Variant:
    """A timed variant: the model kinds it applies to, how, what surrounds each run, whether
    it leaves the weights as they are (then its copy shares them with the untouched model), and
    whether its first run compiles (then it runs once before the clock starts)."""

    kinds: tuple[str, ...]
    apply: Applier
    counterpart: str | None = None
    around: Around | None = None
    shares_weights: bool = False
    compiles: bool = False


def _deepcache(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.feature_caching.production import DeepCacheConfig, apply_deepcache

    return apply_deepcache(model, DeepCacheConfig(interval=3)).model


def _forecasting(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.accelerate_method.production import ForecastConfig, apply_step_forecasting

    config = ForecastConfig(
        interval=FORECAST_INTERVAL, order=FORECAST_ORDER, warmup=FORECAST_WARMUP
    )
    return apply_step_forecasting(model, config).model


def _first_block_cache(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.feature_caching.production import (
        FirstBlockCacheConfig,
        apply_first_block_cache,
    )

    return apply_first_block_cache(model, FirstBlockCacheConfig(threshold=FBC_THRESHOLD)).model


def _low_rank(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.low_rank_inference.production import LowRankConfig, apply_low_rank

    return apply_low_rank(model, LowRankConfig()).model


def _fusion(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.conv_fusion.production import FusionConfig, apply_fusion

    return apply_fusion(model, FusionConfig()).model


def _compile(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.tpu_deployment.production import RegionalCompileConfig, apply_regional_compile

    return apply_regional_compile(model, RegionalCompileConfig(**COMPILE)).model


def _pruning(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.pruning.production import StructuredPruningConfig, apply_structured_pruning

    return apply_structured_pruning(model, StructuredPruningConfig())


def _cfg(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    import torch

    from reference.classifier_guidance.production import CFGConfig, apply_cfg

    # the null prompt's encoding stands in as zeros: with random weights only the cost counts
    text = {k: torch.zeros_like(inputs[k]) for k in ("encoder_hidden_states",) if k in inputs}
    return apply_cfg(model, CFGConfig(guidance_scale=7.5), uncond=text or None).model


# ----------------------------------------------------------------------------- counterparts
def _taylorseer(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    import torch
    from diffusers.hooks import TaylorSeerCacheConfig, apply_taylorseer_cache

    config = TaylorSeerCacheConfig(
        cache_interval=FORECAST_INTERVAL,
        disable_cache_before_step=FORECAST_WARMUP + 1,  # the same computed calls as ours
        max_order=FORECAST_ORDER,
        taylor_factors_dtype=torch.float32,
        cache_identifiers=[""],  # the root module: the whole output is forecast, like ours
    )
    apply_taylorseer_cache(model, config)
    return model


def _diffusers_fbc(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from diffusers.hooks import FirstBlockCacheConfig, apply_first_block_cache

    apply_first_block_cache(model, FirstBlockCacheConfig(threshold=FBC_THRESHOLD))
    return model


def _fuse_qkv(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    model.fuse_qkv_projections()
    return model


def _compile_repeated(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    model.compile_repeated_blocks(**COMPILE)
    return model


@contextlib.contextmanager
def diffusers_run(model: nn.Module) -> Iterator[None]:
    """One sampling run of a model with diffusers' stateful hooks: a fresh state, a context."""
    from reference.feature_caching.dit_hooks import cache_context, reset_hooks

    reset_hooks(model)
    with cache_context(model):
        yield


VARIANTS: dict[str, Variant] = {
    "deepcache": Variant((UNET,), _deepcache, shares_weights=True),
    "forecasting": Variant((UNET, DIT), _forecasting, "taylorseer", shares_weights=True),
    "first-block-cache": Variant((DIT,), _first_block_cache, "diffusers-fbc", shares_weights=True),
    "low-rank": Variant((UNET, DIT), _low_rank),
    "fusion": Variant((UNET, DIT), _fusion, "fuse-qkv"),  # folds GroupNorm into the weights
    "compile": Variant(
        (UNET, DIT), _compile, "compile-repeated", shares_weights=True, compiles=True
    ),
    "pruning": Variant((UNET,), _pruning),
    "cfg": Variant((UNET, DIT), _cfg, shares_weights=True),
}
"""Technique id -> how it is applied, and the id of its production counterpart."""

COUNTERPARTS: dict[str, Variant] = {
    "taylorseer": Variant((UNET, DIT), _taylorseer, around=diffusers_run, shares_weights=True),
    "diffusers-fbc": Variant((DIT,), _diffusers_fbc, around=diffusers_run, shares_weights=True),
    "fuse-qkv": Variant((UNET,), _fuse_qkv),
    "compile-repeated": Variant((UNET,), _compile_repeated, shares_weights=True, compiles=True),
}
"""Counterpart id -> diffusers' own call for the same idea (the kinds where diffusers has it)."""

GROUPS: tuple[tuple[str, ...], ...] = (
    ("deepcache", "forecasting", "first-block-cache"),
    ("pruning", "fusion"),
    ("low-rank", "compile", "cfg"),
)
"""Techniques timed in one set of interleaved rounds against one baseline, each with its
counterpart, applied in this order. Memory decides the grouping: a variant that rewrites weights
holds a copy (3.4 GB at SD 1.5's size) and pruning and low rank need transient memory while
they are applied, so each of them comes first in its group, before the other copies exist;
hooks, wrappers and compiled regions share the untouched model's weights."""


def group_of(technique: str) -> int:
    """The 1-based index of the group that times ``technique``."""
    return next(i for i, g in enumerate(GROUPS, start=1) if technique in g)


def timed(kind: str, techniques: tuple[str, ...]) -> list[list[tuple[str, str | None]]]:
    """Per group, the ``(technique, counterpart or None)`` pairs timed on a model of ``kind``."""
    out = []
    for group in GROUPS:
        pairs = []
        for t in group:
            if t in techniques and kind in VARIANTS[t].kinds:
                cp = VARIANTS[t].counterpart
                pairs.append((t, cp if cp is not None and kind in COUNTERPARTS[cp].kinds else None))
        out.append(pairs)
    return out
