"""What the caching handles share: counters, a reset for a new sampling run, the timestep.

A cache that reuses work across denoising steps holds state, and that state belongs to one
sampling run. [`CacheHandle`][reference.feature_caching.production_run.CacheHandle] is the
`reference.harness.production.RunHandle` every caching ``apply_x`` returns (``timestep_reader`` is
that module's too), with

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

from typing import Any

from reference.harness.production import RunHandle


class CacheHandle(RunHandle):
    """`reference.harness.production.RunHandle` of a caching technique: ``reset()`` forgets
    the cached features."""


def first_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The hidden-states argument of a block call (``hidden_states=`` or the first positional)."""
    if "hidden_states" in kwargs:
        return kwargs["hidden_states"]
    if args:
        return args[0]
    return next(iter(kwargs.values()))
