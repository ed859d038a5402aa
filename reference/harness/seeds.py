"""Paired quality measurements over noise seeds: what every benchmark's quality figures are.

Idea
====
Every quality figure of a benchmark is measured on `SEEDS` (five noise seeds) at
`N_QUALITY` samples, **paired**: for seed ``s`` every configuration (baseline, technique,
control) samples from the same initial noise ``make_noise(n, s)`` and the same labels, so the
per-seed ratio technique / baseline removes the part of the variation the configurations share.
`over_seeds` runs the samplers seed by seed and collects whatever a benchmark measures
into a `SeedTable`; the table gives means with 95% t intervals, paired ratios and paired
differences (`reference.harness.stats`) and the fields of a result `Row`.

Math
====
With per-seed values ``q_{c,s}`` of configuration ``c``:

    value(c)      = mean_s q_{c,s}                          with its t interval   (1)
    ratio(c, b)   = exp(mean_s log(q_{c,s} / q_{b,s}))     with its t interval   (2)
    diff(c, b)    = mean_s (q_{c,s} - q_{b,s})              with its t interval   (3)

(2) is for positive metrics (FDD); (3) for metrics that can be negative (KID is unbiased and
scores real digits slightly below zero).

Pitfalls
========
* Pairing holds only if every sampler uses the seed it is given for **all** its randomness
  (initial noise and, for stochastic samplers, the per-step noise generator).
* Different seeds must give independent noise: `make_noise`
  seeds its own generator, so seed 1 is not a shifted copy of seed 0.
* Latency is measured separately (`compare_latency`) on its own
  batch; quality seeds do not enter timings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .results import Note, Row, note
from .stats import Summary, paired_ratio, summarize

SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
"""The noise seeds of every quality figure."""
N_QUALITY = 256
"""The sample size of every Fréchet distance, unless a benchmark states why not."""

Values = dict[str, float]


@dataclass
class SeedTable:
    """Per-seed values ``values[config][metric]`` (one per seed, in ``seeds`` order)."""

    seeds: tuple[int, ...]
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def add(self, key: str, measured: Mapping[str, float]) -> None:
        """Append one seed's ``measured`` metrics of configuration ``key``."""
        per_metric = self.values.setdefault(key, {})
        for metric, value in measured.items():
            per_metric.setdefault(metric, []).append(float(value))

    def per_seed(self, key: str, metric: str) -> list[float]:
        """The values of ``metric`` for ``key``, one per seed (``KeyError`` if absent)."""
        try:
            got = self.values[key][metric]
        except KeyError:
            raise KeyError(f"SeedTable: no {metric!r} measured for {key!r}") from None
        if len(got) != len(self.seeds):
            raise ValueError(
                f"SeedTable: {key!r} has {len(got)} {metric!r} values, not one per seed"
            )
        return got

    def summary(self, key: str, metric: str) -> Summary:
        """Mean and t interval (1)."""
        return summarize(self.per_seed(key, metric))

    def ratio(self, key: str, base: str, metric: str) -> Summary:
        """Paired geometric-mean ratio ``key / base`` and its interval (2)."""
        return paired_ratio(self.per_seed(key, metric), self.per_seed(base, metric))

    def difference(self, key: str, base: str, metric: str) -> Summary:
        """Paired mean difference ``key - base`` and its interval (3)."""
        a, b = self.per_seed(key, metric), self.per_seed(base, metric)
        return summarize([x - y for x, y in zip(a, b, strict=True)])

    def row_fields(self, key: str) -> tuple[Values, dict[str, tuple[float, float]], dict]:
        """``(values, intervals, seeds)`` of a result row: the mean, the 95% interval and the
        per-seed values of every metric measured for ``key``."""
        values: Values = {}
        intervals: dict[str, tuple[float, float]] = {}
        seeds: dict[str, list[float]] = {}
        for metric in self.values.get(key, {}):
            s = self.summary(key, metric)
            values[metric], intervals[metric], seeds[metric] = s.value, s.interval, list(s.seeds)
        return values, intervals, seeds


def over_seeds(
    samplers: Mapping[str, Callable[[int], Any]],
    measure: Callable[[str, Any, Mapping[str, Any]], Mapping[str, float]],
    seeds: tuple[int, ...] = SEEDS,
    desc: str = "quality seeds",
) -> SeedTable:
    """Run every sampler on every seed (paired) and tabulate ``measure``.

    ``samplers[key](seed)`` returns the samples of configuration ``key`` from the noise of
    ``seed``; ``measure(key, samples, same_seed)`` returns its metrics, where ``same_seed`` maps
    every key to its samples of this seed (for a deviation from the baseline's trajectory).
    """
    from tqdm import tqdm

    if len(seeds) < 2:
        raise ValueError(f"over_seeds: need at least 2 seeds, got {len(seeds)}")
    table = SeedTable(tuple(seeds))
    for seed in tqdm(seeds, desc=desc, leave=False):
        batch = {key: run(seed) for key, run in samplers.items()}
        for key, samples in batch.items():
            table.add(key, measure(key, samples, batch))
    return table


def real_reference_row(n: int = N_QUALITY, draws: int = 50) -> Row:
    """The ``reference`` row ``real``: what class-balanced real training digits score at ``n``
    (mean FDD and KID over ``draws`` subsets; the interval is their central 95% range, the
    spread of real data, not a confidence interval)."""
    from .quality import real_reference

    ref = real_reference(n, draws)
    return Row(
        "real",
        {"method": "real-digits", "n": n, "draws": draws},
        "reference",
        {"fd_digits": ref.fd_mean, "kid_digits": ref.kid_mean},
        intervals={"fd_digits": ref.fd_range, "kid_digits": ref.kid_range},
    )


def quality_note(n: int, seeds: tuple[int, ...], draws: int = 50) -> Note:
    """The shared ``quality-protocol`` note: ``n`` samples per seed, the number of paired seeds,
    the real-data reference and the small-sample bias of the Fréchet distance."""
    return note("quality-protocol", n=n, seeds=len(seeds), draws=draws)
