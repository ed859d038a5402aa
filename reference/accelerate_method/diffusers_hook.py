"""The production counterpart: ``diffusers.hooks.apply_taylorseer_cache`` on the zoo DiT."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import torch


def diffusers_taylorseer(
    dit: torch.nn.Module, interval: int, order: int = 1, warmup: int = 2
) -> torch.nn.Module:
    """A copy of the zoo DiT with ``diffusers.hooks.apply_taylorseer_cache`` applied.

    The last transformer block's output is forecast (Taylor series of ``order``), the other blocks
    are skipped on forecast steps (the "lite" layout of diffusers, adapted to the DiT's module
    names); embedding, final norm and projection run every step. diffusers computes at steps ``i <
    disable_cache_before_step`` and where ``(i - before - 1) % interval == 0``; ``before = warmup +
    1`` gives the same steps as [`compute_mask`][reference.accelerate_method.schedule.compute_mask]
    with ``warmup``.
    """
    from diffusers.hooks import TaylorSeerCacheConfig, apply_taylorseer_cache

    model = copy.deepcopy(dit)
    last = len(model.transformer_blocks) - 1
    config = TaylorSeerCacheConfig(
        cache_interval=interval,
        disable_cache_before_step=warmup + 1,
        max_order=order,
        taylor_factors_dtype=torch.float32,
        cache_identifiers=[rf"transformer_blocks\.{last}"],
        skip_predict_identifiers=[rf"transformer_blocks\.[0-{last - 1}]"] if last else None,
    )
    apply_taylorseer_cache(model, config)
    return model


@contextlib.contextmanager
def taylorseer_run(model: torch.nn.Module) -> Iterator[None]:
    """One sampling run of a hooked model: fresh hook state and a cache context ("cond")."""
    from diffusers.hooks import HookRegistry
    from diffusers.models.cache_utils import CacheMixin

    HookRegistry.check_if_exists_or_initialize(model).reset_stateful_hooks()
    with CacheMixin.cache_context(model, "cond"):  # type: ignore[arg-type]
        yield
