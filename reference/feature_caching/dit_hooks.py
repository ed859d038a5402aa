"""diffusers' own cache hooks on the zoo DiT: First Block Cache and Pyramid Attention Broadcast.

Both are the maintained, production form of feature caching for transformer denoisers
(``diffusers.hooks``, 0.42):

* ``apply_first_block_cache(model, FirstBlockCacheConfig(threshold))`` - run the first transformer
  block; if its residual changed by less than ``threshold`` (relative mean absolute difference)
  since the last full step, skip the remaining blocks and add their cached residual. Adaptive:
  the number of full steps depends on the trajectory (idea of TeaCache, Liu et al. 2024,
  arXiv:2411.19108).
* ``apply_pyramid_attention_broadcast(model, PyramidAttentionBroadcastConfig(...))`` - reuse
  each self-attention output for ``spatial_attention_block_skip_range`` steps inside a timestep
  window (Zhao et al. 2024, arXiv:2408.12588); the MLPs still run every step.

The hooks keep per-"context" state; pipelines set it with ``model.cache_context(name)``, which only
models inheriting ``CacheMixin`` have. ``DiTTransformer2DModel`` does not, so
[`cache_context`][reference.feature_caching.dit_hooks.cache_context] sets it with diffusers' helper
directly (a private function of ``diffusers.hooks.hooks``: pinned behaviour of 0.42).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn


@contextlib.contextmanager
def cache_context(model: nn.Module, name: str = "cond") -> Iterator[None]:
    """What ``CacheMixin.cache_context`` does, for models without the mixin."""
    from diffusers.hooks.hooks import CacheContext, _set_cache_context

    _set_cache_context(model, CacheContext(name))
    try:
        yield
    finally:
        _set_cache_context(model, None)


def reset_hooks(model: nn.Module) -> None:
    """Clear every stateful hook's state (call before each sampling run)."""
    from diffusers.hooks import HookRegistry

    HookRegistry.check_if_exists_or_initialize(model).reset_stateful_hooks(recurse=True)


class HookedDiTEps:
    """``eps_fn`` for a DiT carrying diffusers cache hooks; counts steps that ran all blocks.

    Call `reset` before every sampling run (the hooks remember the previous trajectory).
    ``current_timestep`` is what ``PyramidAttentionBroadcastConfig.current_timestep_callback``
    reads.
    """

    def __init__(self, dit: nn.Module, kind: str) -> None:
        self.dit, self.kind = dit, kind
        self.current_timestep = 1000
        self.calls = 0
        self.full_calls = 0

    def reset(self) -> None:
        reset_hooks(self.dit)
        self.calls = self.full_calls = 0

    def _leader_state(self) -> object | None:
        from diffusers.hooks.first_block_cache import _FBC_LEADER_BLOCK_HOOK

        registry = getattr(self.dit.transformer_blocks[0], "_diffusers_hook", None)
        hook = None if registry is None else registry.hooks.get(_FBC_LEADER_BLOCK_HOOK)
        return None if hook is None else hook.state_manager.get_state()

    def __call__(self, x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        self.current_timestep = int(t.reshape(-1)[0])
        self.calls += 1
        with cache_context(self.dit):
            out = self.dit(x_t, t, class_labels=labels, return_dict=False)[0]
            state = self._leader_state() if self.kind == "fbc" else None
            if state is None or state.should_compute:  # type: ignore[attr-defined]
                self.full_calls += 1
        return out


def first_block_cache(dit: nn.Module, threshold: float) -> HookedDiTEps:
    """Apply ``FirstBlockCacheConfig(threshold)`` to ``dit`` (in place) and wrap it."""
    from diffusers.hooks import FirstBlockCacheConfig, apply_first_block_cache

    apply_first_block_cache(dit, FirstBlockCacheConfig(threshold=threshold))
    return HookedDiTEps(dit, "fbc")


def pyramid_attention_broadcast(
    dit: nn.Module, skip_range: int, timestep_range: tuple[int, int] = (100, 800)
) -> HookedDiTEps:
    """Apply PAB to the self-attention of ``dit`` (in place) and wrap it."""
    from diffusers.hooks import PyramidAttentionBroadcastConfig, apply_pyramid_attention_broadcast

    eps = HookedDiTEps(dit, "pab")
    config = PyramidAttentionBroadcastConfig(
        spatial_attention_block_skip_range=skip_range,
        spatial_attention_timestep_skip_range=timestep_range,
        current_timestep_callback=lambda: eps.current_timestep,
    )
    apply_pyramid_attention_broadcast(dit, config)
    return eps
