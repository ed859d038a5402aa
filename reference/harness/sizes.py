"""The sizes benchmarks share: the quality sample's bounds, the quality seeds, the latency
batch's noise, the solution's steps, and the timing protocol, declared once for every ``Config``
to inherit.

A benchmark's ``Config`` (the contract of `reference.harness.entry`) is a frozen dataclass of the
run's sizes. Most of them are the same few fields with the same bounds: ``n_quality`` images per
seed on ``seeds`` noise seeds (scored), a latency batch timed over ``repeats`` interleaved rounds
after ``warmup`` untimed ones (timed). Those fields live here, as frozen dataclass bases whose
``validate()`` checks them, with the command-line options that set them:

* `Scored`: ``n_quality`` (a multiple of the 10 classes, so that every class is equally
  represented, between `MIN_QUALITY` and `MAX_QUALITY`) and ``seeds``;
* `Timed`: ``batch_latency``, ``repeats`` and ``warmup``;
* `SCORED_OPTIONS` and `TIMED_OPTIONS`: their options, with the bounds the parser enforces.

A ``Config`` inherits the bases it needs and declares only its own fields; its ``validate()``
calls ``super().validate()``. Fields keep their order: the bases' fields come first (dataclass
inheritance), so a ``Config`` is built with keywords, never positionally.

The bounds (1), (2):

    MIN_QUALITY = 20:  every class has two samples per seed (the class-weighted KID and
                       within-class diversity need pairs)                                  (1)
    MAX_QUALITY = 10 * floor(MAX_REAL_N / 10) = 140: the largest class-balanced sample the
                       held-out real half offers (`reference.harness.scores.MAX_REAL_N`)     (2)

Pitfall: a base's default is every inheriting benchmark's default, so changing one here changes
(and stales) every result that inherits it; a benchmark that needs another default declares the
field again with its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .entry import integer, seeds
from .ode import SOLUTION
from .sampling import class_labels, make_noise
from .scores import MAX_REAL_N
from .seeds import SEEDS

CLASSES = 10
"""Digits 0-9: a class-balanced sample is a multiple of this."""
MIN_QUALITY = 2 * CLASSES  # (1)
"""The smallest sample per seed at which every class has two samples and the real row is
defined."""
MAX_QUALITY = MAX_REAL_N // CLASSES * CLASSES  # (2)
"""The largest class-balanced sample the held-out real half offers."""
LATENCY_SEED = 1000
"""Noise seed of the latency batch (apart from the quality seeds)."""
SOLUTION_STEPS = SOLUTION[1]
"""Steps of the converged solution (`reference.harness.ode.SOLUTION`) that fidelity is measured
against."""


def latency_inputs(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The latency batch of ``n`` images: the noise of `LATENCY_SEED` and class-balanced labels
    (the same batch for every row that is timed)."""
    return make_noise(n, LATENCY_SEED), class_labels(n)


def check_one_of(name: str, value: object, among: str, values: Sequence[object]) -> None:
    """``ValueError`` naming both options unless ``value`` (option ``name``) is one of
    ``values`` (option ``among``): a headline must be one of the measured settings."""
    if value not in values:
        raise ValueError(f"--{_flag(name)} {value} is not one of --{_flag(among)} {list(values)}")


def _flag(name: str) -> str:
    return name.replace("_", "-")


@dataclass(frozen=True)
class Scored:
    """``n_quality`` class-balanced images per seed, on each of ``seeds``."""

    n_quality: int = MAX_QUALITY
    seeds: tuple[int, ...] = SEEDS

    def validate(self) -> None:
        if self.n_quality % CLASSES:
            raise ValueError(
                f"--n-quality must be a multiple of {CLASSES} (classes), got {self.n_quality}"
            )


@dataclass(frozen=True)
class Timed:
    """A latency batch of ``batch_latency`` images, timed over ``repeats`` interleaved rounds
    after ``warmup`` untimed ones."""

    batch_latency: int = 32
    repeats: int = 15
    warmup: int = 1

    def validate(self) -> None:
        """Nothing beyond the options' bounds; here so that every base has a ``validate()``."""


SCORED_OPTIONS = (integer("n_quality", low=MIN_QUALITY, high=MAX_QUALITY), seeds())
TIMED_OPTIONS = (
    integer("batch_latency", low=1, high=256),
    integer("repeats", low=2, high=200),  # a round-bootstrap interval needs two rounds
    integer("warmup", low=0, high=20),
)
