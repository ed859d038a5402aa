"""reference.conv_fusion: the BN fold against torch's own fusion APIs, the fx rewrite's
invariants, the GroupNorm counter-example, Q/K/V fusion in a diffusers U-Net, apply_conv_fusion,
the benchmark's refused options, its rounding tolerance and fidelity figure, one batch of its
declared sweep measured, and the quick benchmark's fidelity aims and measured limit."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.fusion import fuse_conv_bn_weights

from reference import conv_fusion as cf
from reference.zoo.nets import DigitsClassifier


def _randomise_bn(model: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial BatchNorm statistics and affine parameters (fresh ones are 0/1)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.5)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.1)
    return model.eval()


@pytest.mark.parametrize(
    ("conv", "bn", "shape"),
    [
        (nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), (2, 3, 6, 6)),
        (nn.Conv2d(4, 6, 3, stride=2, groups=2), nn.BatchNorm2d(6), (2, 4, 7, 7)),
        (nn.Conv1d(3, 5, 3), nn.BatchNorm1d(5), (2, 3, 9)),
        (nn.Conv3d(2, 4, 1), nn.BatchNorm3d(4), (1, 2, 3, 3, 3)),
    ],
)
def test_fold_matches_torch_fuse_conv_bn_weights_and_the_pair(
    conv: nn.Module, bn: nn.Module, shape: tuple[int, ...]
) -> None:
    torch.manual_seed(0)
    pair = _randomise_bn(nn.Sequential(conv, bn))
    w, b = cf.fold_bn_weights(conv.weight, conv.bias, bn)
    tw, tb = fuse_conv_bn_weights(
        conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    assert cf.max_abs_diff(w, tw) <= 1e-6
    assert cf.max_abs_diff(b, tb) <= 1e-6
    x = torch.randn(shape)
    with torch.no_grad():
        assert cf.max_abs_diff(cf.fold_conv_bn(conv, bn)(x), pair(x)) <= cf.TOLERANCE


def test_fx_rewrite_of_the_classifier_equals_original_and_torch_ao() -> None:
    torch.manual_seed(0)
    model = _randomise_bn(DigitsClassifier())
    fused, report = cf.fuse_conv_bn_relu(model)
    assert report.folded == ["body.0.0", "body.1.0", "body.3.0", "body.4.0"]
    assert report.relu_fused == report.folded
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())
    assert sum(isinstance(m, cf.ConvReLU) for m in fused.modules()) == 4
    x = torch.randn(5, 1, 16, 16)
    with torch.no_grad():
        out = fused(x)
        assert cf.max_abs_diff(out, model(x)) <= cf.TOLERANCE
        assert cf.max_abs_diff(out, cf.fuse_with_torch_ao(model)(x)) <= cf.TOLERANCE
    # the original model is untouched
    assert sum(isinstance(m, nn.BatchNorm2d) for m in model.modules()) == 4


class _Residual(nn.Module):
    """Conv-BN-relu outside any Sequential, a functional ReLU, and a conv whose output is
    also used by a skip connection (must not be folded)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.bn_a = nn.BatchNorm2d(4)
        self.b = nn.Conv2d(4, 4, 3, padding=1)
        self.bn_b = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn_a(self.a(x)))
        y = self.b(h)
        return self.bn_b(y) + y


def test_fx_rewrite_handles_functional_relu_and_skips_shared_outputs() -> None:
    torch.manual_seed(1)
    model = _randomise_bn(_Residual())
    fused, report = cf.fuse_conv_bn_relu(model)
    assert report.folded == ["a"]
    assert report.relu_fused == ["a"]
    assert "b" in report.skipped and "also used" in report.skipped["b"]
    x = torch.randn(2, 3, 5, 5)
    with torch.no_grad():
        assert cf.max_abs_diff(fused(x), model(x)) <= cf.TOLERANCE


def test_fx_rewrite_refuses_training_mode_and_untraceable_models() -> None:
    with pytest.raises(ValueError, match="training mode"):
        cf.fuse_conv_bn_relu(DigitsClassifier().train())

    class DataDependent(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x if x.sum() > 0 else -x

    with pytest.raises(ValueError, match="cannot trace") as info:
        cf.fuse_conv_bn_relu(DataDependent().eval())
    assert "\n" not in str(info.value)


def test_toy_denoiser_fusion_is_exact_and_halves_elementwise_traffic() -> None:
    model = cf.ToyBNDenoiser(width=8, depth=5)
    model = cf.calibrate_batchnorm(model, [torch.randn(16, 1, 16, 16) for _ in range(2)])
    x = torch.randn(4, 1, 16, 16)
    fused, report = cf.fuse_conv_bn_relu(model)
    assert len(report.folded) == 3
    with torch.no_grad():
        assert cf.max_abs_diff(fused(x), model(x)) <= cf.TOLERANCE
    traffic = cf.traffic_estimate(model, x)
    assert traffic.bn_layers == 3
    assert traffic.activation_bytes == 3 * 4 * 8 * 16 * 16 * 4
    assert traffic.saved_bytes == traffic.after_bytes == traffic.before_bytes // 2


def test_calibrated_statistics_are_the_exact_batch_average() -> None:
    bn = nn.Sequential(nn.BatchNorm1d(3))
    batches = [torch.randn(10, 3) * 2 + 1 for _ in range(3)]
    cf.calibrate_batchnorm(bn, batches)
    means = torch.stack([b.mean(0) for b in batches]).mean(0)
    assert torch.allclose(bn[0].running_mean, means, atol=1e-6)
    assert not bn.training


def test_frozen_groupnorm_is_exact_on_its_input_and_wrong_on_another() -> None:
    torch.manual_seed(0)
    gn = nn.GroupNorm(4, 16)
    with torch.no_grad():
        gn.weight.uniform_(0.5, 1.5)
        gn.bias.normal_()
    x1 = torch.randn(1, 16, 6, 6)
    x2 = torch.randn(1, 16, 6, 6) * 3 + 1
    err = cf.groupnorm_fold_error(gn, x1, x2)
    assert err.on_calibration_input < 1e-6
    assert err.on_other_input > 0.1


@pytest.mark.slow
def test_freezing_every_groupnorm_of_a_unet_only_fits_the_calibration_input() -> None:
    from reference.zoo.specs import TEACHER_CONFIG, build_unet

    torch.manual_seed(2)
    unet = build_unet(TEACHER_CONFIG).eval()
    x1, t1, y1 = torch.randn(1, 1, 16, 16), torch.tensor([50]), torch.tensor([3])
    x2, t2, y2 = torch.randn(1, 1, 16, 16) * 0.2, torch.tensor([900]), torch.tensor([7])
    frozen = cf.freeze_groupnorms(unet, lambda m: m(x1, t1, class_labels=y1))
    n_gn = sum(isinstance(m, nn.GroupNorm) for m in unet.modules())
    assert sum(isinstance(m, cf.FrozenGroupNorm) for m in frozen.modules()) == n_gn
    with torch.no_grad():
        ref1, ref2 = unet(x1, t1, class_labels=y1).sample, unet(x2, t2, class_labels=y2).sample
        out1, out2 = frozen(x1, t1, class_labels=y1).sample, frozen(x2, t2, class_labels=y2).sample
    assert float((out1 - ref1).norm() / ref1.norm()) < 1e-5
    assert float((out2 - ref2).norm() / ref2.norm()) > 0.05


@pytest.mark.slow
def test_unet_qkv_and_norm_affine_fusion_equals_original() -> None:
    from reference.zoo.specs import TEACHER_CONFIG, build_unet

    torch.manual_seed(0)
    unet = build_unet(TEACHER_CONFIG).eval()
    with torch.no_grad():  # non-trivial GroupNorm affine, so the fold is exercised
        for m in unet.modules():
            if isinstance(m, nn.GroupNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.2)
    reference = unet.__class__.from_config(unet.config).eval()
    reference.load_state_dict(unet.state_dict())
    blocks = cf.fuse_unet_attention(unet)
    assert blocks == 4
    attn = unet.mid_block.attentions[0]
    assert attn.to_qkv.out_features == 3 * attn.to_q.out_features
    assert not attn.group_norm.affine
    x, t, y = torch.randn(3, 1, 16, 16), torch.tensor([5, 500, 950]), torch.tensor([1, 4, 10])
    with torch.no_grad():
        out = unet(x, t, class_labels=y).sample
        ref = reference(x, t, class_labels=y).sample
    assert cf.max_abs_diff(out, ref) <= cf.TOLERANCE


def test_apply_conv_fusion_follows_its_config() -> None:
    model = cf.make_toy_denoiser(width=8, depth=4)
    x = torch.randn(2, 1, 16, 16)
    fused, report = cf.apply_conv_fusion(model, cf.FusionConfig(fuse_relu=True))
    folded, _ = cf.apply_conv_fusion(model, cf.FusionConfig(fuse_relu=False))
    assert any(isinstance(m, cf.ConvReLU) for m in fused.modules())
    assert not any(isinstance(m, cf.ConvReLU) for m in folded.modules())
    assert not any(isinstance(m, nn.BatchNorm2d) for m in folded.modules())
    with torch.no_grad():
        ref = model(x)
        assert cf.max_abs_diff(fused(x), ref) <= cf.TOLERANCE
        assert cf.max_abs_diff(folded(x), ref) <= cf.TOLERANCE
    assert report is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--headline-batch", "7"], "--headline-batch 7 is not one of --batches"),
        (["--batches", "0"], "--batches"),
        (["--depth", "2"], "--depth"),
        (["--seeds", "0"], "--seeds"),
        (["--compile", "maybe"], "--compile"),
        (["--repeats", "0"], "--repeats"),
    ],
)
def test_bad_options_are_one_line_before_any_network_is_built(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.conv_fusion import bench

    monkeypatch.setattr(bench, "_declared", lambda cfg: pytest.fail("the comparison was built"))
    assert message in refused_in_one_line("reference.conv_fusion", args)


def test_rounding_tolerance_is_layers_times_longest_dot_product_times_u() -> None:
    from reference.conv_fusion.measure import UNIT_ROUNDOFF, rounding_tolerance

    # 5 convolutions; the longest dot product is 8 channels x 3 x 3 = 72 terms
    assert rounding_tolerance(cf.ToyBNDenoiser(width=8, depth=5)) == 5 * 72 * UNIT_ROUNDOFF
    assert UNIT_ROUNDOFF == 2.0**-24


def test_fidelity_passes_a_correct_fold_and_fails_a_wrong_one() -> None:
    from reference.conv_fusion.measure import FIDELITY, deviation, rounding_tolerance

    torch.manual_seed(0)
    model = _randomise_bn(cf.ToyBNDenoiser(width=8, depth=5))
    tolerance = rounding_tolerance(model)
    x = torch.randn(4, 1, 16, 16)
    fused, _ = cf.fuse_conv_bn_relu(model)
    with torch.no_grad():
        eager = model(x)
        right = deviation(fused(x), eager)
        model.body[3].bias[0] += 0.5  # a BatchNorm shift a wrong fold would lose
        wrong = deviation(model(x), eager)
    assert right[FIDELITY] <= tolerance / 10  # rounding cancels: far inside (2)
    assert right["max_abs_diff"] <= cf.TOLERANCE
    assert wrong[FIDELITY] > 100 * tolerance
    assert deviation(eager, eager) == {FIDELITY: 0.0, "max_abs_diff": 0.0}


def test_one_batch_of_the_sweep_declares_its_own_baseline_and_limit() -> None:
    from reference.conv_fusion.measure import limit, sweep_variants, with_fidelity
    from reference.conv_fusion.rows import add_limits
    from reference.harness.compare import Comparison, HeadlineSpec, measure

    torch.manual_seed(0)
    model = cf.make_toy_denoiser(width=4, depth=3)
    variants = with_fidelity(sweep_variants("denoiser", model, 2))
    assert [v.id for v in variants] == [
        "denoiser-b2-eager",
        "denoiser-b2-fold",
        "denoiser-b2-fused",
        "denoiser-b2-elementwise",
        "denoiser-b2-elementwise-fused",
    ]
    assert {v.against for v in variants} == {"denoiser-b2-eager"}
    c = Comparison(
        variants=tuple(variants),
        metrics={},
        score=lambda samples, same_seed: {},
        seeds=(0, 1),
        aims=(),
        headline=HeadlineSpec("denoiser-b2-fused", limit=lambda m: limit(m.latency, "denoiser-b2")),
        repeats=3,
        warmup=0,
    )
    m = measure(c)
    limits = add_limits(m, ["denoiser-b2"])
    rows = {r.id: r for r in m.rows}
    eager, fused = rows["denoiser-b2-eager"], rows["denoiser-b2-fused"]
    assert eager.values["speedup"] == 1.0 and "speedup" not in eager.intervals
    assert eager.seeds["rel_rms_to_eager"] == [0.0, 0.0]
    # a correct fold of 8 floats' worth of channels: within (2) on every seed
    assert max(fused.seeds["rel_rms_to_eager"]) <= 3 * 36 * 2.0**-24
    assert (
        "speedup" in fused.intervals
        and "rel_rms_to_eager" not in rows["denoiser-b2-elementwise"].seeds
    )
    assert fused.values["speedup_limit"] == limits["denoiser-b2"] == m.headline.speedup_limit
    assert fused.values["elementwise_mb"] == eager.values["elementwise_mb"] / 2


@pytest.mark.slow
def test_quick_result_judges_fidelity_and_measures_its_limit(quick_result: Any) -> None:
    from reference.conv_fusion.bench import QUICK

    result = quick_result("conv-fusion")
    rows = {r["id"]: r for r in result["rows"]}
    assert "fd_digits" not in result["metrics"] and "rms_to_solution" not in result["metrics"]
    for b in QUICK.batches:
        for net in ("classifier", "denoiser"):
            eager, fused = rows[f"{net}-b{b}-eager"], rows[f"{net}-b{b}-fused"]
            assert fused["rounds"]["against"] == eager["id"] == eager["rounds"]["against"]
            assert len(fused["seeds"]["rel_rms_to_eager"]) == len(QUICK.seeds)
            assert fused["values"]["speedup_limit"] == eager["values"]["speedup_limit"]
    # the limit comes from the rounds of the removed work: an estimate, never a bound
    head = result["headline"]
    assert head["row"] == f"denoiser-b{QUICK.headline_batch}-fused"
    assert head["limit_kind"] == "estimate" and result["anomalies"] == []
    assert head["speedup_limit"] == rows[head["row"]]["values"]["speedup_limit"]
    aims = {a["id"]: a for a in result["aims"]}
    assert aims["speedup"]["interval"] == head["speedup_interval"]
    for name in ("fidelity-classifier", "fidelity-denoiser", "fidelity-unet"):
        assert aims[name]["state"] == "met", aims[name]
    assert rows["unet-gn-frozen-other"]["values"]["groupnorm_rel_error"] > 0.05
