"""Known degradations of digits, and a check that every quality metric notices them.

Idea
====
A quality metric earns its place only if it gets worse when the images do. This module degrades
a set of digits in four known ways, each with a strength, and tabulates what every metric of
the new harness reads at each strength (`degradation_table`); `monotone_failures` lists each
metric that fails to move the expected way (`EXPECTED`) along the grid. A study can call both
on real or generated digits; ``scripts/metric_sanity.py`` prints the table for the real half of
the held-out digits (`reference.harness.scores`).

Degradations
============
Every degradation at strength 0 returns the images unchanged, and the random choices of one
seed are shared by all strengths (common random numbers), so a grid moves one thing only:

    blur         x ↦ x * g_σ,  g_σ(i) ∝ exp(-i² / (2σ²)), |i| ≤ ⌈3σ⌉, per axis       (1)
    noise        x ↦ clip(x + σ ε, -1, 1),  ε ~ N(0, I) drawn once per seed         (2)
    wrong class  the first ⌊f n⌉ images of a seeded order are replaced by digits of
                 another class; the labels stay, so the set claims the wrong class
    duplicates   the first ⌊f n⌉ images of a seeded order (never the last image of each
                 class, the "keeper") are replaced by copies of their class's keeper

so the replaced sets are nested: a larger fraction replaces a superset. Blur (1) is separable,
with edge pixels replicated (the digits' background reaches every edge).

Metrics
=======
``fdd``, ``kid`` (class-weighted) and ``kid_class`` (class-conditional) against the reference
half (`reference.harness.scores`), ``accuracy`` and ``diversity`` of
`reference.harness.quality` with the set's labels, and ``rms``, the fidelity: the mean
per-sample RMS distance to the undegraded images

    rms = (1/n) Σ_i sqrt(mean_pixels (x̃_i - x_i)²)                                   (3)

(`reference.harness.ode.rms_to`, the same measure as the distance to the converged solution).

Measured on the real half (150 held-out digits, ``scripts/metric_sanity.py``): every checked
metric moves its way over `GRID`. Blur of σ = 0.5 px raises the FDD from 12.5 to 16.0 while
accuracy stays 1.0; noise of σ = 0.1 raises it to 17.6; half the set duplicated raises it to
20.8 and halves the diversity (15.5 to 9.7); 20% wrong-class digits raise it to 15.4 only.

Pitfalls
========
* FDD and the class-weighted KID compare class *mixtures*: a wrong-class digit taken from the
  set itself leaves the mixture nearly as it was, so up to 10% of them move neither (FDD 12.5,
  12.9, 12.5 at 0, 5 and 10%; KID -34, -47, -88). They are not checked on wrong-class digits;
  accuracy (linear in the fraction) and the class-conditional KID are. The latter grows with the
  square of the fraction, so it too misses 5-10% (-174, -257, -301 at 0, 5 and 10%) and sees
  20% (1,314); hence `GRID` starts wrong-class digits at 20%.
* Accuracy is bounded and saturates (the clean classifier scores held-out digits 1.0): a mild
  blur may leave it unchanged, so it is checked for not rising, and for falling over the grid.
* Below about 20% duplicates, FDD and KID stay within their noise (FDD 12.56 at 20%); the
  diversity is the metric that sees them. Diversity is checked only against duplicates:
  wrong-class digits raise it and noise changes it without a direction that means "worse".
* The table holds one draw per strength: it shows a direction, not an interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

import torch
import torch.nn.functional as F

from .ode import rms_to
from .quality import class_accuracy, classifier_features, within_class_diversity
from .scores import FeatureSet, fdd, kid_class_metric, kid_metric, reference_set

Degrade = Callable[[torch.Tensor, torch.Tensor, float, int], torch.Tensor]


def gaussian_blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Images ``[N, 1, H, W]`` blurred with a Gaussian of ``sigma`` pixels (1)."""
    if sigma <= 0:
        return x.clone()
    r = max(1, math.ceil(3 * sigma))
    i = torch.arange(-r, r + 1, dtype=x.dtype)
    g = torch.exp(-(i**2) / (2 * sigma**2))
    g = g / g.sum()  # (1)
    out = F.conv2d(F.pad(x, (r, r, 0, 0), mode="replicate"), g.view(1, 1, 1, -1))
    return F.conv2d(F.pad(out, (0, 0, r, r), mode="replicate"), g.view(1, 1, -1, 1))


def add_noise(x: torch.Tensor, sigma: float, seed: int = 0) -> torch.Tensor:
    """Images with Gaussian noise of standard deviation ``sigma`` added and clipped (2)."""
    eps = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed))
    return (x + sigma * eps).clamp(-1.0, 1.0)  # (2)


def _count(fraction: float, n: int) -> int:
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    return round(fraction * n)


def wrong_class(
    x: torch.Tensor, labels: torch.Tensor, fraction: float, seed: int = 0
) -> torch.Tensor:
    """A ``fraction`` of the images replaced by images of the set with a different label."""
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(x), generator=gen)
    out = x.clone()
    for i in order[: _count(fraction, len(x))].tolist():
        others = torch.nonzero(labels != labels[i]).flatten()
        out[i] = x[others[torch.randint(len(others), (1,), generator=gen)]]
    return out


def duplicate(
    x: torch.Tensor, labels: torch.Tensor, fraction: float, seed: int = 0
) -> torch.Tensor:
    """A ``fraction`` of the images (at most all but one per class) replaced by copies of the
    last image of their class in a seeded order (the class's keeper)."""
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed)).tolist()
    keeper = {int(labels[i]): i for i in order}  # the last of each class wins
    replaceable = [i for i in order if keeper[int(labels[i])] != i]
    out = x.clone()
    for i in replaceable[: _count(fraction, len(x))]:
        out[i] = x[keeper[int(labels[i])]]
    return out


DEGRADATIONS: dict[str, Degrade] = {
    "blur": lambda x, y, s, seed: gaussian_blur(x, s),
    "noise": lambda x, y, s, seed: add_noise(x, s, seed),
    "wrong_class": lambda x, y, s, seed: wrong_class(x, y, s, seed),
    "duplicates": lambda x, y, s, seed: duplicate(x, y, s, seed),
}
"""Degradation name -> ``f(images, labels, strength, seed)``."""
GRID: dict[str, tuple[float, ...]] = {
    "blur": (0.0, 0.5, 1.0, 1.5),
    "noise": (0.0, 0.1, 0.2, 0.4),
    "wrong_class": (0.0, 0.2, 0.3, 0.4),
    "duplicates": (0.0, 0.25, 0.5, 0.75),
}
"""The default strengths: σ in pixels (blur), σ in [-1, 1] units (noise), fractions."""
_DISTANCES = {"fdd": 1, "kid": 1, "kid_class": 1, "rms": 1}
EXPECTED: dict[str, dict[str, int]] = {
    "blur": {**_DISTANCES, "accuracy": -1},
    "noise": {**_DISTANCES, "accuracy": -1},
    "wrong_class": {"kid_class": 1, "rms": 1, "accuracy": -1},
    "duplicates": {**_DISTANCES, "diversity": -1},
}
"""The direction each metric must move as the strength grows (+1 up, -1 down); unlisted pairs
are reported, not checked (see the pitfalls for why FDD and KID are not checked on wrong-class
digits)."""
NOT_STRICT = frozenset({"accuracy"})
"""Metrics that may stay level between neighbouring strengths (bounded, saturated)."""


@dataclass(frozen=True)
class DegradationRow:
    """The metrics of one degradation at one strength."""

    degradation: str
    strength: float
    values: dict[str, float]


def measure(
    x: torch.Tensor, labels: torch.Tensor, clean: torch.Tensor, reference: FeatureSet
) -> dict[str, float]:
    """FDD, KID, accuracy, diversity and fidelity (3) of images ``x`` with ``labels``."""
    f, y = classifier_features(x).numpy(), labels.numpy()
    return {
        "fdd": fdd(f, y, reference),
        "kid": kid_metric(f, y, reference),
        "kid_class": kid_class_metric(f, y, reference),
        "accuracy": class_accuracy(x, labels),
        "diversity": within_class_diversity(x, labels),
        "rms": float(rms_to(x, clean).mean()),  # (3)
    }


def degradation_table(
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    reference: FeatureSet | None = None,
    grid: Mapping[str, Sequence[float]] | None = None,
    seed: int = 0,
) -> list[DegradationRow]:
    """Every degradation of ``grid`` (default `GRID`) at every strength, applied to ``images``
    ``[N, 1, 16, 16]`` with ``labels``, measured against ``reference`` (the reference half)."""
    ref = reference or reference_set()
    rows = []
    for name, strengths in (grid or GRID).items():
        if name not in DEGRADATIONS:
            raise ValueError(f"degradation_table: unknown degradation {name!r}")
        for s in strengths:
            x = DEGRADATIONS[name](images, labels, float(s), seed)
            rows.append(DegradationRow(name, float(s), measure(x, labels, images, ref)))
    return rows


def monotone_failures(table: Sequence[DegradationRow]) -> list[str]:
    """One line per (degradation, metric) of `EXPECTED` that does not move its way along the
    table's strengths: every step in the expected direction (or level, for `NOT_STRICT`), and
    the last strength away from the first."""
    failures = []
    for name, directions in EXPECTED.items():
        rows = sorted((r for r in table if r.degradation == name), key=lambda r: r.strength)
        if len(rows) < 2:
            continue
        for metric, sign in directions.items():
            steps = [sign * (b.values[metric] - a.values[metric]) for a, b in pairwise(rows)]
            level_ok = metric in NOT_STRICT
            if any(d < 0 or (d == 0 and not level_ok) for d in steps) or sum(steps) <= 0:
                seen = ", ".join(f"{r.values[metric]:.4g}" for r in rows)
                way = "rise" if sign > 0 else "fall"
                failures.append(f"{name}: {metric} does not {way} over the grid ({seen})")
    return failures
