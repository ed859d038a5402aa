"""Feature caching on diffusers' production classes: DeepCache (U-Nets), first-block caching
(transformers), each in one call.

.. code-block:: python

    handle = apply_deepcache(pipe, DeepCacheConfig(interval=3, branch=1))   # pipe.unet
    images = pipe(prompt).images          # every 3rd call a full pass, the others shallow
    handle.remove()                       # the original U-Net, bit for bit

    handle = apply_first_block_cache(pipe.transformer, FirstBlockCacheConfig(threshold=0.05))

Idea (DeepCache)
================
A U-Net's deep path (the down blocks below skip branch ``m``, the mid block and the up blocks
above it) computes high-level features that change slowly between adjacent denoising steps,
while the shallow path (``conv_in``, down blocks ``D_1 .. D_m``, up blocks ``U_m .. U_1``) is
cheap. With the up path written as ``h_m = U_{m+1}(... U_n(mid(D_n(... D_1(x)))))`` (the input of
up block ``U_m``; ``U_1`` is the last, outermost up block) a *full* call at step ``s`` keeps

    F = h_m(x_s)                                                                    (1)

and the next ``N - 1`` calls (``N`` = ``interval``) are *cached* calls

    eps(x_t) = head(U_1(... U_m(F, skips_m(x_t)) ...))                              (2)

where ``skips_m(x_t)`` are the skip tensors of ``conv_in`` and ``D_1 .. D_m``, recomputed on the
new input (``D_m``'s downsampler is not run: its output only feeds the deep path). Call ``k``
since the start of the run is full when

    k mod N = 0                                                                     (3)

so ``N = 1`` is exactly the plain model. The deep part of the network is not rewritten: the
U-Net's own ``forward`` runs on every call (time and class embeddings, SDXL's added conditions,
cross-attention masks, ``encoder_hid_proj``, GLIGEN, ...), and on a cached call the deep down
blocks, the mid block and the deep up blocks return their input at no cost, while ``U_m`` takes
the kept ``F`` instead of its input. For ``UNet2DModel``,
[`shallow_forward`][reference.feature_caching.deepcache.shallow_forward] (the zoo's written-out
cached step) is the oracle the tests compare with.

First-block caching is in
[`production_fbc`][reference.feature_caching.production_fbc] (re-exported here).

Sources
=======
* Ma, Fang and Wang, "DeepCache: Accelerating Diffusion Models for Free", CVPR 2024,
  arXiv:2312.00858 (uniform caching interval ``N``, skip branch ``m``).

Pitfalls
========
* State: the kept feature belongs to one sampling run. The handle resets itself when the
  timestep goes up (a new run) and offers ``reset()``; see
  [`production_run`][reference.feature_caching.production_run].
* One call per denoising step: a loop that calls the U-Net separately for the conditional and the
  unconditional half would feed the second call the first call's deep feature. diffusers'
  pipelines batch them into one call.
* A cached call needs the same batch and latent size as the full call it reuses; a call with a
  different sample shape is made a full call.
* ControlNet and T2I-Adapter residuals are added inside the deep path, where a cached call has
  nothing to add them to: refused (``ValueError``).
* ``branch`` counts whole blocks (1 = the outermost); the paper's finer per-layer branches of SD
  are not offered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reference.harness import production as adapters

from .production_fbc import TRANSFORMERS, FirstBlockCacheConfig, apply_first_block_cache
from .production_run import CacheHandle, first_input

__all__ = [
    "TRANSFORMERS",
    "UNETS",
    "CacheHandle",
    "DeepCacheConfig",
    "FirstBlockCacheConfig",
    "apply_deepcache",
    "apply_first_block_cache",
    "deep_path",
]

UNETS = ("UNet2DModel", "UNet2DConditionModel")
"""The classes DeepCache supports (a transformer has no skip branch to cut at)."""

RESIDUAL_KWARGS = (
    "down_block_additional_residuals",
    "mid_block_additional_residual",
    "down_intrablock_additional_residuals",
)


@dataclass(frozen=True)
class DeepCacheConfig:
    """A full U-Net pass every ``interval`` calls (DeepCache's ``N``), else only the shallow path
    down to skip branch ``branch`` (1 = the outermost, cheapest) on the kept deep feature."""

    interval: int = 3
    branch: int = 1

    def __post_init__(self) -> None:
        for name in ("interval", "branch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DeepCache: {name} must be an integer >= 1, got {value!r}")


@dataclass
class DeepPath:
    """The modules DeepCache cuts at skip branch ``m`` of a U-Net with ``n`` down blocks."""

    deep_down: list[nn.Module]  # D_{m+1} .. D_n
    downsamplers: list[nn.Module]  # D_m's downsamplers (their output only feeds D_{m+1})
    mid: nn.Module | None
    deep_up: list[nn.Module]  # U_n .. U_{m+1}
    branch_up: nn.Module  # U_m, which takes the kept feature F, (1)


def deep_path(unet: nn.Module, branch: int) -> DeepPath:
    """The cut of `DeepPath` for ``unet`` at ``branch``; ``ValueError`` if the layout has none."""
    n = len(unet.down_blocks)
    if len(unet.up_blocks) != n:
        raise ValueError(f"DeepCache: {n} down blocks but {len(unet.up_blocks)} up blocks")
    if not 1 <= branch <= n:
        raise ValueError(f"DeepCache: branch must be in 1..{n} for this U-Net, got {branch}")
    for block in [*unet.down_blocks, *unet.up_blocks]:
        if hasattr(block, "skip_conv"):  # score-SDE layout: a second skip path around the blocks
            raise ValueError(f"DeepCache: {type(block).__name__} (skip_conv) is not supported")
    downsamplers = getattr(unet.down_blocks[branch - 1], "downsamplers", None)
    return DeepPath(
        deep_down=list(unet.down_blocks)[branch:],
        downsamplers=list(downsamplers or []),
        mid=unet.mid_block,
        deep_up=list(unet.up_blocks)[: n - branch],
        branch_up=unet.up_blocks[n - branch],
    )


class _Kept:
    """What a full call keeps: ``F`` of (1), the sample shape, the deep down blocks' skip counts."""

    def __init__(self) -> None:
        self.cached_call = False
        self.clear()

    def clear(self) -> None:
        self.feature: torch.Tensor | None = None
        self.sample_shape: torch.Size | None = None
        self.skip_counts: dict[int, int] = {}

    def fits(self, sample: Any) -> bool:
        return self.feature is not None and getattr(sample, "shape", None) == self.sample_shape


def _switch(kept: _Kept, module: nn.Module, cached: Callable[..., Any]) -> Callable[..., Any]:
    """``module``'s forward on full calls, ``cached`` on cached calls."""
    original = module.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        if kept.cached_call:
            return cached(*args, **kwargs)
        return original(*args, **kwargs)

    return forward


def _passthrough(*args: Any, **kwargs: Any) -> Any:
    return first_input(args, kwargs)


def _deep_down(kept: _Kept, index: int, block: nn.Module) -> Callable[..., Any]:
    """A deep down block: on full calls run it and count its skips; on cached calls return its
    input with as many placeholder skips (only the skipped deep up blocks read them)."""
    original = block.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        if kept.cached_call:
            hidden = first_input(args, kwargs)
            return hidden, (hidden,) * kept.skip_counts[index]
        hidden, skips = original(*args, **kwargs)
        kept.skip_counts[index] = len(skips)
        return hidden, skips

    return forward


def _branch_up(kept: _Kept, block: nn.Module) -> Callable[..., Any]:
    """``U_m``: keep its input as ``F`` on full calls (1), take ``F`` instead on cached ones (2)."""
    original = block.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        if kept.cached_call:
            if "hidden_states" in kwargs:
                kwargs = {**kwargs, "hidden_states": kept.feature}
            else:
                args = (kept.feature, *args[1:])
        else:
            kept.feature = first_input(args, kwargs)
        return original(*args, **kwargs)

    return forward


def apply_deepcache(target: Any, config: DeepCacheConfig) -> CacheHandle:
    """DeepCache on a ``UNet2DModel`` / ``UNet2DConditionModel`` or a pipeline holding one.

    Returns a `CacheHandle`: ``remove()`` restores the original modules, ``reset()`` starts a new
    sampling run (also automatic when the timestep goes up), ``state`` counts calls and full calls.
    """
    unet = adapters.checked_denoiser(target, UNETS, config, DeepCacheConfig, "DeepCache")
    path = deep_path(unet, config.branch)
    kept = _Kept()
    handle = CacheHandle(unet, "DeepCache", _forget=kept.clear)
    for i, block in enumerate(path.deep_down):
        adapters.replace_forward(handle, block, _deep_down(kept, i, block))
    for module in [*path.downsamplers, *([path.mid] if path.mid else []), *path.deep_up]:
        adapters.replace_forward(handle, module, _switch(kept, module, _passthrough))
    adapters.replace_forward(handle, path.branch_up, _branch_up(kept, path.branch_up))
    adapters.replace_forward(handle, unet, _unet_forward(handle, kept, unet, config.interval))
    adapters.hold(handle, unet, "DeepCache")
    return handle


def _unet_forward(
    handle: CacheHandle, kept: _Kept, unet: nn.Module, interval: int
) -> Callable[..., Any]:
    original = unet.forward
    read_timestep = adapters.timestep_reader(unet)

    def forward(*args: Any, **kwargs: Any) -> Any:
        adapters.refuse_kwargs(kwargs, RESIDUAL_KWARGS, "DeepCache", " (ControlNet/adapter)")
        k = handle.begin_call(read_timestep(args, kwargs))
        sample = kwargs.get("sample", args[0] if args else None)
        kept.cached_call = k % interval != 0 and kept.fits(sample)  # (3)
        try:
            out = original(*args, **kwargs)
        finally:
            full, kept.cached_call = not kept.cached_call, False
        if full:
            kept.sample_shape = sample.shape
        handle.end_call(full)
        return out

    return forward
