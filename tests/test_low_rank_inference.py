"""reference.low_rank_inference: exact identities of the truncated SVD (full rank reproduces the
layer, Eckart-Young error), activation-aware optimality, rank selection, LoRA merging,
apply_low_rank, the benchmark's option checks, its aims on paired-seed fidelity, its timed-only
comparisons, and the quick benchmark's rows, control, aims and kept curves."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budgets", "1.5"], "--budgets"),
        (["--budgets", "0"], "--budgets"),  # a budget keeps some multiply-adds
        (["--methods", "bogus"], "--methods"),
        (["--budgets", "0.3"], "--headline-budget 0.5 is not one of --budgets"),
        (["--methods", "svd"], "--headline-method asvd is not one of --methods"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),  # class-balanced samples
        (["--lora-rank", "97"], "--lora-rank"),  # the layer is 96 wide
        (["--seeds", "1,1"], "--seeds"),
        (["--steps", "0"], "--steps"),
    ],
)
def test_bad_options_are_one_line_before_any_model_loads(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.low_rank_inference import bench

    monkeypatch.setattr(bench, "prepare", lambda cfg: pytest.fail("a model was loaded"))
    assert message in refused_in_one_line("reference.low_rank_inference", args)


def test_the_fewer_steps_control_spends_the_headlines_sampling_flops() -> None:
    from reference.low_rank_inference.measure import control_steps

    assert control_steps(50, 0.508) == 25
    assert control_steps(3, 0.508) == 2
    assert control_steps(3, 0.01) == 1


def test_the_aims_judge_the_fidelity_on_paired_seeds() -> None:
    from reference.harness.compare import judge
    from reference.harness.seeds import SeedTable
    from reference.low_rank_inference.bench import FULL, sampling_aims

    aims = sampling_aims(FULL, control_steps=25)
    assert [(a.id, a.row, a.against, a.metric) for a in aims] == [
        ("quality", "asvd-0.5", "dense", "rms_to_solution"),
        ("beats-fewer-steps", "asvd-0.5", "control", "rms_to_solution"),
    ]
    q = SeedTable((0, 1, 2))
    # per seed: the factorisation moves samples 1.5x as far from the solution as the dense DiT
    # (within the 2x of the triangle inequality) but farther than the fewer-steps control
    per_seed = [(0.010, 0.015, 0.012), (0.012, 0.018, 0.014), (0.011, 0.0165, 0.013)]
    for dense, head, control in per_seed:
        for key, rms in (("dense", dense), ("asvd-0.5", head), ("control", control)):
            q.add(key, {"rms_to_solution": rms})
    judged = {a.id: judge(a, q, None, {}) for a in aims}
    assert judged["quality"].state == "met" and judged["beats-fewer-steps"].state == "missed"
    # the ratio is the geometric mean of the per-seed ratios, 1.5 on every seed (to rounding)
    assert judged["quality"].measured == pytest.approx(1.5, rel=1e-9)
    assert judged["quality"].params == {"budget": 0.5}
    assert judged["beats-fewer-steps"].params == {"steps": 50, "control_steps": 25}


def _tiny_run() -> SimpleNamespace:
    """One Linear layer, dense and factorised at rank 2, and a LoRA contrast around another."""
    from reference.low_rank_inference.measure import LoRAContrast, Model

    torch.manual_seed(9)
    dense = nn.Sequential(nn.Linear(16, 16))
    small, _ = lr.apply_low_rank(dense, lr.LowRankConfig(("0",), rank=2, method="svd"))
    models = [
        Model("dense", {"method": "dit-dense", "steps": 4}, "baseline", dense, 4),
        Model("svd-0.5", {"method": "svd", "budget": 0.5, "steps": 4}, "technique", small, 4, 0.5),
        Model("control", {"method": "dit-fewer-steps", "steps": 2}, "control", dense, 2),
    ]
    base = nn.Linear(16, 24)
    adapter = lr.LoRALinear(base, rank=2)
    layers = {"lora-dense": base, "lora-adapter": adapter, "lora-merged": adapter.merged()}
    lora = LoRAContrast(2, layers, torch.randn(8, 16), {k: 1.0 for k in layers}, 0.0)
    return SimpleNamespace(models=models, names=["0"], inputs={"0": torch.randn(8, 16)}, lora=lora)


def test_layers_and_lora_are_timed_only_comparisons_with_their_own_baselines() -> None:
    from dataclasses import replace

    from reference.harness.compare import measure
    from reference.low_rank_inference.bench import QUICK
    from reference.low_rank_inference.timed import layers, lora

    cfg, run = replace(QUICK, headline_method="svd"), _tiny_run()
    lay, lo = measure(layers(cfg, run, "svd-0.5")), measure(lora(cfg, run))
    rows = {r.id: r for r in [*lay.rows, *lo.rows]}
    assert list(rows) == [
        "layers-dense",
        "layers-svd-0.5",
        "lora-dense",
        "lora-adapter",
        "lora-merged",
    ]  # the control has the dense layers: it is not timed again
    assert rows["layers-dense"].config == {"method": "dit-dense-layers"}
    assert rows["layers-svd-0.5"].config == {"method": "svd-layers", "budget": 0.5}
    assert rows["lora-merged"].config == {"method": "lora-merged", "rank": 2}
    assert [r.role for r in lo.rows] == ["baseline", "reference", "reference"]
    assert all(not r.seeds and "speedup" in r.values for r in rows.values())  # nothing sampled
    assert rows["lora-merged"].values["max_abs_diff"] == 0.0
    assert lo.latency is not None and lo.latency.repeats == 5 * 5  # max(repeats, 5) * 5
    (aim,) = lay.aims
    assert (aim.id, aim.row, aim.against) == ("layers-speedup", "layers-svd-0.5", "layers-dense")
    assert aim.measured == rows["layers-svd-0.5"].values["speedup"]


@pytest.mark.slow
def test_quick_result_judges_the_fidelity_beside_fdd_and_keeps_the_curves(quick_result) -> None:
    result = quick_result("low-rank-inference")
    rows = {r["id"]: r for r in result["rows"]}
    assert set(rows) == {
        *("dense", "svd-0.5", "asvd-0.5", "control"),
        *("layers-dense", "layers-svd-0.5", "layers-asvd-0.5"),
        *("lora-dense", "lora-adapter", "lora-merged", "real"),
    }
    seeds = result["settings"]["seeds"]
    for key in ("dense", "svd-0.5", "asvd-0.5", "control"):
        per_seed = rows[key]["seeds"]
        assert {"rms_to_solution", "fd_digits", "kid_digits", "accuracy"} <= set(per_seed)
        assert {len(v) for v in per_seed.values()} == {len(seeds)}
    assert rows["real"]["config"]["n"] == result["settings"]["n_quality"]
    # the control is timed in the sampling comparison and spends the headline's FLOPs
    control, dense, head = rows["control"], rows["dense"], rows["asvd-0.5"]
    assert control["rounds"]["against"] == "dense" and "speedup" in control["intervals"]
    flops = head["values"]["gflops"] / dense["values"]["gflops"]
    k = max(1, round(result["settings"]["steps"] * flops))
    assert control["config"]["steps"] == k == control["values"]["nfe"]
    for key, pair in (("layers-asvd-0.5", "layers-dense"), ("lora-merged", "lora-dense")):
        assert rows[key]["rounds"]["against"] == pair
    aims = {a["id"]: a for a in result["aims"]}
    assert {k: (a["row"], a["against"]) for k, a in aims.items()} == {
        "quality": ("asvd-0.5", "dense"),
        "beats-fewer-steps": ("asvd-0.5", "control"),
        "layers-speedup": ("layers-asvd-0.5", "layers-dense"),
    }
    rms_h, rms_c = head["seeds"]["rms_to_solution"], control["seeds"]["rms_to_solution"]
    logs = [math.log(a / b) for a, b in zip(rms_h, rms_c, strict=True)]
    assert aims["beats-fewer-steps"]["measured"] == pytest.approx(math.exp(sum(logs) / len(logs)))
    headline = result["headline"]
    assert headline["row"] == "asvd-0.5" and headline["quality_metric"] == "rms_to_solution"
    assert headline["limit_kind"] == "estimate"
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "latency-protocol", "same-ode", "fewer-steps-control"} <= set(notes)
    # the error-against-rank curves, from which the site draws the figure per language: the
    # quoted error at each layer's break-even rank is read off its curve (percent of a fraction)
    curves = notes["break-even-error"]
    assert curves["series"] == ["q-svd", "q-asvd", "ff-svd", "ff-asvd"]
    assert curves["ranks"] == list(range(1, 96)) and {len(e) for e in curves["errors"]} == {95}
    for short in ("q", "ff"):
        r = curves[f"{short}_rank"]
        for method in ("svd", "asvd"):
            errors = curves["errors"][curves["series"].index(f"{short}-{method}")]
            assert curves[f"{short}_{method}"] == pytest.approx(100 * errors[r - 1], rel=1e-12)
    # activation-aware truncation minimises the output error on the calibration inputs (for C
    # plus a ridge of 1e-6 of its mean diagonal, which moves the errors by about that relative
    # amount): at the break-even rank it is below plain SVD's (about 4x below in the last run)
    for short in ("q", "ff"):
        assert curves[f"{short}_asvd"] < curves[f"{short}_svd"]
