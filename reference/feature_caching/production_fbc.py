"""First-block caching on diffusers' transformers (DiT, PixArt, SD3, Flux), in one call.

.. code-block:: python

    handle = apply_first_block_cache(pipe, FirstBlockCacheConfig(threshold=0.05))
    images = pipe(...).images     # steps whose first block barely changed skip the other blocks
    handle.remove()

Idea
====
A diffusion transformer is a chain of blocks ``B_0 .. B_{L-1}`` on the image tokens ``h`` (and,
in SD3 and Flux, on the text tokens ``e`` beside them). The output of the first block tells how
much this step differs from the last one that ran the whole chain. At every call, run ``B_0`` and
take its residual

    r = B_0(h) - h                                                                  (1)

and its relative L1 change against ``r*``, the residual of the last call that ran every block:

    delta = mean |r - r*| / mean |r*|                                               (2)

If ``delta <= threshold`` the remaining blocks are skipped and their kept residual is added:

    B_{L-1}(...B_1(B_0(h))) ~ B_0(h) + R*,    R* = (B_{L-1}(...) - B_0(h)) at that call   (3)

(the same for the text stream ``e`` in Flux; SD3's last block returns no text stream, so none is
kept). Otherwise every block runs, and ``r*`` and ``R*`` are refreshed. Comparing with the last
*full* call, not the previous call, stops slow drift from accumulating unnoticed. The decision is
adaptive: how many calls are full depends on the trajectory, not on a fixed interval. Threshold 0
runs every block whenever the input changed (exactly the plain model).

Flux's two block lists (double-stream ``transformer_blocks``, then ``single_transformer_blocks``)
take and return the same ``(encoder_hidden_states, hidden_states)`` pair with nothing between
the lists, so they are one chain here.

Sources
=======
* First Block Cache, described in the README of the ParaAttention project
  (chengzeyi/ParaAttention on GitHub), built on the idea of TeaCache: Liu et al., "Timestep
  Embedding Tells: It's Time to Cache for Video Diffusion Model", CVPR 2025, arXiv:2411.19108
  (skip the network when a cheap early signal barely changed).
* diffusers ships the same rule as ``diffusers.hooks.apply_first_block_cache``; the tests check
  agreement step for step on DiT, PixArt and Flux. On ``SD3Transformer2DModel`` diffusers' hook
  (0.42) fails with a ``TypeError``: its last block returns ``None`` for the text stream and the
  hook subtracts from it; here that stream is simply not kept.

Pitfalls
========
* State, reset and one call per step: see
  [`production_run`][reference.feature_caching.production_run].
* ControlNet residuals (SD3, Flux) are added between blocks and SD3's ``skip_layers`` removes
  blocks from the chain; with skipped blocks both would be counted twice or not at all: refused
  (``ValueError``).
* ``delta`` is a mean over the whole batch, so the two halves of classifier-free guidance decide
  together. A call with another batch or latent size than the kept residual runs every block.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reference.harness import production as adapters

from .production_run import CacheHandle, first_input

TRANSFORMERS = (
    "DiTTransformer2DModel",
    "PixArtTransformer2DModel",
    "SD3Transformer2DModel",
    "FluxTransformer2DModel",
)
"""The classes first-block caching supports (a U-Net has no chain of like blocks)."""

TWO_STREAM = ("SD3Transformer2DModel", "FluxTransformer2DModel")
BETWEEN_BLOCKS_KWARGS = (
    "block_controlnet_hidden_states",
    "skip_layers",
    "controlnet_block_samples",
    "controlnet_single_block_samples",
)
Streams = tuple[torch.Tensor, torch.Tensor | None]


@dataclass(frozen=True)
class FirstBlockCacheConfig:
    """Skip blocks ``1 .. L-1`` while the first block's residual changed by at most
    ``threshold`` (relative L1, (2)) since the last call that ran them all."""

    threshold: float

    def __post_init__(self) -> None:
        value = self.threshold
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value < 0:
            raise ValueError(f"first-block caching: threshold must be a number >= 0, got {value!r}")


def relative_l1(r: torch.Tensor, kept: torch.Tensor) -> float:
    """``mean |r - r*| / mean |r*|``, (2) (NaN when ``r*`` is all zeros)."""
    return ((r - kept).abs().mean() / kept.abs().mean()).item()


class _Chain:
    """The blocks as one chain, how their streams are read and written, and the kept state."""

    def __init__(self, model: nn.Module, threshold: float) -> None:
        self.blocks = [*model.transformer_blocks, *getattr(model, "single_transformer_blocks", [])]
        self.two_stream = type(model).__name__ in TWO_STREAM
        self.threshold = threshold
        self.clear()

    def clear(self) -> None:
        self.full = True
        self.r_kept: torch.Tensor | None = None  # r* of (2)
        self.head_out: Streams | None = None  # B_0's output at the last full call
        self.tail_residual: Streams | None = None  # R* of (3)

    def inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Streams:
        hidden = first_input(args, kwargs)
        if not self.two_stream:  # a BasicTransformerBlock's encoder_hidden_states is the prompt
            return hidden, None
        text = kwargs.get("encoder_hidden_states", args[1] if len(args) > 1 else None)
        return hidden, text

    def outputs(self, out: Any) -> Streams:
        return (out[1], out[0]) if self.two_stream else (out, None)

    def pack(self, hidden: torch.Tensor, text: torch.Tensor | None) -> Any:
        return (text, hidden) if self.two_stream else hidden


def _head(chain: _Chain, block: nn.Module) -> Callable[..., Any]:
    original = block.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        hidden_in, _ = chain.inputs(args, kwargs)
        out = original(*args, **kwargs)
        hidden, text = chain.outputs(out)
        r = hidden - hidden_in  # (1)
        kept = chain.r_kept
        full = kept is None or kept.shape != r.shape  # a new batch or size: nothing to compare
        full = full or not relative_l1(r, kept) <= chain.threshold  # (2); NaN runs every block
        chain.full = full
        if full:
            chain.r_kept, chain.head_out = r, (hidden, text)
            return out
        assert chain.tail_residual is not None
        d_hidden, d_text = chain.tail_residual
        text_out = None if d_text is None or text is None else text + d_text
        return chain.pack(hidden + d_hidden, text_out)  # (3)

    return forward


def _rest(chain: _Chain, block: nn.Module, tail: bool) -> Callable[..., Any]:
    original = block.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        if not chain.full:
            return chain.pack(*chain.inputs(args, kwargs))
        out = original(*args, **kwargs)
        if tail:
            assert chain.head_out is not None
            hidden, text = chain.outputs(out)
            head_hidden, head_text = chain.head_out
            d_text = None if text is None or head_text is None else text - head_text
            chain.tail_residual = (hidden - head_hidden, d_text)  # R* of (3)
        return out

    return forward


def apply_first_block_cache(target: Any, config: FirstBlockCacheConfig) -> CacheHandle:
    """First-block caching on a DiT, PixArt, SD3 or Flux transformer, or a pipeline holding one.

    Returns a `CacheHandle`: ``remove()`` restores the original modules, ``reset()`` starts a new
    sampling run (also automatic when the timestep goes up), ``state["computed"]`` says whether
    the latest call ran every block.
    """
    model = adapters.checked_denoiser(
        target, TRANSFORMERS, config, FirstBlockCacheConfig, "first-block caching"
    )
    chain = _Chain(model, config.threshold)
    if len(chain.blocks) < 2:
        raise ValueError("first-block caching: needs at least two transformer blocks")
    handle = CacheHandle(model, "first-block caching", _forget=chain.clear)
    adapters.replace_forward(handle, chain.blocks[0], _head(chain, chain.blocks[0]))
    last = len(chain.blocks) - 1
    for i, block in enumerate(chain.blocks[1:], start=1):
        adapters.replace_forward(handle, block, _rest(chain, block, tail=i == last))
    adapters.replace_forward(handle, model, _model_forward(handle, chain, model))
    adapters.hold(handle, model, "first-block caching")
    return handle


def _model_forward(handle: CacheHandle, chain: _Chain, model: nn.Module) -> Callable[..., Any]:
    original = model.forward
    read_timestep = adapters.timestep_reader(model)

    def forward(*args: Any, **kwargs: Any) -> Any:
        adapters.refuse_kwargs(kwargs, BETWEEN_BLOCKS_KWARGS, "first-block caching")
        handle.begin_call(read_timestep(args, kwargs))
        out = original(*args, **kwargs)
        handle.end_call(chain.full)
        return out

    return forward
