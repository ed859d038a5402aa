"""The digits data and the shared sampling loop (no trained model needed)."""

from __future__ import annotations

import pytest
import torch

from reference.data import NULL_CLASS, load_digits_tensors
from reference.harness.sampling import class_labels, count_nfe, make_noise, sample
from reference.zoo import teacher_scheduler


def test_split_sizes_ranges_and_balance() -> None:
    x, y = load_digits_tensors("train")
    xt, yt = load_digits_tensors("test")
    assert x.shape == (1497, 1, 16, 16) and xt.shape == (300, 1, 16, 16)
    assert x.dtype == torch.float32 and y.dtype == torch.int64
    assert x.min() >= -1.0 and x.max() <= 1.0
    assert all(29 <= c <= 31 for c in torch.bincount(yt).tolist())  # stratified
    x8, _ = load_digits_tensors("test", size=8)
    assert x8.shape == (300, 1, 8, 8)
    # exact: v / 8 - 1 of integers 0..16 is a short binary fraction, undone without rounding
    assert torch.equal(x8 * 8 + 8, (x8 * 8 + 8).round())  # original 0..16 intensities


def test_loader_returns_independent_copies() -> None:
    a, _ = load_digits_tensors("test")
    a.zero_()
    b, _ = load_digits_tensors("test")
    assert b.abs().sum() > 0


def test_bad_split_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        load_digits_tensors("validation")  # type: ignore[arg-type]


def test_noise_is_seeded_and_nested() -> None:
    # exact: the same seeded generator stream, copied into tensors (no arithmetic)
    assert torch.equal(make_noise(5, seed=3), make_noise(5, seed=3))
    assert torch.equal(make_noise(8, seed=3)[:5], make_noise(5, seed=3))
    assert not torch.equal(make_noise(5, seed=3), make_noise(5, seed=4))
    assert make_noise(2, 0, (4, 4, 4)).shape == (2, 4, 4, 4)
    assert class_labels(12).tolist() == [*range(10), 0, 1]


def toy_eps(x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A denoiser whose prediction depends on the label (so guidance changes the result)."""
    return 0.1 * x_t + 0.01 * labels.float()[:, None, None, None]


def test_sample_counts_calls_and_rows_and_applies_guidance() -> None:
    noise = make_noise(4, seed=0)
    plain = count_nfe(toy_eps)
    out = sample(plain, teacher_scheduler(), noise, steps=7)
    assert out.shape == noise.shape and out.abs().max() <= 1.0
    assert (plain.nfe, plain.rows) == (7, 28)

    guided = count_nfe(toy_eps)
    labels = class_labels(4)
    out_cfg = sample(guided, teacher_scheduler(), noise, steps=7, labels=labels, guidance_scale=3)
    assert (guided.nfe, guided.rows) == (7, 56)  # one batched call per step, twice the rows
    out_cond = sample(toy_eps, teacher_scheduler(), noise, steps=7, labels=labels)
    assert not torch.allclose(out_cfg, out_cond)


def test_unconditional_sampling_passes_the_null_class() -> None:
    seen: list[torch.Tensor] = []

    def spy(x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        seen.append(labels)
        assert t.shape == (x_t.shape[0],)
        return torch.zeros_like(x_t)

    sample(spy, teacher_scheduler(), make_noise(3, 0), steps=2)
    assert all(torch.equal(lab, torch.full((3,), NULL_CLASS)) for lab in seen)


def test_sample_rejects_guidance_without_labels() -> None:
    with pytest.raises(ValueError, match="needs class labels"):
        sample(toy_eps, teacher_scheduler(), make_noise(2, 0), steps=2, guidance_scale=2.0)


def test_stochastic_schedulers_are_reproducible_by_seed() -> None:
    noise = make_noise(3, seed=0)
    a = sample(toy_eps, teacher_scheduler("DDPMScheduler"), noise, steps=5, seed=1)
    b = sample(toy_eps, teacher_scheduler("DDPMScheduler"), noise, steps=5, seed=1)
    c = sample(toy_eps, teacher_scheduler("DDPMScheduler"), noise, steps=5, seed=2)
    # exact: the same ops on the same inputs and the same seeded noise, in one process
    assert torch.equal(a, b) and not torch.equal(a, c)
