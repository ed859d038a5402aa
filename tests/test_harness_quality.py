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


@pytest.mark.slow
@pytest.mark.xdist_group("zoo")
def test_real_digits_sit_at_the_floor_and_noise_at_the_ceiling() -> None:
    n = 300
    floor = Q.fdd_floor(n)
    x, _ = load_digits_tensors("train")
    other = x[torch.randperm(len(x), generator=torch.Generator().manual_seed(7))[:n]]
    real = Q.frechet_digits_distance(other)
    assert 0.5 * floor < real < 2.0 * floor
    assert Q.fdd_ceiling(n) > 20 * floor
    assert Q.fdd_floor(100) > floor  # finite-sample bias: fewer samples, larger distance


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
    assert set(report) == {"fd_digits", "diversity", "accuracy"}
    # FD of identical statistics: 0 up to the square roots of the 9 null eigenvalues of S^2
    # (dead ReLU features), each <= sqrt(64 eps64) * lambda_max(S) = 1.2e-7 * 190 = 2.3e-5
    # (measured -5e-6, clipped to 0; LAPACK's rounding may give either sign): 2 * 9 * 2.3e-5
    assert report["fd_digits"] == pytest.approx(0, abs=4e-4)
