"""The Fréchet digits distance and the per-sample metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference.data import load_digits_tensors
from reference.harness import quality as Q


def stats(mu: list[float], sigma: np.ndarray, n: int = 100) -> Q.FeatureStats:
    return Q.FeatureStats(np.asarray(mu, dtype=float), sigma, n)


def test_frechet_distance_closed_forms() -> None:
    eye = np.eye(3)
    assert Q.frechet_distance(stats([0, 0, 0], eye), stats([0, 0, 0], eye)) == pytest.approx(0)
    # equal covariances: FD is the squared distance of the means
    assert Q.frechet_distance(stats([0, 0, 0], eye), stats([1, 2, 2], eye)) == pytest.approx(9)
    # equal means, S_a = I, S_b = 4 I in 3-d: 3 + 12 - 2 * tr(2 I) = 3
    assert Q.frechet_distance(stats([0] * 3, eye), stats([0] * 3, 4 * eye)) == pytest.approx(3)
    a, b = stats([0, 1, 0], np.diag([1.0, 2.0, 3.0])), stats([1, 0, 0], np.diag([2.0, 1.0, 5.0]))
    assert Q.frechet_distance(a, b) == pytest.approx(Q.frechet_distance(b, a))


def test_mse_and_psnr_per_sample() -> None:
    a = torch.zeros(2, 1, 4, 4)
    b = torch.full((2, 1, 4, 4), 0.2)
    assert Q.mse_per_sample(a, b).tolist() == pytest.approx([0.04, 0.04])
    assert Q.psnr_per_sample(a, b).tolist() == pytest.approx([20.0, 20.0])  # 10 log10(4 / 0.04)
    assert Q.psnr_per_sample(a, a).tolist() == [Q.PSNR_CAP_DB] * 2  # exact: MSE 0 -> the cap
    dev = Q.trajectory_deviation(a, b)
    assert dev == pytest.approx({"mse": 0.04, "psnr_db": 20.0})
    with pytest.raises(ValueError, match="shapes differ"):
        Q.mse_per_sample(a, b[:1])


def test_kernel_distance_closed_forms() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(400, 8))
    # The same points on both sides: the cross term keeps the diagonal k(x_i, x_i) (the largest
    # kernel values) that the within terms drop, so (8) is negative.
    assert Q.kernel_distance(a, a) < 0
    # Independent draws of one distribution: (8) is unbiased, E = 0; its sd at m = n = 400 in
    # 8-d is 0.009 (40 pairs of draws, largest |value| 0.033), against 7.6 for a unit shift.
    b = rng.normal(size=(400, 8))
    assert abs(Q.kernel_distance(a, b)) < 0.05
    assert Q.kernel_distance(a, b + 1.0) > 1.0
    with pytest.raises(ValueError, match="at least 2"):
        Q.kernel_distance(a[:1], b)


def test_balanced_subset_has_the_class_counts_of_class_labels() -> None:
    labels = torch.arange(300) % 10
    idx = Q.balanced_subset(labels, 256, torch.Generator().manual_seed(0))
    counts = torch.bincount(labels[idx], minlength=10).tolist()
    assert counts == torch.bincount(torch.arange(256) % 10, minlength=10).tolist()
    assert len(set(idx.tolist())) == 256
    with pytest.raises(ValueError, match="class 0"):
        Q.balanced_subset(labels, 400, torch.Generator().manual_seed(0))


@pytest.mark.slow
@pytest.mark.xdist_group("zoo")
def test_real_reference_is_balanced_and_far_below_noise() -> None:
    n = 256
    ref = Q.real_reference(n, draws=20)
    assert ref.fd_range[0] <= ref.fd_mean <= ref.fd_range[1]
    assert ref.kid_range[0] <= ref.kid_mean <= ref.kid_range[1]
    noise = Q.fdd_ceiling(n)
    assert noise > 20 * ref.fd_mean
    assert Q.real_reference(64, draws=20).fd_mean > ref.fd_mean  # finite-sample bias of (1)
    with pytest.raises(ValueError, match="real_reference"):
        Q.real_reference(5)


@pytest.mark.slow
@pytest.mark.xdist_group("zoo")
def test_fdd_and_kid_agree_with_torchmetrics() -> None:
    """Our (1) and (8) against torchmetrics' FID and KID given the same feature extractor.

    Both compute in float64 from the same float32 features; the remaining differences are the
    order of summation and torchmetrics' covariance from running sums (cancellation of
    n * mu mu^T against sum x x^T, about 1e-10 relative here), far below the 1e-4 asked for.
    """
    from torchmetrics.image.fid import FrechetInceptionDistance
    from torchmetrics.image.kid import KernelInceptionDistance

    class Features(torch.nn.Module):
        num_features = 64

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return Q.classifier_features(x).float()

    real, _ = load_digits_tensors("test")
    train, _ = load_digits_tensors("train")
    fake = train[:300]
    fid = FrechetInceptionDistance(feature=Features())
    fid.update(real, real=True)
    fid.update(fake, real=False)
    ours = Q.frechet_distance(Q.feature_stats(fake), Q.reference_stats())
    assert float(fid.compute()) == pytest.approx(ours, rel=1e-4)

    kid = KernelInceptionDistance(feature=Features(), subsets=1, subset_size=300)
    kid.update(real, real=True)
    kid.update(fake, real=False)
    kid_mean, _ = kid.compute()
    assert float(kid_mean) == pytest.approx(Q.kernel_digits_distance(fake), rel=1e-4)


@pytest.mark.slow
@pytest.mark.xdist_group("zoo")
def test_classifier_metrics_on_real_and_degenerate_sets() -> None:
    x, y = load_digits_tensors("test")
    assert Q.class_accuracy(x, y) > 0.95
    # exact by construction: real_diversity is this function on these digits, in this process
    assert Q.within_class_diversity(x, y) == pytest.approx(Q.real_diversity())
    # Five copies of one image: the rows of a batch may take different BLAS kernel paths (seen:
    # 2.3e-6 on AMD EPYC, 0 on Intel Xeon), so their float32 features agree to a few ulp, i.e.
    # a distance of a few float32 eps (1.2e-7) times the feature norm; allow 100 eps.
    copies = x[:1].repeat(5, 1, 1, 1)
    norm = float(Q.classifier_features(copies)[0].norm())
    same = Q.within_class_diversity(copies, torch.zeros(5))
    assert same == pytest.approx(0, abs=100 * 1.2e-7 * norm)
    report = Q.quality_report(x, y)
    assert set(report) == {"fd_digits", "kid_digits", "diversity", "accuracy"}
    # FD of identical statistics: 0 up to the square roots of the 9 null eigenvalues of S^2
    # (dead ReLU features), each <= sqrt(64 eps64) * lambda_max(S) = 1.2e-7 * 190 = 2.3e-5
    # (measured -5e-6, clipped to 0; LAPACK's rounding may give either sign): 2 * 9 * 2.3e-5
    assert report["fd_digits"] == pytest.approx(0, abs=4e-4)
