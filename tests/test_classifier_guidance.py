"""reference.classifier_guidance: scale 0 is the unguided sampler, the classifier gradient
against finite differences and a closed form, the guided-eps formula, apply_classifier_guidance,
the headline-scale rules and the benchmark options' one-line errors."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from reference import classifier_guidance as cg
from reference.classifier_guidance import bench


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
    # float64 central differences, h = 1e-6: rounding eps64 * |f| / h ~ 1e-9, truncation
    # h^2 |f'''| ~ 1e-12; measured 6e-10, so atol 1e-8 holds on any CPU
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
    # float64 softmax of a k=16 matmul, two orders of ops: ~16 eps64 * |x||W| ~ 1e-14 apart
    assert torch.allclose(out, torch.cos(x) - sigma * 2.5 * grad, atol=1e-10)
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
    # exact by construction: the denoiser sees the same input and the null class both times,
    # and eps - sigma * (0 * grad) subtracts an exact zero
    assert torch.equal(x_cg, x_plain)
    strong = cg.classifier_guided_eps_fn(model_eps_fn(unet), clf, abar, 50.0)
    x_strong = sample(strong, zoo.teacher_scheduler(), noise, steps=3, labels=class_labels(4))
    assert (x_strong - x_plain).abs().max() > 1e-2


def test_apply_classifier_guidance_wraps_a_model_like_the_eps_fn_form() -> None:
    from reference import zoo
    from reference.harness import class_labels, model_eps_fn

    torch.manual_seed(0)
    unet = zoo.SPECS["teacher"].build_model().eval()
    clf = zoo.SPECS["noisy_classifier"].build_model().eval()
    abar = zoo.teacher_scheduler().alphas_cumprod
    x = torch.randn(4, 1, 16, 16, generator=torch.Generator().manual_seed(5))
    t, y = torch.full((4,), 700), class_labels(4)
    config = cg.ClassifierGuidanceConfig(clf, abar, scale=3.0)
    ours = cg.apply_classifier_guidance(unet, config)(x, t, y)
    ref = cg.classifier_guided_eps_fn(model_eps_fn(unet), clf, abar, 3.0)(x, t, y)
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)


def test_scale_selection_and_nfe_to_target() -> None:
    res = {("cg", s, 20): {"accuracy": a} for s, a in [(0.0, 0.1), (1.0, 0.85), (2.0, 0.93)]}
    assert cg.pick_scale(res, "cg", (0.0, 1.0, 2.0), 20, 0.9) == 2.0
    assert cg.pick_scale(res, "cg", (0.0, 1.0, 2.0), 20, 0.99) == 2.0  # most accurate
    flat = {("cfg", w, 20): {"accuracy": 0.5} for w in (1.0, 2.0, 3.0)}
    assert cg.pick_scale(flat, "cfg", (1.0, 2.0, 3.0), 20, 0.9) == 3.0  # guiding, largest tie
    assert cg.first_reaching({5: 0.6, 10: 0.91, 20: 0.95}, 0.9) == 10
    assert cg.first_reaching({5: 0.6}, 0.9) is None
    assert math.isclose(bench.FULL.target_accuracy, 0.9)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cg_scales": (-1.0, 0.0, 2.0)}, "--cg-scales must be >= 0"),
        ({"cg_scales": (1.0, 2.0)}, "--cg-scales must include 0 (the unguided row)"),
        ({"cg_scales": (0.0,)}, "--cg-scales needs a scale above 0"),
        ({"cfg_scales": (2.0, 3.0)}, "--cfg-scales must include 1 (the conditional row)"),
        ({"cfg_scales": (1.0, 2.0, 2.0)}, "--cfg-scales repeats a scale"),
        ({"steps": 0}, "--steps must be >= 1, got 0"),
        ({"samples": 5}, "--samples must be >= 20 (two per class), got 5"),
        ({"nfe_grid": (0, 2)}, "--nfe-grid must be >= 1"),
        ({"repeats": 0}, "--repeats must be >= 1, got 0"),
        ({"seeds": (3,)}, "--seeds needs at least 2 distinct non-negative seeds"),
    ],
)
def test_bad_options_give_one_clear_error(change: dict, message: str) -> None:
    import dataclasses

    with pytest.raises(ValueError) as info:
        dataclasses.replace(bench.FULL, **change).validate()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    bench.FULL.validate()
    bench.QUICK.validate()
    bench.DEMO.validate()


def test_command_line_rejects_a_bad_option_before_any_work(capsys) -> None:
    from reference.harness.cli import main

    with pytest.raises(SystemExit) as info:
        main("reference.classifier_guidance", ["--bench", "--repeats", "0"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("error: --repeats must be >= 1, got 0") and "\n" not in err
    with pytest.raises(ValueError, match="guidance scale must be >= 0"):
        cg.classifier_guided_eps_fn(lambda x, t, y: x, _Linear(), torch.ones(10), -1.0)


def test_same_cost_steps_match_the_flops_of_classifier_guidance() -> None:
    flops = {"uncond": 123.0, "cg": 148.0, "cfg": 247.0}
    assert cg.matched_steps(20, flops) == 12  # 20 * 148 / 247 = 11.98
    assert cg.matched_steps(1, flops) == 1  # never zero steps
    assert bench.FULL.samples == 256 and len(bench.FULL.seeds) >= 5 and bench.FULL.repeats >= 15


@pytest.mark.slow
def test_quick_benchmark_judges_guidance_against_a_same_cost_control(quick_result) -> None:
    result = quick_result("classifier-guidance")
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    seeds = result["settings"]["seeds"]
    for r in rows.values():
        if r["role"] != "reference":
            assert len(r["seeds"]["fd_digits"]) == len(seeds)
    head, same = rows[result["headline"]["row"]], rows["cfg-matched"]
    assert same["role"] == "control" and same["config"]["method"] == "cfg-same-cost"
    assert same["config"]["steps"] == result["settings"]["matched_cfg_steps"]
    for r in (head, same):  # timed, with their intervals
        assert {"latency_ms", "speedup", "gflops"} <= set(r["values"])
        assert "speedup" in r["intervals"]
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"accuracy", "quality", "accuracy-vs-same-cost", "quality-vs-same-cost"}
    assert all(a["interval"] is not None for a in aims.values())
    assert aims["quality-vs-same-cost"]["params"]["cfg_steps"] == same["config"]["steps"]
    for key in ("accuracy-vs-same-cost", "quality-vs-same-cost"):
        assert (aims[key]["row"], aims[key]["against"]) == (head["id"], "cfg-matched")
    diffs = [
        a - b for a, b in zip(head["seeds"]["accuracy"], same["seeds"]["accuracy"], strict=True)
    ]
    assert aims["accuracy-vs-same-cost"]["measured"] == pytest.approx(sum(diffs) / len(diffs))
    assert result["headline"]["limit_kind"] == "estimate"
    assert result["headline"]["quality_interval"] is not None
    notes = {n["id"] for n in result["notes"]}
    assert {
        "quality-protocol",
        "same-cost",
        "scales-in-sample",
    } <= notes and "fdd-at-n" not in notes
    assert rows["real"]["config"]["n"] == result["settings"]["samples"]
