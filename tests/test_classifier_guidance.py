"""reference.classifier_guidance: scale 0 is the unguided sampler, the classifier gradient
against finite differences and a closed form, the guided-eps formula, apply_classifier_guidance,
the benchmark's rows (each method on the clipped ODE), its aims, its options' one-line errors and
its quick result."""

from __future__ import annotations

from typing import Any

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


def test_scale_selection_and_first_reaching() -> None:
    res = {("cg", s, 20): {"accuracy": a} for s, a in [(0.0, 0.1), (1.0, 0.85), (2.0, 0.93)]}
    assert cg.pick_scale(res, "cg", (0.0, 1.0, 2.0), 20, 0.9) == 2.0
    assert cg.pick_scale(res, "cg", (0.0, 1.0, 2.0), 20, 0.99) == 2.0  # most accurate
    flat = {("cfg", w, 20): {"accuracy": 0.5} for w in (1.0, 2.0, 3.0)}
    assert cg.pick_scale(flat, "cfg", (1.0, 2.0, 3.0), 20, 0.9) == 3.0  # guiding, largest tie
    assert cg.first_reaching({5: 0.6, 10: 0.91, 20: 0.95}, 0.9) == 10
    assert cg.first_reaching({5: 0.6}, 0.9) is None
    with pytest.raises(ValueError, match="guidance scale must be >= 0"):
        cg.classifier_guided_eps_fn(lambda x, t, y: x, _Linear(), torch.ones(10), -1.0)


class _Models:
    """The two networks of `study.Models`, built from their zoo configs (random weights)."""

    def __init__(self) -> None:
        from reference import zoo

        torch.manual_seed(0)
        self.unet = zoo.SPECS["teacher"].build_model().eval()
        self.classifier = zoo.SPECS["noisy_classifier"].build_model().eval()
        self.alphas_cumprod = zoo.teacher_scheduler().alphas_cumprod

    def guidance(self, scale: float) -> cg.ClassifierGuidanceConfig:
        return cg.ClassifierGuidanceConfig(self.classifier, self.alphas_cumprod, scale)


def test_every_row_solves_the_clipped_ode_with_its_own_noise_prediction() -> None:
    """(1)-(4) of the rows module: each method is ``ode.solve`` with the noise prediction it
    names; the same-cost control is classifier-free guidance at its scale (not w = 1), the
    unguided row feeds the null class, and every row counts one evaluation per step."""
    from reference.classifier_guidance.rows import Sampler
    from reference.harness import class_labels, model_eps_fn, ode

    models = _Models()
    sampler = Sampler(models)
    noise = torch.randn(4, 1, 16, 16, generator=torch.Generator().manual_seed(2))
    y, eps = class_labels(4), model_eps_fn(models.unet)
    expected = {
        ("conditional", 1.0): ode.solve(eps, noise, steps=3, labels=y),
        ("unguided", 0.0): ode.solve(eps, noise, steps=3),
        ("classifier-free-guidance", 2.0): ode.solve(eps, noise, steps=3, labels=y,
                                                      guidance_scale=2.0),
        ("cfg-same-cost", 2.0): ode.solve(eps, noise, steps=3, labels=y, guidance_scale=2.0),
        ("classifier-guidance", 3.0): ode.solve(
            cg.apply_classifier_guidance(models.unet, models.guidance(3.0)), noise, steps=3,
            labels=y),
    }  # fmt: skip
    for (method, scale), want in expected.items():
        got, nfe = sampler.run(method, scale, 3, noise, y)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6, msg=method)
        assert nfe == 3
    cond, guided = expected[("conditional", 1.0)], expected[("classifier-free-guidance", 2.0)]
    assert (cond - guided).abs().max() > 1e-3  # the scale reaches the sampler


def test_the_declared_rows_aims_and_headline() -> None:
    cfg = bench.FULL
    flops = {"uncond": 100.0, "cg": 125.0, "cfg": 200.0}
    c = bench.comparison(cfg, None, flops, matched=31)
    rows = {v.id: v for v in c.variants}
    curves = [f"{m}{n}" for n in (2, 5, 10, 20) for m in ("ddim", "cg-2-nfe", "cfg-1.5-nfe")]
    assert list(rows) == [
        "ddim50", "uncond", "cg-1", "cg-2", "cg-4", "cfg-1.5", "cfg-2", "cfg-3", "cfg-matched",
        *curves,
    ]  # fmt: skip
    assert c.baseline == "ddim50" and rows["uncond"].role == "reference"
    assert {v.id for v in c.variants if v.timed} == {"ddim50", "cg-2", "cfg-1.5", "cfg-matched"}
    assert rows["cfg-matched"].config == {"method": "cfg-same-cost", "scale": 1.5, "steps": 31}
    assert rows["cfg-matched"].facts == {"gflops": pytest.approx(200.0 * 31 / 1e9)}
    assert rows["uncond"].score is not None and rows["cg-2"].score is None
    assert [(a.id, a.row, a.against, a.kind) for a in c.aims] == [
        ("accuracy", "cg-2", None, "value"),
        ("beats-unguided", "cg-2", "uncond", "ratio"),
        ("accuracy-vs-same-cost", "cg-2", "cfg-matched", "difference"),
        ("quality-vs-same-cost", "cg-2", "cfg-matched", "ratio"),
    ]
    assert c.aims[3].params["cfg_steps"] == 31
    assert c.headline.row == "cg-2" and c.headline.limit == pytest.approx(0.8)


def test_the_unguided_row_is_scored_without_its_targets() -> None:
    from reference.classifier_guidance.rows import unguided_score
    from reference.harness.scores import held_out_score

    x = torch.rand(20, 1, 16, 16, generator=torch.Generator().manual_seed(0)) * 2 - 1
    mine, guided = unguided_score(20)(x, {}), held_out_score(20)(x, {})
    assert set(mine) == {"fd_digits", "diversity"}
    assert mine["fd_digits"] == pytest.approx(guided["fd_digits"], rel=1e-9)  # no labels in it


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cg-scale", "3"], "--cg-scale 3.0 is not one of --cg-scales"),
        (["--cfg-scale", "2.5"], "--cfg-scale 2.5 is not one of --cfg-scales"),
        (["--cg-scales", "0,2"], "--cg-scales"),  # s = 0 is the unguided row
        (["--cfg-scales", "1,2"], "--cfg-scales"),  # w = 1 is the baseline
        (["--nfe-grid", "50"], "--nfe-grid"),  # the main steps
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),
        (["--seeds", "0"], "--seeds"),
        (["--repeats", "0"], "--repeats"),
    ],
)
def test_bad_options_are_one_line_before_any_model_loads(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "_measured", lambda cfg: pytest.fail("the benchmark started"))
    assert message in refused_in_one_line("reference.classifier_guidance", args)


def test_same_cost_steps_match_the_flops_of_classifier_guidance() -> None:
    from reference.harness.scores import MAX_REAL_N

    flops = {"uncond": 123.0, "cg": 148.0, "cfg": 247.0}
    assert cg.matched_steps(20, flops) == 12  # 20 * 148 / 247 = 11.98
    assert cg.matched_steps(1, flops) == 1  # never zero steps
    full = bench.FULL
    assert full.n_quality == 140 <= MAX_REAL_N and full.seeds == (0, 1, 2, 3, 4)
    assert full.repeats >= 15 and bench.BASELINE == "ddim50"
    for cfg in (bench.FULL, bench.QUICK, bench.DEMO):
        cfg.validate()


@pytest.mark.slow
def test_quick_benchmark_judges_guidance_against_a_same_cost_control(quick_result) -> None:
    from reference.harness.integrity import check_result

    result = quick_result("classifier-guidance")
    assert check_result(result, "classifier-guidance") == []
    rows = {r["id"]: r for r in result["rows"]}
    assert list(rows) == [
        "ddim50", "uncond", "cg-2", "cfg-1.5", "cfg-matched", "ddim2", "cg-2-nfe2", "cfg-1.5-nfe2",
        "real",
    ]  # fmt: skip
    seeds = result["settings"]["seeds"]
    for r in rows.values():
        if r["id"] != "real":
            assert len(r["seeds"]["fd_digits"]) == len(seeds)
    assert "accuracy" not in rows["uncond"]["values"] and "accuracy" in rows["cg-2"]["values"]
    head, same = rows[result["headline"]["row"]], rows["cfg-matched"]
    assert (
        head["id"] == "cg-2" and same["config"]["steps"] == result["settings"]["matched_cfg_steps"]
    )
    for r in (head, same):  # timed, with their intervals
        assert {"latency_ms", "speedup", "gflops"} <= set(r["values"])
        assert "speedup" in r["intervals"]
    aims = {a["id"]: a for a in result["aims"]}
    assert list(aims) == ["accuracy", "beats-unguided", "accuracy-vs-same-cost",
                          "quality-vs-same-cost"]  # fmt: skip
    diffs = [
        a - b for a, b in zip(head["seeds"]["accuracy"], same["seeds"]["accuracy"], strict=True)
    ]
    assert aims["accuracy-vs-same-cost"]["measured"] == pytest.approx(sum(diffs) / len(diffs))
    assert result["headline"]["limit_kind"] == "estimate"
    notes = [n["id"] for n in result["notes"]]
    assert {"quality-protocol", "held-out-reference", "same-cost", "headline-scales"} <= set(notes)
    assert rows["real"]["config"]["n"] == result["settings"]["n_quality"]
