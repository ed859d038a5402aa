"""Techniques that rewrite the network, on diffusers' six production classes (tiny shapes):
low rank, projection fusion, regional compilation and structured pruning."""

from __future__ import annotations

import copy
import types
from typing import Any

import pytest
import torch
from torch import nn

from reference.conv_fusion.production import (
    FusionConfig,
    SharedProjection,
    apply_fusion,
)
from reference.harness import count_flops
from reference.harness.production import UnsupportedModel
from reference.low_rank_inference.factorize import break_even_rank
from reference.low_rank_inference.production import (
    LowRankConfig,
    apply_low_rank,
    eligible_layers,
)
from reference.pruning.production import (
    StructuredPruningConfig,
    apply_structured_pruning,
    stand_in_loss,
)
from reference.tpu_deployment.production import (
    RegionalCompileConfig,
    apply_regional_compile,
    repeated_blocks,
)
from reference.zoo.shapes import KINDS, config, example_inputs, tiny

U32 = 2.0**-24
"""Unit roundoff of float32."""
U64 = 2.0**-53
"""Unit roundoff of float64."""


def run(model: nn.Module, inputs: dict[str, Any]) -> torch.Tensor:
    with torch.no_grad():
        return model(**inputs)[0]


def as_double(inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v
        for k, v in inputs.items()
    }


def params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def flops(model: nn.Module, inputs: dict[str, Any]) -> int:
    with torch.no_grad():
        return count_flops(lambda: model(**inputs))


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def same_state(model: nn.Module, state: dict[str, torch.Tensor]) -> bool:
    now = model.state_dict()
    return now.keys() == state.keys() and all(torch.equal(now[k], state[k]) for k in state)


def float32_error(kind: str, inputs: dict[str, Any], reference: torch.Tensor) -> float:
    """``max |f32(x) - f64(x)|`` of the original model: the size of one float32 evaluation
    order's rounding error on these inputs."""
    exact = run(tiny(kind).double(), as_double(inputs))
    return float((reference.double() - exact).abs().max())


# --------------------------------------------------------------------------- low rank


@pytest.mark.parametrize("kind", KINDS)
def test_low_rank_at_full_rank_reproduces_the_model_in_float64(kind: str) -> None:
    model = tiny(kind).double()
    inputs = as_double(example_inputs(model, batch=2))
    before = run(model, inputs)
    full = LowRankConfig(rank_fraction=1.0, min_features=1, savings_only=False)
    widest = max(max(m.weight.flatten(1).shape) for m in eligible_layers(model, full).values())
    with apply_low_rank(model, full) as applied:
        assert applied.state["ranks"] and max(applied.state["errors"].values()) < 1e-12
        after = run(model, inputs)
        layers = len(applied.state["ranks"])
    # Nothing is truncated: each pair carries only the float64 SVD's backward error,
    # ~ n u64 ||W|| for an n-wide matrix view; counting every factorised layer's error as if
    # all of them added up at the output bounds the model's deviation by layers * n * u64.
    scale = float(before.abs().max())
    assert float((after - before).abs().max()) <= layers * widest * U64 * scale
    assert torch.equal(run(model, inputs), before)


@pytest.mark.parametrize("name", ["conv_in", "down_blocks.0.attentions.0.proj_in"])
def test_low_rank_full_rank_layer_within_float32_rounding(name: str) -> None:
    model = tiny("unet2d-condition")
    layer = model.get_submodule(name)
    x = torch.randn(2, layer.in_channels, 8, 8, generator=torch.Generator().manual_seed(1))
    full = LowRankConfig(rank_fraction=1.0, min_features=1, savings_only=False)
    with apply_low_rank(model, full):
        pair = model.get_submodule(name)
        with torch.no_grad():
            dense, factored = layer(x), pair(x)
            # Bound of the float32 pair against the dense layer: factors rounded from float64
            # (u each), products of inner length n = in k k and r: |dy| <= (n + r + 2) u
            # (|B| |A| + |W|) |x| elementwise (Higham, inner products, gamma_n ~ n u).
            a, b = pair.first, pair.second
            absolute = nn.functional.conv2d(
                nn.functional.conv2d(x.abs(), a.weight.abs(), None, a.stride, a.padding),
                b.weight.abs(),
            ) + nn.functional.conv2d(x.abs(), layer.weight.abs(), None, 1, layer.padding)
    n = layer.weight[0].numel()
    bound = (n + pair.rank + 2) * U32 * absolute
    assert bool(((factored - dense).abs() <= bound).all())


@pytest.mark.parametrize("kind", KINDS)
def test_low_rank_saves_parameters_and_flops_and_removes_exactly(kind: str) -> None:
    model = tiny(kind)
    inputs = example_inputs(model, batch=1)
    before, state = run(model, inputs), snapshot(model)
    params0, flops0 = params(model), flops(model, inputs)
    cfg = LowRankConfig(rank_fraction=0.25, min_features=4)
    originals = dict(eligible_layers(model, cfg))
    applied = apply_low_rank(types.SimpleNamespace(unet=model) if kind == "unet2d" else model, cfg)
    ranks = applied.state["ranks"]
    assert ranks and all(r <= break_even_rank(originals[n]) for n, r in ranks.items())
    assert params(model) < params0 and flops(model, inputs) < flops0
    assert run(model, inputs).shape == before.shape
    applied.remove()
    assert all(model.get_submodule(n) is layer for n, layer in originals.items())
    assert same_state(model, state) and torch.equal(run(model, inputs), before)


def test_low_rank_default_leaves_square_layers_dense() -> None:
    # (3): at rank n/2 a square n x n layer costs as much factorised as dense.
    model = tiny("dit")
    applied = apply_low_rank(model, LowRankConfig(min_features=4))
    assert "transformer_blocks.0.attn1.to_q" in applied.state["dense"]
    assert "transformer_blocks.0.ff.net.2" in applied.state["ranks"]  # 64 -> 16, rectangular
    applied.remove()


def test_low_rank_refuses_and_validates_before_changing() -> None:
    with pytest.raises(UnsupportedModel, match=r"^low-rank inference does not support Sequential"):
        apply_low_rank(nn.Sequential(nn.Linear(64, 64)))
    model = tiny("dit")
    state = snapshot(model)
    with pytest.raises(ValueError, match="rank_fraction"):
        apply_low_rank(model, LowRankConfig(rank_fraction=0.0))
    assert same_state(model, state)


# --------------------------------------------------------------------------- fusion


@pytest.mark.parametrize("kind", KINDS)
def test_fusion_agrees_within_float32_reordering_and_removes_exactly(kind: str) -> None:
    model = tiny(kind)
    inputs = example_inputs(model, batch=2)
    before, state = run(model, inputs), snapshot(model)
    flops0 = flops(model, inputs)
    projections = {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    target = types.SimpleNamespace(transformer=model) if kind == "dit" else model  # a pipeline
    applied = apply_fusion(target, FusionConfig(qkv=True, norm=False))
    assert applied.model is model and applied.state["fused"]
    after = run(model, inputs)
    # Each fused output entry is the same length-d dot product as before, possibly summed in
    # another order: one more float32 evaluation order of the same function. Its distance to
    # the exact (float64) output is of the size of the original's, e = |f32 - f64|, so the two
    # float32 outputs differ by at most ~2e; 4e leaves room for an order that rounds worse.
    assert float((after - before).abs().max()) <= 4 * float32_error(kind, inputs, before)
    # Every fused product is computed once per call: a part recomputing it would add FLOPs.
    assert flops(model, inputs) == flops0
    applied.remove()
    now = {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    assert now.keys() == projections.keys() and all(now[n] is m for n, m in projections.items())
    assert same_state(model, state) and torch.equal(run(model, inputs), before)


FUSED_BY_DIFFUSERS = {"fused_qkv": "to_qkv", "fused_kv": "to_kv", "fused_added_qkv": "to_added_qkv"}


@pytest.mark.parametrize("kind", ["unet2d-condition", "pixart", "sd3", "flux"])
def test_fusion_matches_diffusers_fuse_qkv_projections(kind: str) -> None:
    model = tiny(kind)
    inputs = example_inputs(model, batch=2)
    theirs = copy.deepcopy(model)
    theirs.fuse_qkv_projections()
    with apply_fusion(model, FusionConfig(qkv=True, norm=False)) as applied:
        compared = 0
        for name in applied.state["fused"]:
            ours, other = model.get_submodule(name), theirs.get_submodule(name)
            for slot, their_slot in FUSED_BY_DIFFUSERS.items():
                if hasattr(ours, slot):
                    mine, ref = getattr(ours, slot).linear, getattr(other, their_slot)
                    assert torch.equal(mine.weight, ref.weight)
                    assert (mine.bias is None) == (ref.bias is None)
                    assert mine.bias is None or torch.equal(mine.bias, ref.bias)
                    compared += 1
        assert compared >= len(applied.state["fused"])
        # Same fused weights, same products, same slices: the same arithmetic, bit for bit.
        assert torch.equal(run(model, inputs), run(theirs, inputs))


def test_fusion_folds_the_groupnorm_affine_of_unet2d_attention() -> None:
    model = tiny("unet2d")
    inputs = example_inputs(model, batch=2)
    before, state = run(model, inputs), snapshot(model)
    norms = {n: m for n, m in model.named_modules() if isinstance(m, nn.GroupNorm)}
    with apply_fusion(model) as applied:
        folded = applied.state["norm_folded"]
        assert len(folded) == 4 and all(
            model.get_submodule(n).group_norm.affine is False for n in folded
        )
        after = run(model, inputs)
        # The fold (3) is computed in float64 and rounded once: the folded projections are
        # another float32 evaluation of the same function, as in the fusion test.
        assert float((after - before).abs().max()) <= 4 * float32_error("unet2d", inputs, before)
    assert all(model.get_submodule(n) is m for n, m in norms.items())
    assert same_state(model, state) and torch.equal(run(model, inputs), before)


def test_fusion_refuses_a_model_that_is_not_a_production_class() -> None:
    with pytest.raises(UnsupportedModel, match=r"^projection fusion does not support Sequential"):
        apply_fusion(nn.Sequential(nn.Linear(4, 4)))
    with pytest.raises(UnsupportedModel, match=r"^dict is neither a model nor a pipeline"):
        apply_fusion({})


def test_fusion_part_on_another_input_recomputes() -> None:
    torch.manual_seed(0)
    layers = [nn.Linear(6, 4), nn.Linear(6, 4, bias=False)]
    shared = SharedProjection(layers)
    x, y = torch.randn(3, 6), torch.randn(3, 6)
    with torch.no_grad():
        assert torch.allclose(shared.part(x, 0), layers[0](x), atol=1e-6)
        assert torch.allclose(shared.part(y, 1), layers[1](y), atol=1e-6)  # not x's slice
        assert torch.allclose(shared.part(y, 0), layers[0](y), atol=1e-6)
        assert torch.allclose(shared.part(y, 0), layers[0](y), atol=1e-6)  # taken: recomputed


# --------------------------------------------------------------------------- regional compile

BLOCK_CLASSES = {
    "unet2d": {"ResnetBlock2D": 8, "Attention": 4},
    "unet2d-condition": {"ResnetBlock2D": 8, "Transformer2DModel": 4},
    "dit": {"BasicTransformerBlock": 2},
    "pixart": {"BasicTransformerBlock": 2},
    "sd3": {"JointTransformerBlock": 2},
    "flux": {"FluxTransformerBlock": 1, "FluxSingleTransformerBlock": 1},
}


@pytest.mark.parametrize("kind", KINDS)
def test_regional_compile_is_exact_on_each_class_and_removes(kind: str) -> None:
    model = tiny(kind)
    inputs = example_inputs(model, batch=2)
    before = run(model, inputs)
    blocks = repeated_blocks(model)
    target = types.SimpleNamespace(transformer=model) if kind == "pixart" else model
    applied = apply_regional_compile(target, RegionalCompileConfig(backend="eager"))
    assert applied.model is model and applied.state["classes"] == BLOCK_CLASSES[kind]
    assert all("forward" in vars(b) for b in blocks.values())
    # The eager backend runs the captured ATen calls as they are: bit for bit.
    assert torch.equal(run(model, inputs), before)
    applied.remove()
    assert not any("forward" in vars(b) for b in blocks.values())
    assert torch.equal(run(model, inputs), before)


def test_regional_compile_compiles_a_repeated_block_once_and_is_exact() -> None:
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    from diffusers import DiTTransformer2DModel

    model = DiTTransformer2DModel(**{**config("dit"), "num_layers": 4}).eval()
    inputs = example_inputs(model, batch=2)
    before = run(model, inputs)
    torch._dynamo.reset()
    counters.clear()
    with apply_regional_compile(model, RegionalCompileConfig(backend="eager")):
        compiled = run(model, inputs)
        again = run(model, inputs)
    # Four blocks, two graphs: the first block's input comes from the patch embedding's
    # transpose (other strides), blocks 2-4 share one graph. No recompilation on the second call.
    assert counters["stats"]["unique_graphs"] == 2
    # The eager backend runs the captured ATen calls as they are: bit for bit.
    assert torch.equal(compiled, before) and torch.equal(again, before)
    assert torch.equal(run(model, inputs), before)


def test_regional_compile_checks_backend_and_mode_before_any_work() -> None:
    model = tiny("dit")
    with pytest.raises(ValueError, match=r"^unknown torch.compile backend 'nope'; known: .*eager"):
        apply_regional_compile(model, RegionalCompileConfig(backend="nope"))
    with pytest.raises(ValueError, match="inductor backend only"):
        apply_regional_compile(model, RegionalCompileConfig(backend="eager", mode="max-autotune"))
    assert not any("forward" in vars(b) for b in repeated_blocks(model).values())
    with pytest.raises(UnsupportedModel, match=r"^regional compilation does not support Linear"):
        apply_regional_compile(nn.Linear(2, 2), RegionalCompileConfig(backend="eager"))


# --------------------------------------------------------------------------- structured pruning


@pytest.mark.parametrize("kind", ["dit", "pixart", "sd3", "flux"])
def test_structured_pruning_refuses_transformers_with_the_reason(kind: str) -> None:
    model = tiny(kind)
    name = type(model).__name__
    with pytest.raises(
        UnsupportedModel,
        match=rf"^structured pruning does not support {name}; supported: UNet2DModel, "
        r"UNet2DConditionModel \(.*DepGraph",
    ):
        apply_structured_pruning(model, StructuredPruningConfig(importance="l1"))


def test_structured_pruning_shrinks_a_copy_of_the_conditional_unet() -> None:
    model = tiny("unet2d-condition")
    inputs = example_inputs(model, batch=1)
    before, state = run(model, inputs), snapshot(model)
    pruned = apply_structured_pruning(
        types.SimpleNamespace(unet=model), StructuredPruningConfig(ratio=0.3, importance="l1")
    )
    assert pruned is not model
    assert params(pruned) < params(model) and flops(pruned, inputs) < flops(model, inputs)
    assert run(pruned, inputs).shape == before.shape
    assert run(pruned, example_inputs(pruned, batch=2)).shape[0] == 2
    assert pruned.conv_out.out_channels == model.conv_out.out_channels
    assert same_state(model, state) and torch.equal(run(model, inputs), before)


def test_structured_pruning_at_ratio_zero_changes_nothing() -> None:
    model = tiny("unet2d-condition")
    inputs = example_inputs(model, batch=2)
    pruned = apply_structured_pruning(model, StructuredPruningConfig(ratio=0.0, importance="l1"))
    assert params(pruned) == params(model)
    assert torch.equal(run(pruned, inputs), run(model, inputs))


def test_structured_pruning_taylor_uses_the_calibration_loss() -> None:
    model = tiny("unet2d")
    state = snapshot(model)
    calls: list[int] = []
    stand_in = example_inputs(model, batch=2)

    def loss(m: nn.Module) -> torch.Tensor:
        calls.append(1)
        return m(**stand_in)[0].square().mean()

    cfg = StructuredPruningConfig(ratio=0.3, calibration=loss, calibration_steps=3)
    pruned = apply_structured_pruning(model, cfg)
    assert len(calls) == 3 and params(pruned) < params(model)
    assert all(p.grad is None for p in pruned.parameters())
    assert all(p.grad is None for p in model.parameters()) and same_state(model, state)
    # Without a calibration callable: the diffusion loss (1)-(2) on Gaussian stand-in data.
    stand_in_value = stand_in_loss(batch=2, t_max=1000, seed=0)(model)
    assert stand_in_value.ndim == 0 and bool(torch.isfinite(stand_in_value))
