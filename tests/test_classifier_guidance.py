"""reference.classifier_guidance: scale 0 is the unguided sampler, the classifier gradient
against finite differences and a closed form, the guided-eps formula, the CLI's errors."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from reference import classifier_guidance as cg


def _tiny_classifier() -> nn.Module:
    from reference.zoo.nets import NoisyDigitsClassifier

    torch.manual_seed(0)
    net = NoisyDigitsClassifier(channels=(8, 8), feature_dim=8, image_size=4, time_dim=8)
    return net.double().eval()


def test_gradient_matches_finite_differences_on_a_tiny_input(monkeypatch) -> None:
    from reference.zoo import nets

    embed = nets.timestep_embedding  # float32 by design; float64 for a sharp finite difference
    monkeypatch.setattr(nets, "timestep_embedding", lambda t, dim: embed(t, dim).double())
    net = _tiny_classifier()
    x = torch.randn(2, 1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    t = torch.tensor([100, 700])
    y = torch.tensor([3, 8])
    auto = cg.log_prob_grad(net, x, t, y)
    numeric = cg.finite_difference_grad(net, x, t, y)
    assert torch.allclose(auto, numeric, rtol=1e-6, atol=1e-8)
    assert not x.requires_grad and auto.abs().max() > 0


class _Linear(nn.Module):
    """logits = W x (time ignored): grad log p(y|x) = W_y - sum_c p_c W_c."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(10, 16, dtype=torch.float64))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return x.flatten(1) @ self.w.T


def test_guided_eps_is_eps_minus_sqrt_one_minus_abar_times_scale_times_grad() -> None:
    torch.manual_seed(2)
    clf = _Linear()
    abar = torch.linspace(0.999, 0.001, 1000, dtype=torch.float64)
    x = torch.randn(3, 1, 4, 4, dtype=torch.float64)
    t = torch.tensor([10, 500, 990])
    y = torch.tensor([0, 4, 9])
    seen = []

    def eps_fn(x_t, tt, labels):
        seen.append(labels.clone())
        return torch.cos(x_t)

    out = cg.classifier_guided_eps_fn(eps_fn, clf, abar, scale=2.5)(x, t, y)
    p = torch.softmax(x.flatten(1) @ clf.w.T, dim=1)
    grad = (clf.w[y] - p @ clf.w).view_as(x).detach()
    sigma = (1 - abar[t]).sqrt().view(-1, 1, 1, 1)
    assert torch.allclose(out, torch.cos(x) - sigma * 2.5 * grad, atol=1e-12)
    assert torch.equal(seen[0], torch.full((3,), 10))  # the denoiser only sees the null class


def test_scale_zero_equals_the_unguided_sampler_exactly() -> None:
    from reference import zoo
    from reference.harness import class_labels, model_eps_fn, sample

    torch.manual_seed(0)
    unet = zoo.SPECS["teacher"].build_model().eval()
    clf = zoo.SPECS["noisy_classifier"].build_model().eval()
    noise = torch.randn(4, 1, 16, 16, generator=torch.Generator().manual_seed(3))
    abar = zoo.teacher_scheduler().alphas_cumprod
    guided = cg.classifier_guided_eps_fn(model_eps_fn(unet), clf, abar, 0.0)
    x_cg = sample(guided, zoo.teacher_scheduler(), noise, steps=3, labels=class_labels(4))
    x_plain = sample(model_eps_fn(unet), zoo.teacher_scheduler(), noise, steps=3)
    assert torch.equal(x_cg, x_plain)
    strong = cg.classifier_guided_eps_fn(model_eps_fn(unet), clf, abar, 50.0)
    x_strong = sample(strong, zoo.teacher_scheduler(), noise, steps=3, labels=class_labels(4))
    assert not torch.equal(x_strong, x_plain)


def test_scale_selection_and_nfe_to_target() -> None:
    res = {("cg", s, 20): {"accuracy": a} for s, a in [(0.0, 0.1), (1.0, 0.85), (2.0, 0.93)]}
    assert cg.pick_scale(res, "cg", (0.0, 1.0, 2.0), 20, 0.9) == 2.0
    assert cg.pick_scale(res, "cg", (0.0, 1.0, 2.0), 20, 0.99) == 2.0  # most accurate
    flat = {("cfg", w, 20): {"accuracy": 0.5} for w in (1.0, 2.0, 3.0)}
    assert cg.pick_scale(flat, "cfg", (1.0, 2.0, 3.0), 20, 0.9) == 3.0  # guiding, largest tie
    assert cg.first_reaching({5: 0.6, 10: 0.91, 20: 0.95}, 0.9) == 10
    assert cg.first_reaching({5: 0.6}, 0.9) is None
    assert math.isclose(cg.BenchConfig().target_accuracy, 0.9)


def test_bad_arguments_give_one_clear_error() -> None:
    with pytest.raises(SystemExit) as info:
        cg.main(["--scale", "-1"])
    assert str(info.value) == "error: guidance scales must be >= 0"
    with pytest.raises(SystemExit) as info:
        cg.main(["--steps", "0"])
    assert str(info.value) == "error: steps must be >= 1"
    with pytest.raises(SystemExit) as info:
        cg.main(["--samples", "5"])
    assert str(info.value) == "error: need at least 20 samples (two per class), got 5"
    with pytest.raises(ValueError, match="guidance scale must be >= 0"):
        cg.classifier_guided_eps_fn(lambda x, t, y: x, _Linear(), torch.ones(10), -1.0)


@pytest.mark.slow
def test_quick_benchmark_produces_a_valid_result(tmp_path, monkeypatch) -> None:
    from reference.harness import validate_result

    monkeypatch.setenv("REFERENCE_RESULTS_DIR", str(tmp_path))
    result = cg.benchmark(quick=True, progress=False)
    assert validate_result(result.to_dict()) == []
    assert result.slug == "classifier-guidance" and result.quick
    assert {r.role for r in result.rows} == {"baseline", "technique", "control", "reference"}
    for fig in result.figures:
        assert (tmp_path / fig).is_file()
