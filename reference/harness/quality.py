"""Sample-quality metrics on the digits: the Fréchet and kernel digits distances and friends.

Fréchet digits distance (FDD) - an FID analog, **not** FID
==========================================================
FID (Heusel et al. 2017, arXiv:1706.08500) fits a Gaussian to Inception-v3 features of real and
of generated images and reports the Fréchet (2-Wasserstein) distance between the two Gaussians:

    FD = ||mu_a - mu_b||^2 + tr(S_a) + tr(S_b) - 2 tr((S_a^{1/2} S_b S_a^{1/2})^{1/2})   (1)

Inception features mean nothing on 16x16 digits, so the FDD uses the same formula on the 64-d
penultimate features of the zoo's digits classifier (`reference.zoo.nets.DigitsClassifier`)
and takes the 300 held-out **test** digits as the real distribution. FDD numbers are therefore
only comparable with other FDD numbers of this project, never with published FID values.

Kernel digits distance (KID analog)
===================================
KID (Bińkowski, Sutherland, Arbel and Gretton 2018, "Demystifying MMD GANs", arXiv:1801.01401)
is the squared maximum mean discrepancy between the two feature sets with the cubic polynomial
kernel ``k(x, y) = (x·y / d + 1)^3``, estimated without bias (`kernel_distance`, (7)-(8)).
It needs no Gaussian assumption and its expectation does not depend on the sample size, which
makes it the second opinion the benchmarks report beside the FDD, on the same features.

Real-data reference
===================
`real_reference` scores class-balanced sets of real training digits at the benchmark's n
(mean and central 95% range over 50 draws). Generated sets are class-balanced
(`class_labels`), so an unbalanced real draw would be an
unfair yardstick: it scores worse than a balanced one and makes a model look "better than real".

Pitfalls
========
* The Fréchet distance of finite samples is biased upwards; the bias shrinks like 1/N and also
  depends on the model being evaluated (Chong & Forsyth 2020, arXiv:1911.07023). Compare methods
  at the **same N** (every benchmark uses 256 unless it says why not), read ratios rather than
  absolute values, and read a number against `real_reference` at that N. KID is unbiased
  but noisier at small N.
* Differences smaller than the interval over noise seeds (`reference.harness.stats`) are no
  difference.
* The matrix square root is computed from a symmetric eigen-decomposition
  (``S_a^{1/2} S_b S_a^{1/2}`` is symmetric PSD), which is exact up to rounding and never produces
  the complex parts that ``scipy.linalg.sqrtm`` can.

Production counterparts: ``torchmetrics.image.fid.FrechetInceptionDistance`` and
``torchmetrics.image.kid.KernelInceptionDistance`` (a test checks that both agree with these
functions when given the same feature extractor), ``clean-fid`` (Parmar et al. 2022,
arXiv:2104.11222).

Other metrics here: class accuracy of conditional samples (clean classifier), within-class
diversity (mean pairwise feature distance), and per-sample deviation from a baseline trajectory
started from the same noise (MSE and PSNR for images in [-1, 1], peak-to-peak 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from reference.data import load_digits_tensors

PEAK_TO_PEAK = 2.0
"""Images live in [-1, 1]: the PSNR peak signal is 2."""
PSNR_CAP_DB = 100.0
"""PSNR of identical images is infinite; it is reported as this cap instead."""


@lru_cache(maxsize=1)
def _classifier() -> torch.nn.Module:
    from reference.zoo import load_classifier

    model = load_classifier()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


@torch.no_grad()
def classifier_features(x: torch.Tensor, batch: int = 500) -> torch.Tensor:
    """The zoo classifier's penultimate features ``[N, 64]`` (float64) of images in [-1, 1]."""
    model = _classifier()
    feats = [model.features(chunk.float()) for chunk in x.split(batch)]
    return torch.cat(feats).double()


@torch.no_grad()
def classifier_logits(x: torch.Tensor, batch: int = 500) -> torch.Tensor:
    model = _classifier()
    return torch.cat([model(chunk.float()) for chunk in x.split(batch)])


@dataclass(frozen=True)
class FeatureStats:
    """Gaussian fit of features: mean ``mu`` [D], covariance ``sigma`` [D, D], sample count."""

    mu: np.ndarray
    sigma: np.ndarray
    n: int


def feature_stats(x: torch.Tensor) -> FeatureStats:
    """Fit a Gaussian to the classifier features of images ``x`` ``[N, 1, 16, 16]``."""
    if x.shape[0] < 2:
        raise ValueError(f"feature_stats: need at least 2 images, got {x.shape[0]}")
    return _stats_of(classifier_features(x).numpy())


def _sqrt_psd(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((a + a.T) / 2)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def frechet_distance(a: FeatureStats, b: FeatureStats) -> float:
    """Fréchet distance between two Gaussian fits (see the module docstring for the formula)."""
    root_a = _sqrt_psd(a.sigma)
    middle = root_a @ b.sigma @ root_a
    eig = np.linalg.eigvalsh((middle + middle.T) / 2)
    tr_sqrt = float(np.sqrt(np.clip(eig, 0, None)).sum())
    diff = a.mu - b.mu
    value = float(diff @ diff + np.trace(a.sigma) + np.trace(b.sigma) - 2.0 * tr_sqrt)  # (1)
    return max(value, 0.0)  # rounding can make identical inputs give -1e-6


@lru_cache(maxsize=1)
def reference_stats() -> FeatureStats:
    """Feature statistics of the 300 held-out test digits: the "real" side of the FDD."""
    return _stats_of(_split_features("test"))


def frechet_digits_distance(samples: torch.Tensor, reference: FeatureStats | None = None) -> float:
    """FDD of ``samples`` ``[N, 1, 16, 16]`` in [-1, 1] against the test digits (lower = better).

    An FID analog (1) on the zoo classifier's features; not comparable with FID. Biased by N:
    compare at equal N and against `real_reference` at that N.
    """
    return frechet_distance(feature_stats(samples), reference or reference_stats())


def kernel_distance(fa: np.ndarray, fb: np.ndarray) -> float:
    """Unbiased squared MMD between feature sets ``fa`` [m, d] and ``fb`` [n, d] with the cubic
    polynomial kernel of KID (Bińkowski et al. 2018, arXiv:1801.01401):

        k(x, y) = (x·y / d + 1)^3                                                   (7)
        MMD²_u = Σ_{i≠j} k(a_i, a_j) / (m(m-1)) + Σ_{i≠j} k(b_i, b_j) / (n(n-1))
                 - 2 Σ_{i,j} k(a_i, b_j) / (mn)                                      (8)

    Unlike the Fréchet distance, (8) is an unbiased estimator at any sample size (it can be
    slightly negative when the two sets come from the same distribution).
    """
    if fa.shape[0] < 2 or fb.shape[0] < 2:
        raise ValueError("kernel_distance: need at least 2 feature rows on each side")
    m, n, d = fa.shape[0], fb.shape[0], fa.shape[1]
    k_aa = (fa @ fa.T / d + 1.0) ** 3  # (7)
    k_bb = (fb @ fb.T / d + 1.0) ** 3
    k_ab = (fa @ fb.T / d + 1.0) ** 3
    within_a = (k_aa.sum() - np.trace(k_aa)) / (m * (m - 1))  # (8)
    within_b = (k_bb.sum() - np.trace(k_bb)) / (n * (n - 1))
    return float(within_a + within_b - 2.0 * k_ab.mean())


@lru_cache(maxsize=2)
def _split_features(split: str) -> np.ndarray:
    """Classifier features of a whole split of the digits (computed once per process)."""
    x, _ = load_digits_tensors(split)
    return classifier_features(x).numpy()


def _stats_of(f: np.ndarray) -> FeatureStats:
    return FeatureStats(mu=f.mean(0), sigma=np.cov(f, rowvar=False), n=f.shape[0])


def kernel_digits_distance(samples: torch.Tensor) -> float:
    """KID analog (8) of ``samples`` ``[N, 1, 16, 16]`` against the test digits, on the same
    classifier features as the FDD (lower = better; unbiased, so comparable across N)."""
    return kernel_distance(classifier_features(samples).numpy(), _split_features("test"))


def balanced_subset(labels: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """Indices of ``n`` items with the class counts of `
    class_labels` (``n // 10`` per class, the first ``n % 10`` classes one more), drawn without
    replacement within each class."""
    picks = []
    for c in range(10):
        pool = torch.nonzero(labels == c).flatten()
        k = n // 10 + (1 if c < n % 10 else 0)
        if k > len(pool):
            raise ValueError(f"balanced_subset: class {c} has {len(pool)} items, need {k}")
        picks.append(pool[torch.randperm(len(pool), generator=generator)[:k]])
    return torch.cat(picks)


@dataclass(frozen=True)
class RealReference:
    """What real digits score at a sample size: the mean and the central 95% range over
    ``draws`` class-balanced subsets of the training digits, for the FDD and the KID."""

    n: int
    draws: int
    fd_mean: float
    fd_range: tuple[float, float]
    kid_mean: float
    kid_range: tuple[float, float]


def _central_range(values: list[float]) -> tuple[float, float]:
    xs = sorted(values)
    return xs[round(0.025 * (len(xs) - 1))], xs[round(0.975 * (len(xs) - 1))]


@lru_cache(maxsize=8)
def real_reference(n: int, draws: int = 50, seed: int = 0) -> RealReference:
    """FDD and KID of ``draws`` class-balanced sets of ``n`` real training digits vs the test
    digits: the real-data reference at ``n``, balanced like the generated sets.

    Not a lower bound: the classifier whose features are compared was trained on these digits,
    and a generated set can score inside or below the range. Read it as "what real digits score
    at this n", with its spread over draws.
    """
    _, y = load_digits_tensors("train")
    if not 10 <= n <= len(y) or draws < 2:
        raise ValueError(f"real_reference: need 10 <= n <= {len(y)} and draws >= 2")
    train, test = _split_features("train"), _split_features("test")
    gen = torch.Generator().manual_seed(seed)
    fds, kids = [], []
    for _ in range(draws):
        f = train[balanced_subset(y, n, gen).numpy()]
        fds.append(frechet_distance(_stats_of(f), reference_stats()))
        kids.append(kernel_distance(f, test))
    return RealReference(
        n,
        draws,
        float(np.mean(fds)),
        _central_range(fds),
        float(np.mean(kids)),
        _central_range(kids),
    )


@lru_cache(maxsize=16)
def fdd_ceiling(n: int, seed: int = 0) -> float:
    """FDD of ``n`` Gaussian-noise images clipped to [-1, 1] vs the test digits: "no model"."""
    noise = torch.randn((n, 1, 16, 16), generator=torch.Generator().manual_seed(seed))
    return frechet_digits_distance(noise.clamp(-1.0, 1.0))


def class_accuracy(samples: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of conditional ``samples`` that the clean classifier assigns to their ``labels``."""
    pred = classifier_logits(samples).argmax(1)
    return float((pred == labels.to(pred.device)).float().mean())


def within_class_diversity(samples: torch.Tensor, labels: torch.Tensor | None = None) -> float:
    """Mean pairwise Euclidean feature distance between samples of the same class.

    Averaged over classes with at least two samples. ``labels=None`` groups by the classifier's
    predicted class (for unconditional samples). Mode collapse drives it towards 0; compare with
    the same statistic of real digits (`real_diversity`).
    """
    feats = classifier_features(samples)
    groups = labels if labels is not None else classifier_logits(samples).argmax(1)
    per_class = []
    for c in groups.unique():
        f = feats[groups == c]
        if len(f) < 2:
            continue
        # Direct differences, not cdist's |a|^2 + |b|^2 - 2ab expansion, which cancels
        # catastrophically for near-identical rows (collapsed samples, the case this detects).
        d = torch.cdist(f, f, compute_mode="donot_use_mm_for_euclid_dist")
        per_class.append(float(d.sum() / (len(f) * (len(f) - 1))))
    if not per_class:
        raise ValueError("within_class_diversity: no class has two samples")
    return float(np.mean(per_class))


@lru_cache(maxsize=1)
def real_diversity() -> float:
    """`within_class_diversity` of the test digits (with their true labels)."""
    x, y = load_digits_tensors("test")
    return within_class_diversity(x, y)


def mse_per_sample(samples: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """Mean squared error per sample ``[N]`` between two batches of images."""
    if samples.shape != baseline.shape:
        raise ValueError(f"mse: shapes differ, {tuple(samples.shape)} vs {tuple(baseline.shape)}")
    return (samples.float() - baseline.float()).pow(2).flatten(1).mean(1)


def psnr_per_sample(samples: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """PSNR in dB per sample ``[N]``: ``10 log10(2^2 / MSE)``, capped at ``PSNR_CAP_DB``."""
    mse = mse_per_sample(samples, baseline)
    psnr = 10.0 * torch.log10(PEAK_TO_PEAK**2 / mse.clamp_min(1e-30))
    return psnr.clamp(max=PSNR_CAP_DB)


def trajectory_deviation(samples: torch.Tensor, baseline: torch.Tensor) -> dict[str, float]:
    """``{"mse": mean MSE, "psnr_db": mean PSNR}`` vs a baseline from the same noise."""
    return {
        "mse": float(mse_per_sample(samples, baseline).mean()),
        "psnr_db": float(psnr_per_sample(samples, baseline).mean()),
    }


def quality_report(samples: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, float]:
    """FDD, KID, within-class diversity and (given ``labels``) class accuracy of ``samples``."""
    report = {
        "fd_digits": frechet_digits_distance(samples),
        "kid_digits": kernel_digits_distance(samples),
        "diversity": within_class_diversity(samples, labels),
    }
    if labels is not None:
        report["accuracy"] = class_accuracy(samples, labels)
    return report
