"""Which steps run the network, and the speedup limit that follows from it.

With ``N`` sampler steps, the first ``w`` computed fully (warm-up), then one full computation
every ``k`` steps, the network runs ``w + ceil((N - w) / k)`` times; with free forecasts the
speedup is at most ``N / (w + ceil((N - w) / k))``.
"""

from __future__ import annotations

import math


def check_schedule(interval: int, warmup: int, order: int) -> None:
    """``ValueError`` for an interval or warm-up below 1 or a negative order."""
    if interval < 1:
        raise ValueError(f"interval must be >= 1, got {interval}")
    if warmup < 1:
        raise ValueError(f"warm-up must be >= 1 (the first step has no history), got {warmup}")
    if order < 0:
        raise ValueError(f"order must be >= 0, got {order}")


def is_full_step(i: int, interval: int, warmup: int) -> bool:
    """Step ``i`` (0-based) runs the network: the first ``warmup``, then every ``interval``."""
    return i < warmup or (i - warmup) % interval == 0


def compute_mask(num_steps: int, interval: int, warmup: int = 1) -> list[bool]:
    """``True`` at the steps that run the network: the first ``warmup``, then every ``interval``."""
    check_schedule(interval, warmup, 0)
    return [is_full_step(i, interval, warmup) for i in range(num_steps)]


def full_computations(num_steps: int, interval: int, warmup: int = 1) -> int:
    """``w + ceil((N - w) / k)`` network evaluations for ``N`` steps (``N`` if ``N <= w``)."""
    check_schedule(interval, warmup, 0)
    if num_steps <= warmup:
        return num_steps
    return warmup + math.ceil((num_steps - warmup) / interval)


def speedup_limit(num_steps: int, interval: int, warmup: int = 1) -> float:
    """The analytic limit ``N / (w + ceil((N - w) / k))``: network time only, free forecasts."""
    return num_steps / full_computations(num_steps, interval, warmup)
