"""Statistics of the benchmarks: means over noise seeds, paired ratios and their 95% intervals.

Idea
====
A quality figure of a sampler depends on the initial noise it was given. One noise draw gives
one number and no idea how far the next draw would move it; the benchmarks therefore repeat
every quality measurement over ``S >= 5`` noise seeds and report the mean with a 95% interval.
The runs are **paired**: for seed ``s`` the baseline, the technique and the control all start
from the same noise ``z_s``, so a ratio computed per seed cancels most of the draw-to-draw
variation that the configurations share, and its interval is much narrower than one built from
two independent means.

Math
====
For per-seed values ``x_1 .. x_S``:

    mean       x̄ = (1/S) Σ_s x_s                                               (1)
    std. dev.  sd = sqrt( Σ_s (x_s - x̄)^2 / (S - 1) )                           (2)
    interval   x̄ ± t_{0.975, S-1} · sd / sqrt(S)                                (3)

(Student's t interval; ``t_{0.975,4} = 2.776`` for five seeds.) For a ratio of paired values
``a_s / b_s`` (technique over baseline) the summary lives on the log scale, where a ratio and
its inverse are symmetric:

    l_s = log(a_s / b_s)                                                        (4)
    ratio = exp(l̄),  interval = exp(l̄ ± t_{0.975, S-1} · sd(l) / sqrt(S))       (5)

so the headline ratio is the geometric mean of the per-seed ratios. For statistics without a
closed-form interval (a ratio of medians of timing rounds) `bootstrap_interval` resamples
the paired units with replacement and reads the 2.5% and 97.5% percentiles of the statistic
(the percentile bootstrap):

    θ*_b = θ(resample_b),  interval = [q_{0.025}(θ*), q_{0.975}(θ*)]            (6)

Primary sources
===============
* Student (W. S. Gosset), "The probable error of a mean", Biometrika 6(1), 1908 - the t interval.
* B. Efron, "Bootstrap methods: another look at the jackknife", Annals of Statistics 7(1), 1979.
* B. Efron and R. Tibshirani, "An Introduction to the Bootstrap", Chapman & Hall, 1993 - the
  percentile interval and its coverage.

Pitfalls
========
* The interval covers the **noise-seed** variation of one trained model, not the variation
  between training runs, nor the small-sample bias of a metric: a Fréchet distance at n = 256 is
  biased upwards by an amount that depends on the model (see `reference.harness.quality`),
  so compare configurations at the same n and read ratios, not absolute distances.
* Five seeds give wide intervals (the t quantile is 2.78, not 1.96): an interval that straddles
  the target is an honest "inconclusive", not a failure of the statistics.
* Ratios of values that can be zero or negative have no log: `paired_ratio` refuses them
  instead of returning nonsense.
* A percentile bootstrap of a median over 15 rounds is coarse (the median takes few distinct
  values); it is used for latency ratios only, where rounds are the paired unit.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
"""Coverage of every interval the benchmarks report."""


@dataclass(frozen=True)
class Summary:
    """A statistic over seeds: its value, its 95% interval and the per-seed values it came from.

    For `summarize` the value is the arithmetic mean (1); for `paired_ratio` the
    geometric mean of the per-seed ratios (5), and ``seeds`` holds those ratios.
    """

    value: float
    interval: tuple[float, float]
    seeds: tuple[float, ...]


def t_quantile(confidence: float, dof: int) -> float:
    """The two-sided Student t quantile ``t_{(1+confidence)/2, dof}`` (``scipy.stats.t``)."""
    if dof < 1:
        raise ValueError(f"t_quantile: need at least 1 degree of freedom, got {dof}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"t_quantile: confidence must be in (0, 1), got {confidence}")
    from scipy.stats import t

    return float(t.ppf((1.0 + confidence) / 2.0, dof))


def _checked(values: Sequence[float], what: str) -> list[float]:
    xs = [float(v) for v in values]
    if len(xs) < 2:
        raise ValueError(f"{what}: need values from at least 2 seeds, got {len(xs)}")
    if not all(math.isfinite(x) for x in xs):
        raise ValueError(f"{what}: values must be finite, got {xs}")
    return xs


def mean_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, tuple[float, float]]:
    """The mean (1) of ``values`` and its Student t interval (2, 3)."""
    xs = _checked(values, "mean_interval")
    s = len(xs)
    mean = sum(xs) / s  # (1)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (s - 1))  # (2)
    half = t_quantile(confidence, s - 1) * sd / math.sqrt(s)  # (3)
    return mean, (mean - half, mean + half)


def summarize(values: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    """`Summary` of per-seed ``values``: mean (1) and t interval (3)."""
    mean, interval = mean_interval(values, confidence)
    return Summary(mean, interval, tuple(float(v) for v in values))


def paired_ratio(
    numerator: Sequence[float], denominator: Sequence[float], confidence: float = CONFIDENCE
) -> Summary:
    """Geometric mean of the per-seed ratios ``numerator[s] / denominator[s]`` and its interval
    on the log scale (4, 5). Both sequences come from the same seeds, in the same order."""
    a = _checked(numerator, "paired_ratio")
    b = _checked(denominator, "paired_ratio")
    if len(a) != len(b):
        raise ValueError(f"paired_ratio: {len(a)} numerator seeds but {len(b)} denominator seeds")
    if min(a + b) <= 0.0:
        raise ValueError("paired_ratio: ratios need positive values on both sides")
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    logs = [math.log(r) for r in ratios]  # (4)
    mean, (lo, hi) = mean_interval(logs, confidence)
    return Summary(math.exp(mean), (math.exp(lo), math.exp(hi)), tuple(ratios))  # (5)


def bootstrap_interval(
    units: Sequence[object],
    statistic: Callable[[Sequence[object]], float],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval (6) of ``statistic`` over paired ``units`` (for example
    timing rounds, each holding every function's time in that round)."""
    if len(units) < 2:
        raise ValueError(f"bootstrap_interval: need at least 2 units, got {len(units)}")
    if resamples < 100:
        raise ValueError(f"bootstrap_interval: resamples must be >= 100, got {resamples}")
    rng = random.Random(seed)
    k = len(units)
    thetas = sorted(
        statistic([units[rng.randrange(k)] for _ in range(k)]) for _ in range(resamples)
    )
    tail = (1.0 - confidence) / 2.0
    return thetas[int(tail * (resamples - 1))], thetas[int((1.0 - tail) * (resamples - 1))]  # (6)
