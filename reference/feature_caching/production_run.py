"""What the caching handles share: counters, a reset for a new sampling run, the timestep.

A cache that reuses work across denoising steps holds state, and that state belongs to one
sampling run. [`CacheHandle`][reference.feature_caching.production_run.CacheHandle] is the
`reference.harness.production.Applied` every caching ``apply_x`` returns, plus

* ``reset()``: forget the cache; the next call is the first step of a new run (a full pass);
* an automatic reset when the timestep *increases* between two calls: a sampler walks the
  timesteps downwards (``999 -> 0`` for DDPM/DDIM, ``1 -> 0`` for flow matching), so a larger
  timestep than the previous call's can only be the start of a new run;
* live counters in ``state``: ``calls`` and ``full_calls`` since the last reset, and
  ``computed`` (whether the latest call ran the whole network).

Pitfalls
========
* One call per denoising step. diffusers' pipelines batch classifier-free guidance into one call;
  a loop that calls the network twice per step (conditional, then unconditional) would have the
  second call reuse the first call's features.
* A sampler that walks the timesteps *upwards* (DDIM inversion) resets at every call: correct
  (every call is a full pass) but with no saving.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from reference.harness.production import Applied


def _nothing() -> None:
    return None


@dataclass
class CacheHandle(Applied):
    """`Applied` for a caching technique: ``reset()`` and the counters in ``state``."""

    _forget: Callable[[], None] = field(default=_nothing, repr=False)

    def __post_init__(self) -> None:
        self.state.update(calls=0, full_calls=0, computed=None, last_timestep=None)

    def reset(self) -> None:
        """Forget the cached features: the next call starts a new sampling run."""
        self._forget()
        self.state.update(calls=0, full_calls=0, computed=None, last_timestep=None)

    def begin_call(self, timestep: float | None) -> int:
        """Count one call at ``timestep`` (resetting first if it went up); its index in the run."""
        last = self.state["last_timestep"]
        if timestep is not None and last is not None and timestep > last:
            self.reset()
        self.state["last_timestep"] = timestep
        self.state["calls"] += 1
        return self.state["calls"] - 1

    def end_call(self, computed: bool) -> None:
        """Record whether the call ran the whole network."""
        self.state["computed"] = computed
        self.state["full_calls"] += int(computed)


def timestep_reader(model: nn.Module) -> Callable[[tuple[Any, ...], dict[str, Any]], float | None]:
    """A function reading the timestep of a ``model(...)`` call from its arguments.

    Every production class names it ``timestep``, at a position that differs per class (second
    for the U-Nets and DiT, third for PixArt, fourth for SD3 and Flux). The first element is read:
    a batch (the two halves of classifier-free guidance) shares one timestep.
    """
    names = list(inspect.signature(type(model).forward).parameters)[1:]  # without self
    position = names.index("timestep") if "timestep" in names else None

    def read(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float | None:
        value = kwargs.get("timestep")
        if value is None and position is not None and len(args) > position:
            value = args[position]
        if value is None:
            return None
        return float(torch.as_tensor(value).reshape(-1)[0])

    return read


def first_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The hidden-states argument of a block call (``hidden_states=`` or the first positional)."""
    if "hidden_states" in kwargs:
        return kwargs["hidden_states"]
    if args:
        return args[0]
    return next(iter(kwargs.values()))
