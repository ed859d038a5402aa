"""Bounds of a benchmark's ``Config``, for its ``validate()``: minimum sizes and seed lists.

Each check raises ``ValueError`` naming the option as the user types it (``--n-quality``), which
the command line (`reference.harness.entry`) turns into one line and exit 2 before any work.
"""

from __future__ import annotations

from typing import Any

SEED_MAX = 2**32 - 1
"""The largest seed every generator accepts (numpy's ``RandomState`` refuses more;
`reference.harness.entry`'s (1))."""


def check_seeds(seeds: tuple[int, ...]) -> None:
    """``Config.validate()`` of a ``seeds`` field: at least two distinct seeds (an interval
    needs two), each in ``0..SEED_MAX``, else ``ValueError`` naming ``--seeds``."""
    if len(set(seeds)) < 2 or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds needs at least 2 distinct seeds, got {seeds}")
    if any(not 0 <= s <= SEED_MAX for s in seeds):
        raise ValueError(f"--seeds must be in 0..{SEED_MAX}, got {seeds}")


def at_least(cfg: Any, **minimums: float) -> None:
    """Check ``Config`` fields against their minimums, in order, for ``Config.validate()``.

    ``at_least(self, steps=1, repeats=1, warmup=0)`` raises ``ValueError("--steps must be >= 1,
    got 0")`` for the first field below its minimum (the option's name, as the user typed it).
    """
    for name, minimum in minimums.items():
        value = getattr(cfg, name)
        if value < minimum:
            raise ValueError(f"--{name.replace('_', '-')} must be >= {minimum}, got {value}")
