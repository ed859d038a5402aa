"""reference.pruning: the structured prune keeps GroupNorm groups, attention heads and the
attention temperature consistent, rebuilds from its configuration, really shrinks the model;
unstructured pruning zeroes weights without changing FLOPs; apply_pruning follows its
configuration; the benchmark refuses bad options before any work, declares the trained rows on
the FDD and the one-shot rows with the fidelity beside it; the quick benchmark judges the prune on
paired seeds against the from-scratch and the fewer-steps controls."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn

from reference import pruning as pr
from reference.pruning.structured import _example_inputs, _forward


def _fresh_unet() -> nn.Module:
    from reference.zoo.specs import TEACHER_CONFIG, build_unet

    torch.manual_seed(0)
    return build_unet(TEACHER_CONFIG).eval()


def _tag(unet: nn.Module) -> None:
    """Encode every channel's original index in parameters the L1 criterion ignores:
    GroupNorm gammas (index + 1) and the query biases of the attention blocks."""
    with torch.no_grad():
        for m in unet.modules():
            if isinstance(m, nn.GroupNorm):
                m.weight.copy_(torch.arange(1, m.num_channels + 1, dtype=torch.float32))
        for attn in pr.structured._attention_blocks(unet):
            attn.to_q.bias.copy_(torch.arange(attn.to_q.out_features, dtype=torch.float32))


@pytest.fixture(scope="module")
def half() -> tuple[nn.Module, nn.Module, pr.PruneReport]:
    """A tagged fresh teacher-config U-Net and its 50% L1 prune (shared by several tests)."""
    unet = _fresh_unet()
    _tag(unet)
    pruned, report = pr.prune_unet(unet, 0.5, "l1")
    return unet, pruned, report


def _group_mismatches(unet: nn.Module, pruned: nn.Module) -> dict[str, float]:
    """Per GroupNorm: fraction of kept channels that moved to a different group."""
    old = {
        n: (m.num_groups, m.num_channels)
        for n, m in unet.named_modules()
        if isinstance(m, nn.GroupNorm)
    }
    out = {}
    for name, gn in pruned.named_modules():
        if not isinstance(gn, nn.GroupNorm):
            continue
        groups, channels = old[name]
        assert gn.num_groups == groups and gn.num_channels % groups == 0
        kept = gn.weight.detach().round().long() - 1  # original channel indices
        assert len(set(kept.tolist())) == gn.num_channels
        old_group = kept // (channels // groups)
        new_group = torch.arange(gn.num_channels) // (gn.num_channels // groups)
        out[name] = float((old_group != new_group).float().mean())
    assert len(out) == len(old)
    return out


@pytest.mark.slow
def test_pruning_keeps_groupnorm_groups_and_attention_heads_intact(half) -> None:
    unet, pruned, report = half
    old_heads = pr.head_dims(unet)
    mismatches = _group_mismatches(unet, pruned)
    assert max(mismatches.values()) == 0.0, mismatches  # exact: counts of integer channel tags
    for name, d_old in old_heads.items():
        attn = pruned.get_submodule(name)
        d_new = attn.to_q.out_features // attn.heads
        assert d_new == d_old // 2
        kept = (attn.to_q.bias.detach() / math.sqrt(d_new / d_old)).round().long()
        assert ((kept // d_old) == (torch.arange(attn.to_q.out_features) // d_new)).all()
    assert report.params_after < report.params_before


@pytest.mark.slow
def test_groups_straddling_a_skip_concatenation_are_only_approximately_kept() -> None:
    # A documented limitation of DepGraph's GroupNorm handling (torch_pruning 1.6): when a
    # GroupNorm reads a decoder concatenation whose boundary falls inside one of its groups,
    # a few channels can change group at ratios where the two inputs prune differently.
    unet = _fresh_unet()
    _tag(unet)
    pruned, _ = pr.prune_unet(unet, 0.25, "l1")
    moved = {n: f for n, f in _group_mismatches(unet, pruned).items() if f > 0}
    assert all(n.startswith("up_blocks.") and n.endswith("norm1") for n in moved), moved
    assert all(f <= 0.05 for f in moved.values()), moved


@pytest.mark.slow
def test_pruned_unet_is_smaller_runs_and_rebuilds_from_its_config(half) -> None:
    unet, pruned, report = half
    assert report.config["unet"]["block_out_channels"] == [16, 32, 32]
    assert report.config["unet"]["attention_head_dim"] == 16
    assert report.config["time_proj_dim"] == 32
    assert pr.count_macs(pruned) <= 0.3 * pr.count_macs(unet)
    rebuilt = pr.rebuild(pruned, report.config)
    inputs = _example_inputs(unet)
    with torch.no_grad():
        a, b = _forward(pruned, inputs), _forward(rebuilt, inputs)
    assert a.shape == (2, 1, 16, 16)
    assert torch.allclose(a, b, atol=1e-6)
    # the input model is untouched
    assert unet.conv_in.out_channels == 32


class _OneAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dim_head: int) -> None:
        from diffusers.models.attention_processor import Attention

        super().__init__()
        self.attn = Attention(dim, heads=heads, dim_head=dim_head, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x)


def test_attention_temperature_is_preserved_when_heads_shrink() -> None:
    torch.manual_seed(1)
    full = _OneAttention(dim=8, heads=2, dim_head=4).eval()
    keep = torch.tensor([0, 1, 4, 5])  # first two dimensions of each head
    drop = torch.tensor([2, 3, 6, 7])
    a = full.attn
    with torch.no_grad():  # the dropped dimensions contribute nothing to the original
        for lin in (a.to_q, a.to_k, a.to_v):
            lin.weight[drop] = 0
            lin.bias[drop] = 0
        a.to_out[0].weight[:, drop] = 0
    small = _OneAttention(dim=8, heads=2, dim_head=2).eval()
    b = small.attn
    with torch.no_grad():
        for src, dst in ((a.to_q, b.to_q), (a.to_k, b.to_k), (a.to_v, b.to_v)):
            dst.weight.copy_(src.weight[keep])
            dst.bias.copy_(src.bias[keep])
        b.to_out[0].weight.copy_(a.to_out[0].weight[:, keep])
        b.to_out[0].bias.copy_(a.to_out[0].bias)
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        reference = full(x)
        assert (small(x) - reference).abs().max() > 1e-4  # sdpa uses 1/sqrt(2) now
        pr.sync_diffusers_attributes(small, {"attn": 4})
        assert (small(x) - reference).abs().max() <= 1e-5


def test_unstructured_pruning_zeroes_weights_but_keeps_shapes_and_flops() -> None:
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 6 * 6, 10))
    sparse = pr.magnitude_prune(model, 0.6)
    assert pr.weight_sparsity(model) == 0.0  # exact: a count of zero weights (none yet)
    assert pr.weight_sparsity(sparse) == pytest.approx(0.6, abs=1e-3)
    shapes = {n: p.shape for n, p in model.named_parameters()}
    assert {n: p.shape for n, p in sparse.named_parameters()} == shapes
    assert not any(hasattr(m, "weight_mask") for m in sparse.modules())  # masks folded in
    from reference.harness import count_flops

    x = torch.randn(4, 3, 8, 8)
    assert count_flops(sparse, x) == count_flops(model, x)
    # the smallest-magnitude weights were the ones removed
    w = torch.cat([model[0].weight.flatten(), model[3].weight.flatten()]).abs()
    s = torch.cat([sparse[0].weight.flatten(), sparse[3].weight.flatten()])
    assert w[s == 0].max() <= w[s != 0].min()
    with pytest.raises(ValueError, match="amount"):
        pr.magnitude_prune(model, 1.0)


def test_bad_pruning_arguments_raise_clear_errors() -> None:
    unet = nn.Identity()
    with pytest.raises(ValueError, match=r"ratio must be in \[0, 1\)"):
        pr.prune_unet(unet, 1.0)
    with pytest.raises(ValueError, match="unknown pruning criterion"):
        pr.importance("bogus")


def test_zoo_specs_describe_the_pruned_model_and_its_control() -> None:
    specs = pr.ZOO_SPECS
    assert set(specs) == {"pruned_teacher", "pruned_scratch"}
    ft, sc = specs["pruned_teacher"], specs["pruned_scratch"]
    assert (ft.steps, ft.batch, ft.lr) == (sc.steps, sc.batch, sc.lr)  # the same budget
    assert ft.requires == sc.requires == ("teacher",)
    with pytest.raises(ValueError, match="no 'unet' entry"):
        ft.build_model()


def test_apply_pruning_follows_its_config() -> None:
    torch.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 6 * 6, 10))
    sparse, report = pr.apply_pruning(model, pr.PruningConfig(ratio=0.5, structured=False))
    assert pr.weight_sparsity(sparse) == pytest.approx(0.5, abs=1e-3)
    assert report.params_after == report.params_before  # shapes unchanged
    with pytest.raises(ValueError, match="unknown pruning criterion"):
        pr.apply_pruning(model, pr.PruningConfig(criterion="bogus"))


@pytest.mark.slow
def test_apply_pruning_structured_equals_prune_unet(half) -> None:
    unet, pruned, report = half
    again, report2 = pr.apply_pruning(unet, pr.PruningConfig(ratio=0.5, criterion="l1"))
    assert report2.config == report.config
    inputs = _example_inputs(unet)
    with torch.no_grad():
        assert torch.allclose(_forward(again, inputs), _forward(pruned, inputs), atol=1e-5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ratios", "1.0"], "--ratios"),  # a ratio lies in (0, 1)
        (["--unstructured", "0"], "--unstructured"),
        (["--criteria", "bogus"], "--criteria"),
        (["--steps", "0"], "--steps"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),  # class-balanced samples
        (["--seeds", "3"], "--seeds"),  # one seed gives no interval
        (["--repeats", "0"], "--repeats"),
    ],
)
def test_bad_options_are_one_line_before_any_network_is_built(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.pruning import bench

    monkeypatch.setattr(bench, "networks", lambda cfg: pytest.fail("a network was built"))
    assert message in refused_in_one_line("reference.pruning", args)


def _stand_ins() -> list[Any]:
    """The benchmark's rows with identity networks and hand-set costs (nothing is pruned)."""
    from reference.pruning.measure import Network

    def net(id: str, role: str, timed: bool = True, steps: int = 4, **facts: float) -> Any:
        cost = {"flops_ratio": 1.0, "params_m": 1.0, **facts}
        return Network(id, {"method": id}, role, nn.Identity(), steps, timed, cost)  # type: ignore[arg-type]

    return [
        net("teacher", "baseline"),
        net("l1-0.5", "technique", timed=False, flops_ratio=0.25, params_m=0.25),
        net("finetuned", "technique", flops_ratio=0.25, params_m=0.25),
        net("scratch", "control", flops_ratio=0.25, params_m=0.25),
        net("fewer-steps", "control", steps=1),
    ]


def test_trained_rows_are_judged_on_fdd_and_one_shot_rows_carry_the_fidelity() -> None:
    from reference.harness.compare import judge
    from reference.harness.seeds import SeedTable
    from reference.pruning.bench import HEAD, QUICK, comparison

    c = comparison(QUICK, _stand_ins())
    roles = {v.id: (v.role, v.timed is not None, v.sample is not None) for v in c.variants}
    assert roles["l1-0.5"] == ("technique", False, True)  # one-shot: sampled, not timed
    assert all(timed and sampled for k, (_, timed, sampled) in roles.items() if k != "l1-0.5")
    assert c.solution is not None  # every sampled row gets rms_to_solution beside its FDD
    assert c.headline.row == HEAD and c.headline.quality == "fd_digits"
    # 1 / 0.25 and 0.25 / 1 are exact in binary floating point; approx only spares the reader
    assert c.headline.limit == pytest.approx(4.0) and c.headline.limit_kind == "estimate"
    assert c.headline.memory_ratio == pytest.approx(0.25)
    assert {a.row for a in c.aims} == {HEAD}
    assert all(getattr(a, "metric", "fd_digits") == "fd_digits" for a in c.aims)  # not the RMS
    q = SeedTable((0, 1, 2))
    # per seed: the prune within 1.3x of the teacher, better than both controls
    per_seed = {
        "teacher": (8.0, 9.0, 8.5),
        HEAD: (9.0, 10.0, 9.8),
        "scratch": (30.0, 32.0, 31.0),
        "fewer-steps": (20.0, 22.0, 21.0),
    }
    for s in range(3):
        for key, fd in per_seed.items():
            q.add(key, {"fd_digits": fd[s]})
    states = {a.id: judge(a, q, None, {}).state for a in c.aims if a.id != "speedup"}
    assert states == {"quality": "met", "beats-fewer-steps": "met", "beats-scratch": "met"}


def test_the_fewer_steps_control_spends_the_prunes_sampling_flops() -> None:
    from reference.pruning.measure import control_steps

    assert control_steps(20, 0.2506) == 5  # 5 teacher steps ~ 20 steps at a quarter the FLOPs
    assert control_steps(4, 0.25) == 1
    assert control_steps(4, 0.01) == 1  # never zero steps
    assert control_steps(20, 1.0) == 20


@pytest.mark.slow
def test_quick_benchmark_judges_the_prune_on_paired_seeds_against_two_controls(
    quick_result,
) -> None:
    result = quick_result("pruning")
    settings = result["settings"]
    rows = {r["id"]: r for r in result["rows"]}
    roles = {k: r["role"] for k, r in rows.items()}
    assert roles["scratch"] == roles["fewer-steps"] == "control"
    assert roles["teacher"] == "baseline" and roles["real"] == "reference"
    assert roles["l1-0.5"] == roles["taylor-0.5"] == roles["finetuned"] == "technique"
    for key, row in rows.items():
        if key != "real":  # every sampled row: the FDD and the fidelity, per paired seed
            assert {len(row["seeds"][m]) for m in ("fd_digits", "rms_to_solution")} == {
                len(settings["seeds"])
            }
            assert {"fd_digits", "kid_digits", "rms_to_solution"} <= set(row["intervals"])
    assert rows["real"]["config"]["n"] == settings["n_quality"]
    # the control runs the teacher with the steps whose FLOPs match the prune's sampling
    head = rows["finetuned"]
    k = rows["fewer-steps"]["config"]["steps"]
    assert k == max(1, round(settings["steps"] * head["values"]["flops_ratio"]))
    assert rows["fewer-steps"]["values"]["nfe"] == k == settings["control_steps"]
    # every timed row keeps its raw rounds against the teacher; one-shot prunes are not timed
    for key in ("finetuned", "scratch", "fewer-steps", "unstructured-0.5"):
        assert "speedup" in rows[key]["intervals"]
        assert rows[key]["rounds"]["against"] == "teacher"
    assert "latency_ms" not in rows["l1-0.5"]["values"] and "rounds" not in rows["l1-0.5"]
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"speedup", "quality", "beats-fewer-steps", "beats-scratch"}
    assert {a["row"] for a in aims.values()} == {"finetuned"}
    against = {k: a["against"] for k, a in aims.items()}
    assert against["beats-fewer-steps"] == "fewer-steps" and against["beats-scratch"] == "scratch"
    for a in aims.values():
        assert a["interval"] is not None and a["interval"][0] <= a["measured"] <= a["interval"][1]
    fd = {key: rows[key]["seeds"]["fd_digits"] for key in ("finetuned", "fewer-steps")}
    logs = [math.log(a / b) for a, b in zip(fd["finetuned"], fd["fewer-steps"], strict=True)]
    # the paired ratio is exp of a mean of logs; both sides compute it in float64
    assert aims["beats-fewer-steps"]["measured"] == pytest.approx(math.exp(sum(logs) / len(logs)))
    # a trained change headlines the distribution; the FLOP ratio only estimates the limit
    headline = result["headline"]
    assert headline["row"] == "finetuned" and headline["quality_metric"] == "fd_digits"
    assert headline["limit_kind"] == "estimate"
    # the same division of the same float64 on both sides, through a JSON round trip
    assert headline["speedup_limit"] == pytest.approx(1 / head["values"]["flops_ratio"])
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "latency-protocol", "yardsticks", "held-out-reference"} <= set(
        notes
    )
    # the one-shot note quotes the most faithful one-shot row (the least RMS to the solution)
    one_shot = [rows[f"{c}-0.5"]["values"] for c in settings["criteria"]]
    best = min(one_shot, key=lambda v: v["rms_to_solution"])
    assert notes["one-shot"]["best"] == best["rms_to_solution"]
    assert notes["one-shot"]["best_fd"] == best["fd_digits"]
