"""The new quality yardsticks: the class-weighted KID, the held-out real row, intervals that
resample the reference set, and metrics checked against known degradations."""

from __future__ import annotations

import inspect
from itertools import product

import numpy as np
import pytest
import torch

from reference.data import load_digits_tensors
from reference.harness import degradations as D
from reference.harness import scores as S
from reference.harness.quality import balanced_subset
from reference.harness.stats import mean_interval


def _direct_block_mean(
    fx: np.ndarray, yx: np.ndarray, fy: np.ndarray, yy: np.ndarray, same: bool
) -> float:
    """Σ_c Σ_c' π_c π_c' h(c, c') by explicit loops over pairs, eqs. (4)-(5)."""
    classes = sorted(set(yx.tolist()) | set(yy.tolist()))
    total = 0.0
    for c, c2 in product(classes, classes):
        values = [
            (float(fx[i] @ fy[j]) / fx.shape[1] + 1.0) ** 3
            for i in range(len(fx))
            for j in range(len(fy))
            if yx[i] == c and yy[j] == c2 and not (same and i == j)
        ]
        total += np.mean(values) / len(classes) ** 2
    return total


def test_kid_matches_a_direct_sum_over_pairs_on_five_points() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)) + 0.5
    k = lambda x, y: (float(x @ y) / 3 + 1.0) ** 3  # noqa: E731  (1)
    within_a = sum(k(a[i], a[j]) for i in range(5) for j in range(5) if i != j) / 20
    within_b = sum(k(b[i], b[j]) for i in range(5) for j in range(5) if i != j) / 20
    cross = sum(k(a[i], b[j]) for i in range(5) for j in range(5)) / 25
    # Same float64 sums in a different order: agreement to a few ulp of values near 1e1.
    assert S.kid(a, b) == pytest.approx(within_a + within_b - 2 * cross, rel=1e-12)  # (2)
    ya, yb = np.array([0, 0, 1, 1, 1]), np.array([1, 0, 0, 1, 0])
    direct = (
        _direct_block_mean(a, ya, a, ya, same=True)
        + _direct_block_mean(b, yb, b, yb, same=True)
        - 2 * _direct_block_mean(a, ya, b, yb, same=False)
    )
    assert S.kid(a, b, ya, yb) == pytest.approx(direct, rel=1e-12)  # (6)
    per_class = 0.0
    for c in (0, 1):  # (8): the per-class MMD² (2) of each class, averaged with π_c = 1/2
        per_class += S.kid(a[ya == c], b[yb == c]) / 2
    assert S.kid_per_class(a, b, ya, yb) == pytest.approx(per_class, rel=1e-12)
    one = np.zeros(5, dtype=int)  # a single class: (6) is (2)
    assert S.kid(a, b, one, one) == pytest.approx(S.kid(a, b), rel=1e-12)
    with pytest.raises(ValueError, match="class with 1 items"):
        S.kid(a, b, np.array([0, 0, 0, 0, 1]), yb)
    with pytest.raises(ValueError, match="both feature sets"):
        S.kid(a, b, ya, None)


@pytest.mark.parametrize("n", [40, 120])
@pytest.mark.slow
@pytest.mark.xdist_group("zoo")
def test_kid_of_two_disjoint_real_halves_covers_zero(n: int) -> None:
    """60 random stratified splits of the held-out digits into two halves, a class-balanced set
    of n from each: (6) averages 0 (its t interval covers it) while the plain (2) sits far
    below, by twice the balancing offset (3) of the module docstring."""
    held = S.held_out_features()
    labels = torch.from_numpy(held.labels)
    rng = np.random.default_rng(n)
    weighted, plain = [], []
    for draw in range(60):
        order = rng.permutation(len(labels))
        first = np.sort(np.concatenate([order[held.labels[order] == c][::2] for c in range(10)]))
        second = np.setdiff1d(np.arange(len(labels)), first)
        gen = torch.Generator().manual_seed(draw)
        sets = [held.subset(p[balanced_subset(labels[p], n, gen).numpy()]) for p in (first, second)]
        (fa, ya), (fb, yb) = [(s.features, s.labels) for s in sets]
        weighted.append(S.kid(fa, fb, ya, yb))
        plain.append(S.kid(fa, fb))
    _, (lo, hi) = mean_interval(weighted)
    assert lo <= 0.0 <= hi
    _, (plain_lo, plain_hi) = mean_interval(plain)
    assert plain_hi < 0.0 and plain_hi - plain_lo < -plain_hi  # an offset, not noise


@pytest.mark.slow
@pytest.mark.xdist_group("zoo")
def test_the_real_row_uses_no_digit_the_classifier_was_trained_on() -> None:
    from sklearn.datasets import load_digits

    from reference.zoo import specs

    # The classifier's training data: the "train" split, and only it (its test accuracy is the
    # one use of the "test" split, after training).
    source = inspect.getsource(specs.train_classifier)
    assert 'load_digits_tensors("train")' in source
    assert source.index('load_digits_tensors("test")') > source.index("fit(")
    train, test = S.dataset_indices("train"), S.dataset_indices("test")
    images = load_digits().images / 8.0 - 1.0
    for split, idx in (("train", train), ("test", test)):
        x, _ = load_digits_tensors(split, size=8)
        assert np.array_equal(x[:, 0].numpy(), images[idx].astype(np.float32))
    reference, real = S.held_out_split()
    assert (len(reference), len(real)) == (S.REFERENCE_SIZE, 300 - S.REFERENCE_SIZE)
    assert set(reference).isdisjoint(real) and len(set(reference) | set(real)) == 300
    assert set(test[reference]).isdisjoint(train) and set(test[real]).isdisjoint(train)
    assert S.max_balanced_n(S.real_set().labels) == S.MAX_REAL_N
    row = S.real_row(S.MAX_REAL_N, draws=5)
    assert (row.reference_size, row.real_size) == (150, 150)
    assert row.fdd_range[0] <= row.fdd <= row.fdd_range[1]
    as_row = row.as_row("fdd_heldout", "kid_heldout")
    assert (as_row.id, as_row.role, as_row.values["kid_heldout"]) == ("real", "reference", row.kid)
    with pytest.raises(ValueError, match="real_row"):
        S.real_row(S.MAX_REAL_N + 1)


def _synthetic(rng: np.random.Generator, shift: float, n: int) -> S.FeatureSet:
    labels = np.arange(n) % 10
    return S.FeatureSet(rng.normal(size=(n, 4)) + labels[:, None] * 0.3 + shift, labels)


def test_the_interval_over_seeds_and_reference_is_wider_when_the_reference_matters() -> None:
    """A pool of 40 points (4 per class) in 4-d and a reference of 20 of them: which 20 form the
    reference moves both distances as much as the noise seeds do, so the interval that also
    resamples the reference is at least as wide as the same bootstrap over seeds alone. (The
    5-seed t interval is not the comparison: its quantile 2.78 widens it by construction.)"""
    rng = np.random.default_rng(0)
    pool = _synthetic(rng, 0.0, 40)
    reference = pool.subset(np.arange(20))
    a = [_synthetic(rng, 1.0, 100) for _ in range(5)]
    b = [_synthetic(rng, 0.5, 100) for _ in range(5)]
    for metric in ("fdd", "kid"):
        got = S.ratio_interval(a, b, metric, reference=reference, pool=pool, resamples=200)
        assert got.subset_size == 20
        fn = S.METRICS[metric]
        whole = [fn(s.features, s.labels, reference) for s in a]
        assert got.value == pytest.approx(
            sum(whole) / sum(fn(s.features, s.labels, reference) for s in b), rel=1e-12
        )
        assert got.seed_only[0] <= got.value <= got.seed_only[1]
        assert got.interval[1] - got.interval[0] >= got.seed_only[1] - got.seed_only[0]
    with pytest.raises(ValueError, match="unknown metric"):
        S.ratio_interval(a, b, "psnr", reference=reference, pool=pool)


def test_degradations_at_strength_zero_change_nothing_and_replace_nested_sets() -> None:
    x = torch.rand(40, 1, 16, 16) * 2 - 1
    y = torch.arange(40) % 10
    for name, degrade in D.DEGRADATIONS.items():
        assert torch.equal(degrade(x, y, 0.0, 0), x), name
    flat = torch.full((2, 1, 16, 16), 0.25)
    assert torch.allclose(D.gaussian_blur(flat, 1.3), flat, atol=1e-6)  # weights sum to 1
    few, more = D.wrong_class(x, y, 0.1, 3), D.wrong_class(x, y, 0.3, 3)
    changed = lambda z: {i for i in range(40) if not torch.equal(z[i], x[i])}  # noqa: E731
    assert len(changed(few)) == 4 and changed(few) <= changed(more)
    dup = D.duplicate(x, y, 1.0, 0)
    assert len({tuple(dup[i].flatten().tolist()) for i in range(40)}) == 10  # one per class


@pytest.mark.slow
@pytest.mark.xdist_group("zoo")
def test_each_degradation_moves_each_metric_the_right_way_at_two_strengths() -> None:
    x, y = load_digits_tensors("test")
    real = torch.tensor(S.held_out_split()[1])
    grid = {"blur": (0.0, 0.7, 1.4), "noise": (0.0, 0.15, 0.4)}
    grid |= {"wrong_class": (0.0, 0.2, 0.4), "duplicates": (0.0, 0.25, 0.5)}
    table = D.degradation_table(x[real], y[real], grid=grid)
    assert len(table) == 12
    assert D.monotone_failures(table) == []
