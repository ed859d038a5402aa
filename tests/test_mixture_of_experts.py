"""reference.mixture_of_experts: dense equivalence at k = E without capacity, the Switch
load-balancing loss on a hand-computed case, capacity dropping the right tokens, timestep
experts, the benchmark's configuration checks."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from reference import mixture_of_experts as moe


def test_top_k_equal_to_all_experts_without_capacity_is_the_weighted_sum() -> None:
    torch.manual_seed(0)
    layer = moe.MoEFeedForward(dim=12, hidden=24, num_experts=4, k=4, capacity_factor=None)
    x = torch.randn(2, 5, 12)
    with torch.no_grad():
        out = layer(x)
        tokens = x.reshape(-1, 12)
        probs = torch.softmax(layer.router(tokens), dim=-1)
        dense = sum(probs[:, e, None] * ex(tokens) for e, ex in enumerate(layer.experts))
    assert torch.allclose(out.reshape(-1, 12), dense, atol=1e-5, rtol=1e-5)
    assert bool(layer.last_routing.kept.all())


def test_load_balancing_loss_on_a_hand_computed_case() -> None:
    probs = torch.tensor([[0.7, 0.3], [0.4, 0.6], [0.9, 0.1]])
    first = probs.argmax(-1)  # experts 0, 1, 0
    # f = (2/3, 1/3), P = (2/3, 1/3): E * sum f P = 2 * (4/9 + 1/9) = 10/9
    assert float(moe.load_balancing_loss(probs, first)) == pytest.approx(10 / 9)
    uniform = torch.full((4, 4), 0.25)
    assert float(moe.load_balancing_loss(uniform, torch.arange(4))) == pytest.approx(1.0)
    collapsed = torch.tensor([[1.0, 0.0]] * 3)
    # exact: one-hot probabilities give f = P = (1, 0), means of exact ones and zeros
    assert float(moe.load_balancing_loss(collapsed, torch.zeros(3, dtype=torch.long))) == 2.0


def test_capacity_keeps_first_choices_in_token_order_then_second_choices() -> None:
    assert moe.expert_capacity(8, 4, 1, 1.0) == 2
    assert moe.expert_capacity(8, 4, 2, 1.25) == 5
    assert moe.expert_capacity(8, 4, 2, None) == 8
    top1 = torch.tensor([[0], [0], [1], [0]])
    assert moe.capacity_mask(top1, 2, capacity=2).squeeze(1).tolist() == [True, True, True, False]
    top2 = torch.tensor([[0, 1], [0, 1], [1, 0]])
    # rank 0: t0->0, t1->0, t2->1 all fit; rank 1: t0->1 fits (2nd slot), t1->1 and t2->0 drop
    assert moe.capacity_mask(top2, 2, capacity=2).tolist() == [
        [True, True],
        [True, False],
        [True, False],
    ]


def test_dropped_tokens_get_no_expert_output() -> None:
    torch.manual_seed(1)
    layer = moe.MoEFeedForward(dim=6, hidden=8, num_experts=2, k=1, capacity_factor=0.5)
    with torch.no_grad():
        layer.router.weight.zero_()
        layer.router.weight[0, 0] = 10.0  # every token with x[0] > 0 prefers expert 0
        x = torch.randn(8, 6).abs()  # all prefer expert 0; capacity = ceil(0.5 * 8 / 2) = 2
        out = layer(x)
        kept = layer.last_routing.kept.squeeze(1)
        expected = layer.last_routing.gates[:2] * layer.experts[0](x[:2])
    assert layer.last_routing.capacity == 2
    assert kept.tolist() == [True, True] + [False] * 6
    assert torch.allclose(out[:2], expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(out[2:], torch.zeros(6, 6))  # exact: dropped rows are never written


def test_bad_top_k_and_capacity_raise() -> None:
    with pytest.raises(ValueError, match=r"top-k must be in 1\.\.3"):
        moe.MoEFeedForward(4, 8, num_experts=3, k=4)
    with pytest.raises(ValueError, match="capacity_factor must be > 0"):
        moe.expert_capacity(8, 2, 1, 0.0)


def test_timestep_experts_pick_by_noise_level_without_a_router() -> None:
    torch.manual_seed(2)
    layer = moe.TimestepExpertFeedForward(dim=6, hidden=8, boundaries=(500,))
    x = torch.randn(4, 3, 6)
    t = torch.tensor([0, 499, 500, 999])
    assert layer.expert_index(t).tolist() == [0, 0, 1, 1]
    with torch.no_grad():
        mixed = layer(x, t)
        rows = [layer.experts[int(i)](x[j]) for j, i in enumerate(layer.expert_index(t))]
        one_t = layer(x, torch.full((4,), 800))
    assert torch.allclose(mixed, torch.stack(rows), atol=1e-5, rtol=1e-5)
    assert torch.equal(one_t, layer.experts[1](x))  # exact: one timestep calls that expert on x


@pytest.mark.parametrize(
    ("ffn", "extra"),
    [
        ("dense", {}),
        ("moe", {"num_experts": 4, "top_k": 1, "capacity_factor": None}),
        ("timestep", {"boundaries": [500]}),
    ],
)
def test_tiny_dit_shapes_and_equal_flops_per_token(ffn: str, extra: dict) -> None:
    from reference.mixture_of_experts import active_parameters, flops_per_token

    torch.manual_seed(3)
    dense = moe.TinyDiT(ffn="dense", dim=24, depth=2, heads=2, mlp_hidden=48)
    model = moe.TinyDiT(ffn=ffn, dim=24, depth=2, heads=2, mlp_hidden=48, **extra)
    x = torch.randn(3, 1, 16, 16)
    (eps,) = model(x, torch.tensor([10, 500, 900]), class_labels=torch.tensor([0, 5, 10]))
    assert eps.shape == x.shape
    # active parameters equal the dense model's (plus the router for MoE) ...
    router = 24 * 4 * 2 if ffn == "moe" else 0
    assert active_parameters(model) == active_parameters(dense) + router
    # ... and so do the FLOPs per token, up to the router's d x E product per token and layer
    assert flops_per_token(model) == pytest.approx(flops_per_token(dense) + 2 * router, rel=1e-9)
    if ffn == "moe":
        assert 0.0 < float(model.aux_loss()) <= 4.0  # E * sum f P lies in (0, E]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "0"], "--steps"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),  # class-balanced samples
        (["--seeds", "0"], "--seeds"),
        (["--repeats", "0"], "--repeats"),
    ],
)
def test_bad_options_are_one_line_before_any_model_loads(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.mixture_of_experts import bench

    monkeypatch.setattr(bench, "_load", lambda name: pytest.fail("a model was loaded"))
    assert message in refused_in_one_line("reference.mixture_of_experts", args)


def test_rows_are_language_neutral_configurations() -> None:
    from reference.mixture_of_experts.bench import MODELS, row_config

    assert [row_config(n)["method"] for n in MODELS] == [
        "dense-ffn",
        "dense-ffn-wide",
        "sparse-moe",
        "timestep-experts",
    ]
    assert row_config("moe_sparse") == {"method": "sparse-moe", "experts": 8, "top_k": 1}
    assert row_config("moe_dense_wide") == {"method": "dense-ffn-wide", "hidden": 1536}


def test_the_wide_control_holds_the_moe_parameters_at_eight_times_its_flops() -> None:
    from reference.harness.cost import count_parameters
    from reference.mixture_of_experts.accounting import flops_per_token
    from reference.mixture_of_experts.zoo_specs import CONFIGS, build

    wide, sparse = build(CONFIGS["moe_dense_wide"]), build(CONFIGS["moe_sparse"])
    assert count_parameters(wide) == pytest.approx(count_parameters(sparse), rel=0.005)
    assert flops_per_token(wide) > 4 * flops_per_token(sparse)


def test_both_sides_of_the_claim_are_judged_on_paired_intervals() -> None:
    from reference.harness.compare import judge
    from reference.harness.cost import LatencyComparison, _stats
    from reference.harness.seeds import SeedTable
    from reference.mixture_of_experts.bench import AIMS

    ids = ("dense", "dense_wide", "sparse", "timestep")
    q = SeedTable((0, 1, 2))
    # per seed: the MoE beats the small dense model clearly and is within 10% of the wide one
    for dense, wide, sparse in [(10.0, 8.0, 8.4), (11.0, 8.5, 8.9), (9.0, 7.5, 7.9)]:
        for name, fd in zip(ids, (dense, wide, sparse, dense), strict=True):
            q.add(name, {"fd_digits": fd})
    rounds = [1.0, 1.1, 0.9, 1.05]
    times = {"dense": 1.0, "dense_wide": 3.0, "sparse": 1.6, "timestep": 1.0}
    stats = {n: _stats([t * r for r in rounds]) for n, t in times.items()}
    speed = {n: 1.0 / t for n, t in times.items()}
    lat = LatencyComparison("dense", stats, speed, threads=2, repeats=4, warmup=0)
    states = {a.id: judge(a, q, lat, {}).state for a in AIMS}
    assert states == {
        "quality-vs-dense": "met",
        "quality-vs-wide": "met",
        "speedup-vs-wide": "met",
        "speedup": "missed",  # 1/1.6 = 0.63x, below 1/1.15 in every round
    }


def test_quick_result_keeps_each_blocks_expert_shares_for_the_figure(quick_result) -> None:
    from reference.mixture_of_experts.zoo_specs import CONFIGS

    result = quick_result("mixture-of-experts")
    params = next(n["params"] for n in result["notes"] if n["id"] == "utilisation")
    shares = params["shares"]
    sparse = CONFIGS["moe_sparse"]
    assert len(shares) == sparse["depth"] and {len(s) for s in shares} == {sparse["num_experts"]}
    for block in shares:
        assert min(block) >= 0.0
        # each share is a float32 count ratio (relative error 2**-24 each, 8 of them) written
        # as a float; their sum is 1 to well within 1e-5
        assert sum(block) == pytest.approx(1.0, abs=1e-5)
    # the note's busiest-expert share is the largest of the kept shares, in percent
    assert params["max_share"] == pytest.approx(100 * max(max(s) for s in shares), rel=1e-12)
