"""reference.conv_fusion: the BN fold against torch's own fusion APIs, the fx rewrite's
invariants, the GroupNorm counter-example, Q/K/V fusion in a diffusers U-Net, apply_conv_fusion
the benchmark configuration's checks, and the quick benchmark's exactness check and estimated
limit."""

from __future__ import annotations

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


def test_bench_config_rejects_bad_options_with_one_line() -> None:
    from dataclasses import replace

    from reference.conv_fusion.bench import FULL, flag

    for change, message in (
        ({"batches": (0,)}, r"--batches must be >= 1, got \[0\]"),
        ({"depth": 2}, "--depth must be >= 3, got 2"),
        ({"repeats": 0}, "--repeats must be >= 1, got 0"),
        ({"headline_batch": 7}, "--headline-batch 7 is not one of --batches"),
    ):
        with pytest.raises(ValueError, match=message) as info:
            replace(FULL, **change).validate()
        assert "\n" not in str(info.value)
    FULL.validate()
    assert flag("no") is False and flag("YES") is True
    assert FULL.repeats >= 15 and FULL.warmup >= 1


@pytest.mark.slow
def test_quick_benchmark_checks_exactness_and_labels_its_limit_an_estimate(quick_result) -> None:
    result = quick_result("conv-fusion")
    rows = {r["id"]: r for r in result["rows"]}
    # fusion is exact: quality is the max-abs difference, no sampling metric, no seeds
    assert "fd_digits" not in result["metrics"]
    for row in rows.values():
        assert "seeds" not in row
        if row["role"] == "technique" and row["values"].get("max_abs_diff") is not None:
            assert row["values"]["max_abs_diff"] <= cf.TOLERANCE
            assert "speedup" in row["intervals"]
    # the limit comes from isolated timings of the removed work: an estimate, never a bound
    head = result["headline"]
    assert head["limit_kind"] == "estimate" and result["anomalies"] == []
    assert head["speedup_limit"] == rows[head["row"]]["values"]["speedup_limit"]
    speed = {a["id"]: a for a in result["aims"]}["speedup"]
    assert speed["interval"] == head["speedup_interval"]
    assert (
        speed["row"] == head["row"] and speed["against"] == head["row"][: -len("fused")] + "eager"
    )
