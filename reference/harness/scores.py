"""Quality yardsticks of the new harness: an unbiased KID, a held-out real row, and intervals that
resample the reference set as well as the noise seeds.

Reference and real halves of the held-out digits
================================================
The zoo classifier whose features every distance compares was fitted on the 1,497 training
digits only (`reference.zoo.specs.train_classifier` reads ``load_digits_tensors("train")``; the
300 test digits serve only its test accuracy, after training), so the old real row
(`reference.harness.quality.real_reference`) scores the classifier's own training set. Here the
300 held-out digits are split once, stratified by class with seed `HELD_OUT_SEED`
(``sklearn``'s ``train_test_split``, the rule `reference.data` uses), into

* the **reference half** (150 digits, 15 per class): the real side of every FDD and KID, and
* the **real half** (150 digits, 14-16 per class): what `real_row` scores against the
  reference half.

Neither half holds a training digit (a test checks the index sets in scikit-learn's numbering).
A class-balanced set needs ``n // 10 + 1`` digits of the rarest class, so `real_row` reaches
``n = MAX_REAL_N`` (148). Measured (50 draws, mean and central 95% range): held-out digits score
FDD 21.7 [16.3, 28.2] at n = 64 and 13.2 [11.9, 14.5] at n = 128 against the reference half,
where training digits scored 16.5 and 8.7 against the whole test split (the old row). The FDD is
biased by n, so a ported benchmark that shows the real row samples at most 148 images per seed;
the KID's expectation does not depend on n.

An unbiased KID with class weights
==================================
KID (Bińkowski, Sutherland, Arbel and Gretton 2018, "Demystifying MMD GANs", arXiv:1801.01401)
is the squared maximum mean discrepancy with the cubic polynomial kernel on d-dimensional
features, estimated with the unbiased U-statistic (the paper's KID; the FID it is set beside is
Heusel et al. 2017, arXiv:1706.08500):

    k(x, y) = (x·y / d + 1)^3                                                        (1)
    MMD²_u = Σ_{i≠j} k(a_i, a_j) / (m(m-1)) + Σ_{i≠j} k(b_i, b_j) / (n(n-1))
             - 2 Σ_{i,j} k(a_i, b_j) / (mn)                                           (2)

(2) is unbiased only when each set is an i.i.d. sample. The benchmarks' sets are not: generated
sets carry exactly ``n / 10`` samples per class (`reference.harness.sampling.class_labels`) and
the test split is stratified. A class-balanced set has fewer same-class pairs than an i.i.d. one
(a fraction ``(n/10 - 1)/(n - 1)`` instead of 1/10), and same-class pairs have the larger kernel
values, so each balanced set lowers its within term of (2) by about

    0.9 (K_same - K_cross) / (n - 1)                                                     (3)

where ``K_same - K_cross`` = 46,837 - 11,929 = 34,908 on the held-out features (mean kernel
value of two different digits of one class, and of two classes). That is where the old KID's
offsets came from (``scripts/metric_sanity.py``, 50 draws of class-balanced training digits
against the 300 test digits):

    n                                     64     128    256
    old real row, (2)                   -619    -378   -252
    same draws, not class-balanced      -189    -135   -163
    difference (the balanced side)      -430    -243    -89
    (3) for one balanced side           -499    -247   -123
    same draws, (6) below                -10     -19    -18

The rest of the old offset is the stratified test split's own within term ((3) at n = 300:
-105) plus the deviation of this one fixed test set. `kid` with labels removes both by
estimating every block of the kernel mean separately and weighting the blocks by the class
weights ``π_c`` (uniform here):

    h_XY(c, c') = mean of k(x, y) over x ∈ X_c, y ∈ Y_c', pairs of one item left out   (4)
    K̄_XY = Σ_c Σ_c' π_c π_c' h_XY(c, c')                                               (5)
    KID_π = K̄_AA + K̄_BB - 2 K̄_AB                                                       (6)

Each block mean (4) is unbiased for the kernel mean between two class-conditional distributions
whatever the class counts, so (6) is unbiased for MMD² between the two π-mixtures: 0 in
expectation for two real sets at any n, class-balanced or not. Without labels `kid` is (2), for
sets drawn i.i.d. (unconditional samples). Two disjoint class-balanced real sets, drawn from
random stratified halves of the held-out digits (50 draws), score with (6) -11 [-58, 36] at
n = 64 and -10 [-25, 6] at n = 128 (mean and 95% t interval; a test checks the coverage of 0 at
n = 40 and 120), and with (2) -997 and -506, twice (3).

(6) compares the class *mixtures*, so it is blind to a conditional sample of the wrong class
that leaves the mixture unchanged, and so is the FDD. `kid_per_class` is the class-conditional
version, the π-weighted mean of the per-class MMD² (unbiased by the same argument):

    KID_class = Σ_c π_c (h_AA(c, c) + h_BB(c, c) - 2 h_AB(c, c))                       (8)

It grows with the square of the fraction of wrong-class samples, so a few percent stay in its
noise (`reference.harness.degradations`).

Intervals over seeds and reference sets
=======================================
A per-seed t interval (`reference.harness.stats.paired_ratio`) treats the reference digits as
fixed, but another reference set of the same size would move a ratio of two configurations too.
`ratio_interval` takes per-seed features of two configurations (paired by seed) and reads the
percentile-bootstrap interval (Efron 1979) of

    R = Σ_s M(A_s, ref) / Σ_s M(B_s, ref)                                                (7)

where each resample draws the seeds with replacement and a class-balanced reference of the
reference half's size (150) from all 300 held-out digits, without replacement. The value is (7)
on the reference half; ``seed_only`` is the same bootstrap with the reference half fixed, the
like-for-like comparison (the 5-seed t interval is wider by construction: its quantile is 2.78).

Measured (``scripts/metric_sanity.py``): DDIM at 10 against 50 steps on the clipped ODE
(`reference.harness.ode`), n = 128, seeds 0-4, 1,000 resamples. FDD ratio: t interval 0.955
[0.908, 1.000] (width 0.092); ratio of sums 0.952, seeds only [0.935, 0.988] (0.053), seeds and
reference sets [0.896, 1.000] (0.104): which held-out digits form the reference doubles the
bootstrap's width. The KIDs of both samplers (per seed -92 to 86) lie within the real row's
range at this n (-38 [-66, 4]), so their ratio means nothing. The FDDs too (11.0-17.1) lie
about where held-out digits score (13.2 [11.9, 14.5]): at n = 128 against 150 reference digits,
neither distance tells these samples from real digits.

Pitfalls
========
* Reference sets drawn from a pool of 300 vary like ``1 - 150/300`` = half of what independent
  sets of 150 digits would (the finite-population factor), so the interval understates the
  reference's share by about 1/√2 in width. Drawing smaller subsets would fix the variance but
  not the level: the FDD's small-sample bias grows as the reference shrinks, which pulls an FDD
  ratio towards 1. A larger held-out pool (classifiers cross-fitted on folds) is the remedy.
* The kernel's scale is about 1e4 on these features; KID values are comparable only between
  sets scored against the same reference, never across reference sets. The real row's KID
  against the fixed reference half is not exactly 0 (-38 [-66, 4] at n = 128): that is this
  split's deviation, which every set scored against it shares.
* A KID ratio is meaningless when the denominator's KID is within its noise of 0
  (`ratio_interval` refuses a resample whose denominator is not positive).
* (6) and (8) need at least two items of every class on each side; they refuse fewer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import torch

from reference.data import NUM_CLASSES, SPLIT_SEED, TEST_SIZE, load_digits_tensors

from .quality import FeatureStats, balanced_subset, classifier_features, frechet_distance
from .results import Row

HELD_OUT_SEED = 0
"""Seed of the stratified split of the held-out digits into reference and real halves."""
REFERENCE_SIZE = 150
"""Digits in the reference half (the real half holds the other 150)."""
Metric = Callable[[np.ndarray, np.ndarray, "FeatureSet"], float]


@dataclass(frozen=True, eq=False)
class FeatureSet:
    """Classifier features ``[N, 64]`` of a set of digits, their labels ``[N]`` and Gaussian fit."""

    features: np.ndarray
    labels: np.ndarray

    @cached_property
    def stats(self) -> FeatureStats:
        return gaussian_fit(self.features)

    def subset(self, idx: np.ndarray) -> FeatureSet:
        return FeatureSet(self.features[idx], self.labels[idx])


def gaussian_fit(f: np.ndarray) -> FeatureStats:
    """Mean and covariance of feature rows ``f`` (the inputs of the Fréchet distance)."""
    return FeatureStats(mu=f.mean(0), sigma=np.cov(f, rowvar=False), n=f.shape[0])


def dataset_indices(split: str) -> np.ndarray:
    """Positions in ``sklearn.datasets.load_digits`` of the digits of ``split``, in the order
    `reference.data.load_digits_tensors` serves them (the same split rule, recomputed)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if split not in ("train", "test"):
        raise ValueError(f"dataset_indices: split must be 'train' or 'test', got {split!r}")
    y = load_digits().target
    train, test = train_test_split(
        np.arange(len(y)), test_size=TEST_SIZE, stratify=y, random_state=SPLIT_SEED
    )
    return np.sort({"train": train, "test": test}[split])


@lru_cache(maxsize=4)
def held_out_split(seed: int = HELD_OUT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """``(reference, real)``: positions in the test split of the two stratified halves
    (read-only arrays: the cache hands the same ones to every caller)."""
    from sklearn.model_selection import train_test_split

    _, y = load_digits_tensors("test")
    reference, real = train_test_split(
        np.arange(len(y)), train_size=REFERENCE_SIZE, stratify=y.numpy(), random_state=seed
    )
    halves = np.sort(reference), np.sort(real)
    for half in halves:
        half.setflags(write=False)
    return halves


@lru_cache(maxsize=1)
def held_out_features() -> FeatureSet:
    """Features and labels of the 300 held-out digits (computed once per process)."""
    x, y = load_digits_tensors("test")
    return FeatureSet(classifier_features(x).numpy(), y.numpy())


def reference_set(seed: int = HELD_OUT_SEED) -> FeatureSet:
    """The reference half: the real side of `fdd` and `kid`."""
    return held_out_features().subset(held_out_split(seed)[0])


def real_set(seed: int = HELD_OUT_SEED) -> FeatureSet:
    """The real half: held-out digits that `real_row` scores against the reference half."""
    return held_out_features().subset(held_out_split(seed)[1])


def max_balanced_n(labels: np.ndarray) -> int:
    """The largest n for which `balanced_subset` can draw ``n`` items from ``labels``
    (``n // 10`` per class and one more in each of the first ``n % 10`` classes)."""
    counts = np.bincount(labels, minlength=NUM_CLASSES)

    def fits(n: int) -> bool:
        q, r = divmod(n, NUM_CLASSES)
        return all(counts[c] >= q + (1 if c < r else 0) for c in range(NUM_CLASSES))

    n = 0
    while n < len(labels) and fits(n + 1):
        n += 1
    return n


def cubic_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The KID kernel (1) between feature rows of ``a`` ``[m, d]`` and ``b`` ``[n, d]``."""
    return (a @ b.T / a.shape[1] + 1.0) ** 3  # (1)


def _plain_mmd2(fa: np.ndarray, fb: np.ndarray) -> float:
    m, n = fa.shape[0], fb.shape[0]
    k_aa, k_bb, k_ab = cubic_kernel(fa, fa), cubic_kernel(fb, fb), cubic_kernel(fa, fb)
    within_a = (k_aa.sum() - np.trace(k_aa)) / (m * (m - 1))  # (2)
    within_b = (k_bb.sum() - np.trace(k_bb)) / (n * (n - 1))
    return float(within_a + within_b - 2.0 * k_ab.mean())


def _onehot(labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    return (labels[:, None] == classes[None, :]).astype(float)


def _block_means(
    fx: np.ndarray, yx: np.ndarray, fy: np.ndarray, yy: np.ndarray, classes: np.ndarray, same: bool
) -> np.ndarray:
    """The kernel's block means h(c, c') ``[C, C]`` of (4)."""
    k = cubic_kernel(fx, fy)
    ox, oy = _onehot(yx, classes), _onehot(yy, classes)
    sums = ox.T @ k @ oy  # block sums [C, C]
    counts = np.outer(ox.sum(0), oy.sum(0))
    if same:  # leave out the pairs (i, i) of the diagonal blocks
        sums -= np.diag(ox.T @ np.diag(k))
        counts -= np.diag(ox.sum(0))
    return sums / counts  # (4)


def _blocks(
    fa: np.ndarray, fb: np.ndarray, labels_a: np.ndarray, labels_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(h_AA, h_BB, h_AB, π)`` after checking that every class has two items on each side."""
    if fa.shape[0] < 2 or fb.shape[0] < 2:
        raise ValueError("kid: need at least 2 feature rows on each side")
    classes = np.union1d(labels_a, labels_b)
    for name, labels in (("first", labels_a), ("second", labels_b)):
        fewest = min(int((labels == c).sum()) for c in classes)
        if fewest < 2:
            raise ValueError(f"kid: the {name} set has a class with {fewest} items, need 2")
    h_aa = _block_means(fa, labels_a, fa, labels_a, classes, same=True)
    h_bb = _block_means(fb, labels_b, fb, labels_b, classes, same=True)
    h_ab = _block_means(fa, labels_a, fb, labels_b, classes, same=False)
    return h_aa, h_bb, h_ab, np.full(len(classes), 1.0 / len(classes))


def kid(
    fa: np.ndarray,
    fb: np.ndarray,
    labels_a: np.ndarray | None = None,
    labels_b: np.ndarray | None = None,
) -> float:
    """Unbiased squared MMD with the cubic kernel between feature sets ``fa`` and ``fb``.

    With labels: the class-weighted estimator (6), unbiased whatever the class counts (uniform
    weights over the classes present). Without: (2), for i.i.d. sets.
    """
    if (labels_a is None) != (labels_b is None):
        raise ValueError("kid: give labels for both feature sets or for neither")
    if labels_a is None or labels_b is None:
        if fa.shape[0] < 2 or fb.shape[0] < 2:
            raise ValueError("kid: need at least 2 feature rows on each side")
        return _plain_mmd2(fa, fb)
    h_aa, h_bb, h_ab, pi = _blocks(fa, fb, labels_a, labels_b)
    return float(pi @ h_aa @ pi + pi @ h_bb @ pi - 2.0 * pi @ h_ab @ pi)  # (5), (6)


def kid_per_class(
    fa: np.ndarray, fb: np.ndarray, labels_a: np.ndarray, labels_b: np.ndarray
) -> float:
    """Class-conditional KID (8): the π-weighted mean of the per-class MMD² (unbiased)."""
    h_aa, h_bb, h_ab, pi = _blocks(fa, fb, labels_a, labels_b)
    return float(pi @ (np.diag(h_aa) + np.diag(h_bb) - 2.0 * np.diag(h_ab)))  # (8)


def fdd(features: np.ndarray, labels: np.ndarray, reference: FeatureSet) -> float:
    """Fréchet digits distance of feature rows against ``reference`` (labels unused)."""
    return frechet_distance(gaussian_fit(features), reference.stats)


def kid_metric(features: np.ndarray, labels: np.ndarray, reference: FeatureSet) -> float:
    """Class-weighted KID (6) of feature rows with ``labels`` against ``reference``."""
    return kid(features, reference.features, labels, reference.labels)


def kid_class_metric(features: np.ndarray, labels: np.ndarray, reference: FeatureSet) -> float:
    """Class-conditional KID (8) of feature rows with ``labels`` against ``reference``."""
    return kid_per_class(features, reference.features, labels, reference.labels)


METRICS: dict[str, Metric] = {"fdd": fdd, "kid": kid_metric, "kid_class": kid_class_metric}
"""The distances `ratio_interval` and `real_row` know, by name."""


def _central(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    lo, hi = np.quantile(np.asarray(values), [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


@dataclass(frozen=True)
class RealRow:
    """What held-out real digits score at ``n``: mean and central 95% range over ``draws``
    class-balanced subsets of the real half, against the reference half."""

    n: int
    draws: int
    fdd: float
    fdd_range: tuple[float, float]
    kid: float
    kid_range: tuple[float, float]
    reference_size: int
    real_size: int

    def as_row(self, fdd_metric: str, kid_metric: str) -> Row:
        """The ``reference`` row ``real`` of a result, under the result's metric ids (the
        interval is the central range over draws: the spread of real data)."""
        return Row(
            "real",
            {
                "method": "real-digits",
                "n": self.n,
                "draws": self.draws,
                "reference_size": self.reference_size,
            },
            "reference",
            {fdd_metric: self.fdd, kid_metric: self.kid},
            intervals={fdd_metric: self.fdd_range, kid_metric: self.kid_range},
        )


MAX_REAL_N = 148
"""The largest n of `real_row` with the default split (checked by a test)."""


@lru_cache(maxsize=8)
def real_row(n: int, draws: int = 50, seed: int = 0) -> RealRow:
    """FDD and class-weighted KID (6) of ``draws`` class-balanced sets of ``n`` real-half digits
    against the reference half: the held-out real row at ``n`` (not a lower bound)."""
    ref, real = reference_set(), real_set()
    limit = max_balanced_n(real.labels)
    if not 20 <= n <= limit or draws < 2:
        raise ValueError(f"real_row: need 20 <= n <= {limit} and draws >= 2, got n={n}")
    gen = torch.Generator().manual_seed(seed)
    fdds, kids = [], []
    for _ in range(draws):
        pick = real.subset(balanced_subset(torch.from_numpy(real.labels), n, gen).numpy())
        fdds.append(fdd(pick.features, pick.labels, ref))
        kids.append(kid_metric(pick.features, pick.labels, ref))
    return RealRow(
        n,
        draws,
        float(np.mean(fdds)),
        _central(fdds),
        float(np.mean(kids)),
        _central(kids),
        len(ref.labels),
        len(real.labels),
    )


@dataclass(frozen=True)
class RatioInterval:
    """Ratio (7) of configuration A over B on the whole reference, with two percentile-bootstrap
    intervals: over seeds and reference subsets (``interval``), and over seeds alone with the
    whole reference fixed (``seed_only``)."""

    metric: str
    value: float
    interval: tuple[float, float]
    seed_only: tuple[float, float]
    resamples: int
    subset_size: int


def _per_seed(metric: Metric, sets: Sequence[FeatureSet], reference: FeatureSet) -> np.ndarray:
    return np.array([metric(s.features, s.labels, reference) for s in sets])


def ratio_interval(
    a: Sequence[FeatureSet],
    b: Sequence[FeatureSet],
    metric: str = "fdd",
    *,
    reference: FeatureSet | None = None,
    pool: FeatureSet | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> RatioInterval:
    """Percentile-bootstrap interval of the ratio (7) of ``metric`` between two configurations,
    ``a[s]`` and ``b[s]`` sampled from the same noise seed ``s``. Each resample draws the seeds
    with replacement and a class-balanced subset of ``pool`` (default: all held-out digits) as
    large as ``reference`` (default: the reference half), on which the value is computed."""
    if metric not in METRICS:
        raise ValueError(f"ratio_interval: unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"ratio_interval: need paired seeds, got {len(a)} and {len(b)}")
    fn, ref = METRICS[metric], reference or reference_set()
    pool = pool or held_out_features()
    size, pool_labels = len(ref.labels), torch.from_numpy(np.array(pool.labels))
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    whole_a, whole_b = _per_seed(fn, a, ref), _per_seed(fn, b, ref)
    both, fixed = [], []
    for _ in range(resamples):
        seeds = rng.integers(0, len(a), len(a))
        sub = pool.subset(balanced_subset(pool_labels, size, gen).numpy())
        va, vb = _per_seed(fn, a, sub)[seeds].sum(), _per_seed(fn, b, sub)[seeds].sum()
        if vb <= 0:
            raise ValueError(f"ratio_interval: a resample's {metric} of the second set is <= 0")
        both.append(va / vb)  # (7)
        fixed.append(whole_a[seeds].sum() / whole_b[seeds].sum())
    return RatioInterval(
        metric,
        float(whole_a.sum() / whole_b.sum()),
        _central(both),
        _central(fixed),
        resamples,
        size,
    )


# --- the held-out score of a comparison ------------------------------------------------------

QUALITY_METRICS = ("fd_digits", "kid_digits", "accuracy", "diversity")
"""The distribution yardsticks `held_out_score` returns, in the order a result lists them."""


def held_out_score(n: int) -> Callable[[torch.Tensor, object], dict[str, float]]:
    """A comparison's ``score``: FDD and class-weighted KID (6) of ``n`` class-balanced samples
    (``n / 10`` per class, `reference.harness.sampling.class_labels`) against the reference half,
    with the zoo classifier's accuracy on their labels and their within-class diversity.

    Pitfall: the samples must be drawn with those labels in that order; the KID's class weights
    and the accuracy read them.
    """
    from .quality import class_accuracy, within_class_diversity
    from .sampling import class_labels

    labels = class_labels(n)

    def one(x: torch.Tensor, same_seed: object) -> dict[str, float]:
        f, y, ref = classifier_features(x).numpy(), labels.numpy(), reference_set()
        return {
            "fd_digits": fdd(f, y, ref),
            "kid_digits": kid_metric(f, y, ref),
            "accuracy": class_accuracy(x, labels),
            "diversity": within_class_diversity(x, labels),
        }

    return one
