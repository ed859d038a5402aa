"""reference.feature_caching: the written-out U-Net forward equals diffusers' exactly, interval 1
equals no caching, the cached step reuses exactly the deep feature, the cost model, the exact
condition caches (embedding LRU, cross-attention K/V), diffusers' hooks in their exact settings,
the CLI's clean errors, and what the quick benchmark reports."""

from __future__ import annotations

import math

import pytest
import torch

from reference import feature_caching as fc
from reference.feature_caching import deepcache as dc


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
def test_interval_one_equals_no_caching_over_a_whole_trajectory(unet) -> None:
    from reference import zoo
    from reference.harness import class_labels, make_noise, model_eps_fn, sample

    noise, labels = make_noise(3, seed=3), class_labels(3)
    plain = sample(model_eps_fn(unet), zoo.teacher_scheduler(), noise, steps=5, labels=labels)
    eps = fc.DeepCacheEps(unet, interval=1)
    cached = sample(eps, zoo.teacher_scheduler(), noise, steps=5, labels=labels)
    assert torch.equal(plain, cached)  # exact: interval 1 runs the full forward every step
    assert eps.full_calls == eps.calls == 5
    eps3 = fc.DeepCacheEps(unet, interval=3)
    approx = sample(eps3, zoo.teacher_scheduler(), noise, steps=5, labels=labels)
    assert eps3.full_calls == fc.full_steps(5, 3) == 2 and eps3.calls == 5
    assert approx.shape == plain.shape


def test_cache_refuses_a_changed_batch(unet) -> None:
    x, t, y = _inputs(4)
    eps = fc.DeepCacheEps(unet, interval=2)
    with torch.no_grad():
        eps(x, t, y)
        with pytest.raises(ValueError, match="batch size changed"):
            eps(x[:2], t[:2], y[:2])


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_bad_interval_and_branch_raise_one_clear_error(unet, bad) -> None:
    with pytest.raises(ValueError, match="interval must be an integer >= 1"):
        fc.DeepCacheEps(unet, interval=bad)
    with pytest.raises(ValueError, match=r"branch must be in 1\.\.3"):
        fc.DeepCacheEps(unet, interval=2, branch=4)


def test_cost_model(unet) -> None:
    f = fc.skipped_flop_fraction(unet, branch=1, batch=1)
    assert 0.0 < f < 1.0
    assert fc.skipped_flop_fraction(unet, branch=2, batch=1) < f  # deeper branch: less is skipped
    assert fc.speedup_limit(f, 1) == pytest.approx(1.0)
    assert fc.speedup_limit(0.6, 3) == pytest.approx(1 / (1 - 0.6 * 2 / 3))
    # N -> infinity: the limit tends to 1 / (1 - f)
    assert fc.speedup_limit(0.6, 10**9) == pytest.approx(2.5, rel=1e-6)
    # 50 steps, N = 3: 17 full + 33 cached steps at cost (1 - f) each
    assert fc.relative_cost(50, 3, 0.6) == pytest.approx(17 + 33 * 0.4)
    assert fc.matched_ddim_steps(50, 3, 0.6) == round(17 + 33 * 0.4)
    assert fc.matched_ddim_steps(50, 1, 0.6) == 50
    # the limit is the ratio of costs when steps is a multiple of N
    assert 30 / fc.relative_cost(30, 3, f) == pytest.approx(fc.speedup_limit(f, 3))
    assert math.isclose(fc.full_steps(50, 5), 10)


def test_condition_embedding_cache_is_exact_and_lru(unet) -> None:
    from reference.feature_caching.conditioning import LRU

    _, t, y = _inputs(6)
    cache = fc.ConditionEmbeddingCache(unet, maxsize=8)
    with torch.no_grad():
        ref = fc.condition_embedding(unet, t, y, 6)
        first = cache(t, y, 6)
        second = cache(t, y, 6)
    # float32 time MLP (k = 32, then 128) on another batch of rows: a CPU's BLAS may round
    # rows differently, |err| <= 2 * 128 * eps32 / 2 * |emb| ~ 1.5e-5 relative at most
    torch.testing.assert_close(first, ref, rtol=2e-5, atol=1e-6)
    assert torch.equal(first, second)  # exact: a hit returns the stored rows
    assert (cache.lru.misses, cache.lru.hits) == (6, 6)
    lru = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "a" becomes most recent, so "b" is evicted next
    lru.put("c", 3)
    assert lru.get("b") is None and lru.get("a") == 1 and lru.get("c") == 3
    with pytest.raises(ValueError, match="cache size"):
        LRU(0)


def test_cross_attention_kv_cache_equals_diffusers_attention() -> None:
    torch.manual_seed(0)
    toy = fc.CrossAttentionToy().eval()
    labels = torch.tensor([3, 1, 3, 7])
    kv = fc.KVCache()
    with torch.no_grad():
        for step in range(3):
            x = torch.randn(4, 64, 96)
            plain = toy(x, labels)  # diffusers Attention with encoder_hidden_states
            cached = toy(x, labels, kv)
            # cached K/V: float32 k=64 projections of 3 labels' tokens (24 rows) instead of 4
            # (32 rows); rows may round differently: 64 * eps32 / 2 * |W||c| ~ 1e-5 at most
            assert torch.allclose(plain, cached, atol=1e-5, rtol=0), step
        key, value = fc.cross_attention_kv(toy.attn, toy.context(labels))
        direct = fc.cross_attention_with_kv(toy.attn, x, key, value)
    assert torch.equal(direct, plain)  # exact: the same K/V and attention ops as the layer
    # three distinct labels (counted once per call): computed on the first call, then hits
    assert kv.lru.misses == 3 and kv.lru.hits == 3 * 2


@pytest.mark.slow
def test_diffusers_hooks_in_their_exact_settings_equal_the_plain_dit() -> None:
    from reference import zoo
    from reference.feature_caching.dit_hooks import first_block_cache, pyramid_attention_broadcast
    from reference.harness import class_labels, make_noise, model_eps_fn, sample
    from reference.zoo.specs import DIT_CONFIG, build_dit

    torch.manual_seed(0)
    state = build_dit(DIT_CONFIG).state_dict()

    def dit() -> torch.nn.Module:
        m = build_dit(DIT_CONFIG).eval()
        m.load_state_dict(state)
        return m

    noise, labels = make_noise(2, seed=0), class_labels(2)
    plain = sample(model_eps_fn(dit()), zoo.teacher_scheduler(), noise, steps=4, labels=labels)
    # threshold 0: every step differs by more than 0, so all blocks always run
    fbc = first_block_cache(dit(), threshold=0.0)
    # skip range 1: recompute attention every step
    pab = pyramid_attention_broadcast(dit(), skip_range=1)
    for eps in (fbc, pab):
        eps.reset()
        out = sample(eps, zoo.teacher_scheduler(), noise, steps=4, labels=labels)
        # exact by construction: in these settings the hooks run every block every step
        assert torch.equal(out, plain), eps.kind
    assert fbc.full_calls == 4
    # a huge threshold skips every step after the first
    lazy = first_block_cache(dit(), threshold=1e9)
    lazy.reset()
    sample(lazy, zoo.teacher_scheduler(), noise, steps=4, labels=labels)
    assert lazy.full_calls == 1


def test_every_deepcache_row_runs_the_interval_its_name_states(unet) -> None:
    from reference.feature_caching.bench import Config, unet_variants

    variants = unet_variants(unet, Config(intervals=(2, 3, 5), headline_interval=3), f=0.5)
    cached = [v for v in variants if v.key.startswith("dc")]
    assert {v.key for v in cached} >= {"dc-lru"}
    for v in cached:
        eps = v.make_eps()
        assert eps.interval == v.config["interval"], v.key  # a late-bound loop variable differs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--intervals", "0"], "--intervals must be >= 1"),
        (["--steps", "0"], "--steps must be >= 1, got 0"),
        (["--intervals", "2,5", "--headline-interval", "3"], "--headline-interval 3 is not one of"),
        (["--branch", "0"], "--branch must be >= 1"),
    ],
)
def test_cli_rejects_bad_arguments_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from reference.harness.cli import main

    with pytest.raises(SystemExit) as info:
        main("reference.feature_caching", ["--bench", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unsupported_model_is_rejected() -> None:
    with pytest.raises(ValueError, match="is not a diffusers UNet2DModel"):
        dc.check_supported(torch.nn.Linear(2, 2))


def test_flop_estimate_of_the_counted_work() -> None:
    # 50 steps, N = 3: 17 full + 33 cached steps
    assert fc.flop_speedup_estimate(17, 33, 0.6) == pytest.approx(50 / (17 + 33 * 0.4))
    assert fc.schedule_speedup_limit(50, 3, 0.6) == fc.flop_speedup_estimate(17, 33, 0.6)
    # one extra full step makes the run's estimate smaller than the asymptotic one
    assert fc.schedule_speedup_limit(50, 3, 0.6) < fc.speedup_limit(0.6, 3)
    assert fc.flop_speedup_estimate(5, 0, 0.6) == 1.0
    with pytest.raises(ValueError, match="full >= 1"):
        fc.flop_speedup_estimate(0, 3, 0.6)


def test_relative_speed_compares_two_rows_of_one_timing_run() -> None:
    from reference.feature_caching.bench import relative_speed
    from reference.harness.cost import LatencyComparison, _stats

    rounds = {"base": [10.0, 11.0, 9.0, 10.0], "ctrl": [6.0, 6.0, 6.0, 6.0], "fast": [3.0] * 4}
    stats = {k: _stats(v) for k, v in rounds.items()}
    lat = LatencyComparison(
        "base", stats, {k: 10.0 / s.median_ms for k, s in stats.items()}, 2, 4, 0
    )
    value, (lo, hi) = relative_speed(lat, "fast", "ctrl")
    assert value == pytest.approx(2.0) and lo == pytest.approx(2.0) and hi == pytest.approx(2.0)


@pytest.mark.slow
def test_quick_benchmark_reports_every_role_paired_seeds_and_a_run_based_estimate(
    quick_result,
) -> None:
    result = quick_result("feature-caching")
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    seeds = result["settings"]["seeds"]
    for key in ("base", "dc3", "ddim3", "dit", "dit-fbc", "dit-pab"):
        for metric in ("fd_digits", "kid_digits"):
            assert len(rows[key]["seeds"][metric]) == len(seeds), (key, metric)
            lo, hi = rows[key]["intervals"][metric]
            assert lo <= rows[key]["values"][metric] <= hi
    assert "fd_digits" not in rows["dc-lru"]["values"]  # exact cache: timed only
    assert rows["real"]["role"] == "reference"
    for key in ("dc3", "dc-lru", "ddim3"):  # every timed row carries its speedup's interval
        assert "speedup" in rows[key]["intervals"]
    # the limit is the FLOP estimate of the full and cached steps the run counted
    head = result["headline"]
    assert head["limit_kind"] == "estimate" and head["speedup_limit"] > 1.0
    assert result["anomalies"] == []
    work = next(n["params"] for n in result["notes"] if n["id"] == "skipped-flops")
    steps, n = result["settings"]["steps"], 3
    assert work["full"] == fc.full_steps(steps, n) == rows["dc3"]["values"]["full_steps"]
    assert work["full"] + work["cached"] == steps
    f = result["settings"]["skipped_flop_fraction"]
    expected = fc.flop_speedup_estimate(work["full"], work["cached"], f)
    assert head["speedup_limit"] == pytest.approx(expected, rel=1e-3)
    assert head["quality_interval"] is not None
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"speedup", "quality", "quality-vs-control", "speed-vs-control"}
    assert all(a["interval"] is not None for a in aims.values())
    assert aims["quality-vs-control"]["params"]["control_steps"] == rows["ddim3"]["config"]["steps"]
    for key in ("quality-vs-control", "speed-vs-control"):  # the aims against the control
        assert (aims[key]["row"], aims[key]["against"]) == ("dc3", "ddim3")
        assert rows[aims[key]["against"]]["role"] == "control"
    notes = {n["id"] for n in result["notes"]}
    assert {"quality-protocol", "latency-protocol", "matched-cost"} <= notes
