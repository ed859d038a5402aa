"""reference.low_rank_inference: exact identities of the truncated SVD (full rank reproduces the
layer, Eckart-Young error), activation-aware optimality, rank selection, LoRA merging,
apply_low_rank, the benchmark configuration's checks and the quick benchmark's timed control and
paired-seed aims."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from reference import low_rank_inference as lr


@pytest.mark.parametrize("whitened", [False, True])
def test_full_rank_reproduces_linear_and_conv(whitened: bool) -> None:
    torch.manual_seed(0)
    lin = nn.Linear(24, 40)
    conv = nn.Conv2d(6, 10, 3, stride=2, padding=1)
    x = torch.randn(16, 24)
    xc = torch.randn(3, 6, 9, 9)
    for layer, inp in ((lin, x), (conv, xc)):
        c = lr.input_second_moment(inp, layer) if whitened else None
        f = lr.factorize_layer(layer, lr.max_rank(layer), lr.spectrum(layer, c))
        with torch.no_grad():
            assert (f(inp) - layer(inp)).abs().max() <= 1e-5
    # the conv factor pair has the documented shape: k x k to r channels, then 1 x 1
    f = lr.factorize_layer(conv, 4)
    assert isinstance(f, lr.LowRankConv2d)
    assert f.first.weight.shape == (4, 6, 3, 3) and f.first.stride == (2, 2)
    assert f.second.weight.shape == (10, 4, 1, 1) and f.second.bias is not None


def test_truncation_error_is_the_eckart_young_tail() -> None:
    torch.manual_seed(1)
    lin = nn.Linear(30, 20, bias=False)
    spec = lr.spectrum(lin)
    for r in (1, 5, 12):
        f = lr.factorize_layer(lin, r, spec)
        w_r = f.second.weight @ f.first.weight
        rel = float((lin.weight - w_r).detach().norm() / lin.weight.detach().norm())
        assert rel == pytest.approx(spec.error_at(r), rel=1e-4)
        assert torch.linalg.matrix_rank(w_r.detach()) == r


def test_activation_aware_svd_is_exact_on_low_dimensional_inputs() -> None:
    # Inputs in an 8-dimensional subspace: rank 8 suffices for the outputs (whitened), while
    # plain SVD, blind to the inputs, keeps a large error at that rank.
    torch.manual_seed(2)
    lin = nn.Linear(64, 64)
    x = torch.randn(500, 8) @ torch.randn(8, 64)
    c = lr.input_second_moment(x, lin)
    with torch.no_grad():
        target = lin(x) - lin.bias
        plain = lr.factorize_layer(lin, 8, lr.spectrum(lin))(x) - lin.bias
        aware = lr.factorize_layer(lin, 8, lr.spectrum(lin, c))(x) - lin.bias
    assert float((aware - target).norm() / target.norm()) < 1e-4
    assert float((plain - target).norm() / target.norm()) > 0.3


def test_calibrated_second_moment_matches_the_direct_formula() -> None:
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    batches = [torch.randn(4, 2, 5), torch.randn(6, 2, 5)]

    def run(m: nn.Module) -> None:
        for b in batches:
            m(b)

    moments = lr.calibrate_second_moments(model, ["0", "2"], run)
    x = torch.cat([b.reshape(-1, 5) for b in batches]).double()
    assert torch.allclose(moments["0"], x.T @ x / len(x), atol=1e-10)
    h = torch.tanh(model[0](torch.cat([b.reshape(-1, 5) for b in batches]))).double()
    assert torch.allclose(moments["2"], h.T @ h / len(h), atol=1e-6)


def test_energy_threshold_and_budget_rank_selection() -> None:
    s = torch.tensor([4.0, 2.0, 1.0, 1.0])  # energies 16, 4, 1, 1 of 22
    spec = lr.Spectrum(torch.eye(4), s, torch.eye(4))
    assert lr.rank_for_energy(spec, 16 / 22) == 1
    assert lr.rank_for_energy(spec, 0.9) == 2  # 20/22 = 0.909
    assert lr.rank_for_energy(spec, 1.0) == 4
    with pytest.raises(ValueError, match="energy threshold"):
        lr.rank_for_energy(spec, 0.0)
    # Two layers of equal cost: the budget goes to the layer whose spectrum decays slowly.
    flat = lr.Spectrum(torch.eye(4), torch.ones(4), torch.eye(4))
    ranks = lr.ranks_for_budget({"a": spec, "b": flat}, {"a": (4, 4), "b": (4, 4)}, budget=0.75)
    cost = sum(r * 8 for r in ranks.values())
    assert cost <= 0.75 * 32
    assert ranks["b"] > ranks["a"] >= 1


def test_plan_keeps_layers_above_break_even_dense() -> None:
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 64))
    assert lr.break_even_rank(model[0]) == 7 and lr.break_even_rank(model[2]) == 12
    plan, specs = lr.plan_factorization(model, ["0", "2"], rank=10)
    assert plan.ranks == {"2": 10} and plan.dense == ["0"]
    new = lr.apply_plan(model, plan, specs)
    assert isinstance(new[2], lr.LowRankLinear) and isinstance(new[0], nn.Linear)
    assert plan.params_kept(model) == pytest.approx((256 + 10 * 80) / (256 + 1024))
    with pytest.raises(ValueError, match=r"rank must be in 1\.\.16"):
        lr.plan_factorization(model, ["0"], rank=17)
    with pytest.raises(ValueError, match="exactly one"):
        lr.plan_factorization(model, ["0"], rank=2, budget=0.5)


def test_merged_lora_equals_the_adapter_and_costs_the_dense_layer() -> None:
    from reference.harness import count_flops

    torch.manual_seed(5)
    base = nn.Linear(32, 48)
    lora = lr.LoRALinear(base, rank=4, alpha=8.0)
    with torch.no_grad():
        lora.lora_b.normal_()  # a trained-looking adapter (B starts at zero)
    merged = lora.merged()
    x = torch.randn(10, 32)
    with torch.no_grad():
        # float32: W'x and Wx + s B(Ax) sum k = 32 + 4 (+ bias) products in other orders; each is
        # within k * eps32 / 2 of the exact sum of |terms|, so they differ by <= k * eps32 * that
        # (~2e-4 for outputs of ~11; measured 3e-6, 1e-5 was only ~4x that on this CPU)
        terms = (
            x.abs() @ (base.weight.abs() + lora.scaling * lora.lora_b.abs() @ lora.lora_a.abs()).T
        )
        bound = 37 * torch.finfo(torch.float32).eps * float((terms + base.bias.abs()).max())
        assert (merged(x) - lora(x)).abs().max() <= bound
        assert (merged(x) - base(x)).abs().max() > 1e-2  # the adapter did change the layer
    assert count_flops(merged, x) == count_flops(base, x) == 2 * 10 * 32 * 48
    assert count_flops(lora, x) == 2 * 10 * 32 * 48 + 2 * 10 * 4 * (32 + 48)
    with pytest.raises(ValueError, match="LoRA rank"):
        lr.LoRALinear(base, rank=33)


@pytest.mark.slow
def test_dit_full_rank_factorisation_reproduces_the_model() -> None:
    from reference.zoo.specs import DIT_CONFIG, build_dit

    torch.manual_seed(6)
    dit = build_dit(DIT_CONFIG).eval()
    names = lr.dit_target_layers(dit)
    assert len(names) == 6 * DIT_CONFIG["num_layers"]
    plan, specs = lr.plan_factorization(dit, names, energy=1.0)
    assert set(plan.ranks) == set(names)  # full rank is kept even above break-even
    fact = lr.apply_plan(dit, plan, specs)
    x, t, y = torch.randn(2, 1, 16, 16), torch.tensor([3, 700]), torch.tensor([2, 10])
    with torch.no_grad():
        a = dit(x, t, class_labels=y).sample
        b = fact(x, t, class_labels=y).sample
    assert (a - b).abs().max() <= 1e-4


@pytest.mark.parametrize("whitened", [False, True])
def test_closed_form_output_error_matches_direct_computation(whitened: bool) -> None:
    torch.manual_seed(7)
    lin = nn.Linear(12, 9)
    x = torch.randn(300, 12) @ torch.randn(12, 12)
    c = lr.input_second_moment(x, lin)
    spec = lr.spectrum(lin, c if whitened else None)
    curve = lr.output_error_curve(lin, c, spec)
    assert len(curve) == 9 and curve[-1] == pytest.approx(0.0, abs=1e-6)
    with torch.no_grad():
        target = lin(x) - lin.bias
        for r in (1, 4, 8):
            out = lr.factorize_layer(lin, r, spec)(x) - lin.bias
            direct = float((out - target).norm() / target.norm())
            assert curve[r - 1] == pytest.approx(direct, rel=1e-3, abs=1e-6)


def test_apply_low_rank_follows_its_config() -> None:
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 64))
    x = torch.randn(200, 16)
    moments = lr.calibrate_second_moments(model, ["0", "2"], lambda m: m(x))
    cfg = lr.LowRankConfig(("0", "2"), rank=10, method="svd")
    new, plan = lr.apply_low_rank(model, cfg)
    assert plan.ranks == {"2": 10} and plan.dense == ["0"]
    assert isinstance(new[2], lr.LowRankLinear) and isinstance(model[2], nn.Linear)
    full = lr.LowRankConfig(("0", "2"), energy=1.0, method="asvd")
    exact, _ = lr.apply_low_rank(model, full, moments)
    with torch.no_grad():
        assert torch.allclose(exact(x), model(x), atol=1e-4)
    with pytest.raises(ValueError, match="needs second_moments"):
        lr.apply_low_rank(model, full)
    with pytest.raises(ValueError, match="exactly one"):
        lr.apply_low_rank(model, lr.LowRankConfig(("0",), rank=2, budget=0.5, method="svd"))


def test_bench_config_rejects_bad_options_with_one_line() -> None:
    from dataclasses import replace

    from reference.low_rank_inference.bench import FULL

    for change, message in (
        ({"budgets": (1.5,)}, r"--budgets must be in \(0, 1\], got \[1.5\]"),
        ({"steps": 0}, "--steps must be >= 1, got 0"),
        ({"repeats": 0}, "--repeats must be >= 1, got 0"),
        ({"methods": ("bogus",)}, "--methods: unknown 'bogus'"),
        ({"budgets": (0.3,)}, "--headline-budget 0.5 is not one of --budgets"),
        ({"lora_rank": 0}, "--lora-rank must be in 1..96"),
        ({"seeds": (1, 1)}, "--seeds needs at least 2 distinct"),
    ):
        with pytest.raises(ValueError, match=message) as info:
            replace(FULL, **change).validate()
        assert "\n" not in str(info.value)
    FULL.validate()
    from reference.harness.seeds import N_QUALITY, SEEDS

    assert FULL.n_eval == N_QUALITY and FULL.seeds == SEEDS
    assert FULL.repeats >= 15 and FULL.warmup >= 1


def test_the_fewer_steps_control_spends_the_headlines_sampling_flops() -> None:
    from reference.low_rank_inference.measure import control_steps

    assert control_steps(20, 0.508) == 10
    assert control_steps(3, 0.508) == 2
    assert control_steps(3, 0.01) == 1


@pytest.mark.slow
def test_quick_benchmark_times_the_control_and_judges_on_paired_seeds(quick_result) -> None:
    result = quick_result("low-rank-inference")
    rows = {r["id"]: r for r in result["rows"]}
    seeds = result["settings"]["seeds"]
    samplers = [k for k, r in rows.items() if "fd_digits" in r["values"] and k != "real"]
    assert set(samplers) == {"dense", "svd-0.5", "asvd-0.5", "control"}
    for key in samplers:
        assert len(rows[key]["seeds"]["fd_digits"]) == len(seeds)
        assert {"fd_digits", "kid_digits"} <= set(rows[key]["intervals"])
    assert rows["real"]["role"] == "reference"
    assert rows["real"]["config"]["n"] == result["settings"]["n_eval"]
    # the control is timed in the same comparison as the technique, not copied
    control, dense = rows["control"], rows["dense"]
    assert control["role"] == "control" and "speedup" in control["intervals"]
    assert control["values"]["latency_ms"] != dense["values"]["latency_ms"]
    k = control["config"]["steps"]
    head = rows["asvd-0.5"]
    flops = head["values"]["gflops"] / dense["values"]["gflops"]
    assert k == max(1, round(result["settings"]["steps"] * flops)) == control["values"]["nfe"]
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"layers-speedup", "quality", "beats-fewer-steps"}
    assert {a["row"] for a in aims.values()} == {"asvd-0.5"}
    assert aims["beats-fewer-steps"]["against"] == "control"
    for a in aims.values():
        assert a["interval"] is not None and a["interval"][0] <= a["measured"] <= a["interval"][1]
    fd_h, fd_c = head["seeds"]["fd_digits"], control["seeds"]["fd_digits"]
    logs = [math.log(a / b) for a, b in zip(fd_h, fd_c, strict=True)]
    assert aims["beats-fewer-steps"]["measured"] == pytest.approx(math.exp(sum(logs) / len(logs)))
    headline = result["headline"]
    assert headline["row"] == "asvd-0.5" and headline["limit_kind"] == "estimate"
    assert headline["quality_interval"] is not None
    notes = {n["id"] for n in result["notes"]}
    assert {"quality-protocol", "latency-protocol", "fewer-steps-control"} <= notes
    assert not any(n.startswith(("fdd-at-n", "matched-time")) for n in notes)
