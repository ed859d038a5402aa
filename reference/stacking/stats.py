"""The study's statistics: interaction factors with intervals, the Pareto frontier, the gain.

Interaction factor
==================
For a stack ``S`` of elements ``e_1 .. e_k``, each timed against the same baseline ``B``
(DDIM-50 on the teacher),

    speedup(X)  = median_t(B) / median_t(X)                                   (1)
    I(S)        = speedup(S) / prod_i speedup(e_i)                            (2)

``I = 1``: the members' savings multiply, as if independent. ``I < 1``: they overlap (both save
the same work, e.g. two ways of skipping steps, or Amdahl: a part neither touches dominates).
``I > 1``: they help each other (a smaller network is more overhead-bound, so compilation helps
it more).

Interval
========
Each factor of (2) is a ratio of medians over the interleaved rounds of one latency comparison.
`speedup_product` draws a percentile bootstrap (3): the rounds of one comparison are resampled
*together* (a round holds every function's time under one machine state, so they are paired),
different comparisons independently. With all terms in one comparison this is the paired
bootstrap of `reference.harness.stats.bootstrap_interval`.

Pitfall: the product of the members' own intervals is not the interval of the product; never
multiply interval ends.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONFIDENCE = 0.95
RESAMPLES = 2000


@dataclass(frozen=True)
class Term:
    """``speedup_over(name, against) ** power`` in the latency comparison ``lat``."""

    lat: Any  # reference.harness.LatencyComparison
    name: str
    against: str
    power: int = 1


def _ratio(lat: Any, t: Term, idx: Sequence[int] | None) -> float:
    num, den = lat.stats[t.against].samples_ms, lat.stats[t.name].samples_ms
    if idx is None:
        return statistics.median(num) / statistics.median(den)
    return statistics.median(num[i] for i in idx) / statistics.median(den[i] for i in idx)


def speedup_product(
    terms: Sequence[Term], *, resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """``prod_i speedup_i ** power_i`` and its percentile-bootstrap interval (3)."""
    if not terms:
        raise ValueError("speedup_product: no terms")
    value = math.prod(_ratio(t.lat, t, None) ** t.power for t in terms)
    comparisons = {id(t.lat): t.lat for t in terms}
    rounds = {k: len(lat.stats[lat.baseline].samples_ms) for k, lat in comparisons.items()}
    if min(rounds.values()) < 2:
        return value, (value, value)
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        idx = {k: [rng.randrange(n) for _ in range(n)] for k, n in rounds.items()}
        draws.append(math.prod(_ratio(t.lat, t, idx[id(t.lat)]) ** t.power for t in terms))
    draws.sort()
    tail = (1.0 - CONFIDENCE) / 2.0
    return value, (draws[int(tail * (resamples - 1))], draws[int((1 - tail) * (resamples - 1))])


def gain(speed_gain: float, quality_ratio: float, floor: float = 1.01) -> float:
    """Speed per unit of quality lost, on log scales (4):
    ``ln(speed_gain) / max(ln(quality_ratio), ln(floor))``.

    The floor keeps a step that costs no measurable quality (or improves it) from dividing by
    zero: below 1% of FDD, every step is ranked by its speed alone."""
    return math.log(speed_gain) / max(math.log(quality_ratio), math.log(floor))


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Ids of the points no other point beats on both ``(latency ratio, FDD ratio)`` (both
    lower is better), fastest first."""
    order = sorted(points, key=lambda k: (points[k][0], points[k][1]))
    front: list[str] = []
    best = math.inf
    for k in order:
        if points[k][1] < best:
            front.append(k)
            best = points[k][1]
    return front
