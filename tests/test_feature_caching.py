"""reference.feature_caching: the written-out U-Net forward equals diffusers' exactly, interval 1
equals no caching, the cached step reuses exactly the deep feature, the cost model, the exact
condition caches (embedding LRU, cross-attention K/V), diffusers' hooks in their exact settings,
the CLI's clean errors, and what the quick benchmark reports."""

from __future__ import annotations

import pytest
import torch

from reference import feature_caching as fc


@pytest.fixture(scope="module")
def unet(random_teacher: torch.nn.Module) -> torch.nn.Module:
    return random_teacher


def _inputs(n: int = 5, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 16, 16, generator=gen)
    return x, torch.full((n,), 640, dtype=torch.long), torch.arange(n) % 11


@pytest.mark.parametrize("branch", [1, 2, 3])
def test_written_out_forward_equals_diffusers_forward_exactly(unet, branch: int) -> None:
    x, t, y = _inputs()
    with torch.no_grad():
        ref = unet(x, t, class_labels=y).sample
        out = fc.unet_forward(unet, x, t, y, branch=branch)
    # exact by construction: the same modules on the same tensors in the same order
    assert torch.equal(out.eps, ref)
    # the cached feature is the input of up block U_m: its resolution halves per level
    assert out.deep_feature.shape[-1] == 16 // 2 ** (branch - 1)


@pytest.mark.parametrize("branch", [1, 2])
def test_cached_step_on_the_same_input_reproduces_the_full_step(unet, branch: int) -> None:
    x, t, y = _inputs(seed=1)
    with torch.no_grad():
        full = fc.unet_forward(unet, x, t, y, branch=branch)
        emb = fc.condition_embedding(unet, t, y, x.shape[0])
        cached = fc.shallow_forward(unet, x, emb, full.deep_feature, branch=branch)
        other = fc.shallow_forward(unet, x + 0.1, emb, full.deep_feature, branch=branch)
    assert torch.equal(cached, full.eps)  # exact: the same shallow ops on the same feature
    assert not torch.equal(other, full.eps)  # the shallow branch does see the new input


@pytest.mark.slow
def test_quick_benchmark_reports_every_role_paired_seeds_and_a_run_based_estimate(
    quick_result,
) -> None:
    from reference.harness.integrity import check_result

    result = quick_result("feature-caching")
    assert check_result(result, "feature-caching") == []
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    seeds = result["settings"]["seeds"]
    for key in ("ddim50", "dc3", "ddim-dc3", "dit-ddim50", "dit-fbc", "dit-pab"):
        for metric in ("rms_to_solution", "fd_digits", "kid_digits"):
            assert len(rows[key]["seeds"][metric]) == len(seeds), (key, metric)
            lo, hi = rows[key]["intervals"][metric]
            assert lo <= rows[key]["values"][metric] <= hi
    assert "fd_digits" not in rows["dc-lru"]["values"]  # exact cache: timed only
    assert rows["real"]["role"] == "reference"
    for key in ("dc3", "dc-lru", "ddim-dc3", "dit-fbc", "dit-pab"):  # timed, with an interval
        assert "speedup" in rows[key]["intervals"]
    assert rows["dit-fbc"]["rounds"]["against"] == "dit-ddim50"  # the DiT's own baseline
    head = result["headline"]
    assert head["row"] == "dc3" and head["quality_metric"] == "rms_to_solution"
    assert head["limit_kind"] == "estimate" and head["speedup_limit"] > 1.0
    work = next(n["params"] for n in result["notes"] if n["id"] == "skipped-flops")
    steps, n = result["settings"]["baseline_steps"], 3
    assert work["full"] == fc.full_steps(steps, n) == rows["dc3"]["values"]["full_steps"]
    assert work["full"] + work["cached"] == steps
    f = result["settings"]["skipped_flop_fraction"]
    expected = fc.flop_speedup_estimate(work["full"], work["cached"], f)
    assert head["speedup_limit"] == pytest.approx(expected, rel=1e-3)
    aims = {a["id"]: a for a in result["aims"]}
    assert list(aims) == ["speedup", "fidelity", "quality", "fidelity-vs-control",
                          "speed-vs-control"]  # fmt: skip
    assert all(a["interval"] is not None for a in aims.values())
    control = aims["fidelity-vs-control"]["params"]["control_steps"]
    assert control == rows["ddim-dc3"]["config"]["steps"]
    for key in ("fidelity-vs-control", "speed-vs-control"):  # the aims against the control
        assert (aims[key]["row"], aims[key]["against"]) == ("dc3", "ddim-dc3")
    notes = {n["id"] for n in result["notes"]}
    assert {"quality-protocol", "held-out-reference", "latency-protocol", "matched-cost",
            "dit-hooks"} <= notes  # fmt: skip
