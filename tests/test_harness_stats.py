"""The statistics helpers on synthetic data with known answers: t intervals and their coverage,
paired ratios over seeds, the percentile bootstrap, and the seed table of the benchmarks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reference.harness import stats as S
from reference.harness.seeds import SeedTable, over_seeds


def test_t_quantile_matches_tables() -> None:
    # Student t tables: t_{0.975, 4} = 2.776, t_{0.975, 29} = 2.045, t_{0.995, 9} = 3.250.
    assert S.t_quantile(0.95, 4) == pytest.approx(2.7764, abs=1e-4)
    assert S.t_quantile(0.95, 29) == pytest.approx(2.0452, abs=1e-4)
    assert S.t_quantile(0.99, 9) == pytest.approx(3.2498, abs=1e-4)
    with pytest.raises(ValueError, match="degree of freedom"):
        S.t_quantile(0.95, 0)


def test_mean_interval_by_hand() -> None:
    mean, (lo, hi) = S.mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)  # (3) with sd = sqrt(10 / 4)
    assert mean == 3.0
    assert (lo, hi) == pytest.approx((3.0 - half, 3.0 + half), rel=1e-6)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        S.mean_interval([1.0])
    with pytest.raises(ValueError, match="finite"):
        S.mean_interval([1.0, float("nan")])


def test_t_interval_covers_the_true_mean_95_percent_of_the_time() -> None:
    # 4000 experiments of 5 normal draws: the coverage estimate has binomial sd
    # sqrt(0.95 * 0.05 / 4000) = 0.0034, so [0.935, 0.965] is +-4.4 sd around 0.95.
    rng = np.random.default_rng(0)
    draws = rng.normal(10.0, 2.0, size=(4000, 5))
    covered = 0
    for row in draws:
        _, (lo, hi) = S.mean_interval(row.tolist())
        covered += lo <= 10.0 <= hi
    assert 0.935 <= covered / len(draws) <= 0.965


def test_paired_ratio_is_the_geometric_mean_of_per_seed_ratios() -> None:
    base = [10.0, 12.0, 8.0, 11.0, 9.0]
    exact = S.paired_ratio([2 * b for b in base], base)
    assert exact.value == pytest.approx(2.0)
    assert exact.interval == pytest.approx((2.0, 2.0))  # no spread of the ratio: no width
    mixed = S.paired_ratio([1.0, 4.0], [1.0, 1.0])
    assert mixed.value == pytest.approx(2.0)  # sqrt(1 * 4), not the arithmetic 2.5
    assert mixed.seeds == (1.0, 4.0)
    with pytest.raises(ValueError, match="positive"):
        S.paired_ratio([1.0, -1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="2 numerator seeds but 3"):
        S.paired_ratio([1.0, 2.0], [1.0, 2.0, 3.0])


def test_pairing_narrows_the_ratio_interval_and_keeps_coverage() -> None:
    # Each seed has a shared difficulty d_s (lognormal, sd 0.3) that both configurations see,
    # and its own small noise (sd 0.02); the true ratio is 0.8. Pairing cancels d_s.
    rng = np.random.default_rng(1)
    covered, widths = 0, []
    for _ in range(2000):
        d = rng.lognormal(0.0, 0.3, size=5)
        base = 10.0 * d * rng.lognormal(0.0, 0.02, size=5)
        tech = 8.0 * d * rng.lognormal(0.0, 0.02, size=5)
        r = S.paired_ratio(tech.tolist(), base.tolist())
        covered += r.interval[0] <= 0.8 <= r.interval[1]
        widths.append(r.interval[1] - r.interval[0])
    # binomial sd of the coverage over 2000 experiments: 0.0049; +-4 sd around 0.95
    assert 0.93 <= covered / 2000 <= 0.97
    # an unpaired interval would be ~0.3 * 0.8 * 2 * 2.78 / sqrt(5) wide (~0.6); paired ~0.04
    assert float(np.median(widths)) < 0.1


def test_bootstrap_interval_covers_a_known_mean() -> None:
    # 300 experiments of 30 normal draws, 200 resamples each: the percentile interval of the
    # mean has coverage about 0.93 at this n; the estimate's binomial sd is 0.015 (+-4 sd).
    rng = np.random.default_rng(2)
    covered = 0
    for k in range(300):
        xs = rng.normal(5.0, 1.0, size=30).tolist()
        lo, hi = S.bootstrap_interval(xs, lambda u: sum(u) / len(u), resamples=200, seed=k)
        covered += lo <= 5.0 <= hi
    assert 0.87 <= covered / 300 <= 0.99
    with pytest.raises(ValueError, match="resamples"):
        S.bootstrap_interval([1.0, 2.0], lambda u: 0.0, resamples=10)


def test_seed_table_summaries_and_row_fields() -> None:
    table = SeedTable((0, 1, 2))
    for base, fast in [(10.0, 5.0), (12.0, 6.0), (8.0, 4.0)]:
        table.add("base", {"fd_digits": base, "kid_digits": -1.0})
        table.add("fast", {"fd_digits": fast, "kid_digits": 1.0})
    assert table.ratio("fast", "base", "fd_digits").value == pytest.approx(0.5)
    assert table.difference("fast", "base", "kid_digits").value == pytest.approx(2.0)
    values, intervals, seeds = table.row_fields("base")
    assert values == {"fd_digits": 10.0, "kid_digits": -1.0}
    assert seeds["fd_digits"] == [10.0, 12.0, 8.0]
    assert intervals["fd_digits"][0] < 10.0 < intervals["fd_digits"][1]
    with pytest.raises(KeyError, match="accuracy"):
        table.summary("base", "accuracy")
    table.add("late", {"fd_digits": 1.0})
    with pytest.raises(ValueError, match="not one per seed"):
        table.summary("late", "fd_digits")


def test_over_seeds_pairs_every_configuration_on_each_seed() -> None:
    seen: list[tuple[str, int]] = []

    def sampler(key: str, scale: float):
        def run(seed: int) -> float:
            seen.append((key, seed))
            return scale * (seed + 1)

        return run

    def measure(key: str, x: float, same_seed: dict) -> dict[str, float]:
        return {"value": x, "vs_base": x / same_seed["base"]}

    table = over_seeds({"base": sampler("base", 1.0), "fast": sampler("fast", 3.0)}, measure)
    assert sorted(seen) == sorted((k, s) for k in ("base", "fast") for s in range(5))
    assert table.per_seed("fast", "vs_base") == [3.0] * 5  # each seed's fast vs the same seed
    assert table.ratio("fast", "base", "value").interval == pytest.approx((3.0, 3.0))


@pytest.mark.parametrize(
    ("seeds", "said"),
    [
        ((0,), "needs at least 2 distinct"),
        ((1, 1), "needs at least 2 distinct"),
        ((), "needs at least 2 distinct"),
        ((0, -1), "must be in 0..4294967295"),
        ((0, 2**32), "must be in 0..4294967295"),
    ],
)
def test_check_seeds_refuses_what_gives_no_interval(seeds: tuple[int, ...], said: str) -> None:
    from reference.harness.bounds import check_seeds

    with pytest.raises(ValueError, match=f"--seeds {said}"):
        check_seeds(seeds)
    check_seeds((0, 1, 2, 3, 4))  # the standard seeds pass
