"""reference.async_pipeline: the stage split composes to the U-Net exactly, the synchronous
2-process pipeline reproduces the single-process sampler, async/stream invariants, errors."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from reference import async_pipeline as ap
from reference import zoo
from reference.harness import model_eps_fn, sample
from reference.zoo.specs import TEACHER_CONFIG, build_unet

pytestmark = pytest.mark.xdist_group("async_pipeline")


def _random_unet(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = build_unet(TEACHER_CONFIG).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model


@pytest.fixture(scope="module")
def unet() -> torch.nn.Module:
    return _random_unet()


def test_every_split_composes_to_the_full_model_exactly(unet) -> None:
    x = torch.randn(3, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    t, labels = torch.tensor(700), torch.tensor([1, 10, 4])
    with torch.no_grad():
        ref = unet(x, t, class_labels=labels).sample
        names = ap.unit_names(unet)
        assert names[0] == "in" and names[-1] == "out" and "mid" in names
        for k in range(1, len(names)):
            assert torch.equal(ap.split_forward(unet, x, t, labels, k), ref), names[k]


def test_balanced_split_minimises_the_slower_stage() -> None:
    times = {"a": 1.0, "b": 1.0, "c": 5.0, "d": 1.0}
    assert ap.balanced_split(times) == 2  # [a, b] | [c, d] -> 6 beats 7 for k = 1 or 3
    times = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    assert ap.balanced_split(times) == 3  # 6 | 4


@pytest.mark.slow
def test_two_process_pipeline_sync_reproduces_the_single_process_sampler(unet) -> None:
    source = {"config": dict(TEACHER_CONFIG), "state_dict": unet.state_dict()}
    job = ap.Job(n=3, steps=3, mode="sync")
    noise, labels = ap.job_noise(job)
    ref = sample(model_eps_fn(unet), zoo.teacher_scheduler(), noise, steps=3, labels=labels)
    with ap.StagePool(split=5, source=source) as pool:
        sync = pool.run(job)
        no_stale = pool.run(ap.Job(n=3, steps=3, mode="async", warmup=3))  # staleness off
        stale = pool.run(ap.Job(n=3, steps=3, mode="async", warmup=1))
        stream = pool.run(ap.Job(n=3, steps=3, mode="stream", requests=2))
    for result in (sync, no_stale):
        assert (result.samples[0] - ref).abs().max() <= 1e-4  # 1 vs 2 threads: reassociation
    assert (stale.samples[0] - ref).abs().max() > 1e-3  # stale features really were used
    assert len(stream.samples) == 2 and (stream.samples[0] - ref).abs().max() <= 1e-4
    second = sample(
        model_eps_fn(unet), zoo.teacher_scheduler(), ap.job_noise(job, 1)[0], steps=3, labels=labels
    )
    assert (stream.samples[1] - second).abs().max() <= 1e-4  # stream mode is exact
    assert all(c > 0 for c in sync.compute_s)


def test_bad_arguments_give_one_clear_line() -> None:
    with pytest.raises(ValueError, match="unknown mode 'pipe'"):
        ap.Job(n=1, steps=2, mode="pipe")
    with pytest.raises(ValueError, match=r"warmup must be in 0\.\.steps"):
        ap.Job(n=1, steps=2, warmup=3)
    with pytest.raises(ValueError, match="even number of requests"):
        ap.Job(n=1, steps=2, mode="stream", requests=3)
    for change, message in (
        ({"steps": 1}, "--steps must be >= 2, got 1"),
        ({"batches": (0,)}, "--batches must be >= 1, got [0]"),
        ({"warmup": 20}, "--warmup must be in 0..steps-1 (19), got 20"),
        ({"repeats": 0}, "--repeats must be >= 1, got 0"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            dataclasses.replace(ap.Config(), **change).validate()


def test_the_benchmark_measures_quality_on_paired_seeds_at_the_standard_size() -> None:
    from reference.harness.seeds import N_QUALITY, SEEDS

    assert ap.Config().n_quality == N_QUALITY and ap.Config().seeds == SEEDS
    assert ap.Config().repeats >= 15
    with pytest.raises(ValueError, match="--seeds needs at least 2 distinct"):
        dataclasses.replace(ap.Config(), seeds=(0,)).validate()


@pytest.mark.slow
def test_quick_benchmark_limit_and_speedup_refer_to_the_same_configuration(quick_result) -> None:
    import math

    result = quick_result("async-pipeline")
    rows = {r["id"]: r for r in result["rows"]}
    seeds = result["settings"]["seeds"]
    for key in ("q-single", "q-async"):
        assert len(rows[key]["seeds"]["fd_digits"]) == len(seeds)
        assert rows[key]["config"]["batch"] == result["settings"]["n_quality"]
    assert rows["real"]["config"]["n"] == result["settings"]["n_quality"]
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"speedup", "quality", "beats-sync"}
    big = max(result["settings"]["batches"])
    assert (aims["beats-sync"]["row"], aims["beats-sync"]["against"]) == (
        f"b{big}-async",
        f"b{big}-sync",
    )
    assert (aims["quality"]["row"], aims["quality"]["against"]) == ("q-async", "q-single")
    for a in aims.values():
        assert a["interval"] is not None and a["interval"][0] <= a["measured"] <= a["interval"][1]
    fd_a, fd_s = rows["q-async"]["seeds"]["fd_digits"], rows["q-single"]["seeds"]["fd_digits"]
    geo = math.exp(sum(math.log(a / b) for a, b in zip(fd_a, fd_s, strict=True)) / len(seeds))
    assert aims["quality"]["measured"] == pytest.approx(geo)
    # the limit (1) is the ideal speedup over the same 2-thread process the speedup is against
    limit = {n["id"]: n["params"] for n in result["notes"]}["limit"]
    steps, w = result["settings"]["steps"], limit["warmup"]
    s1, s2 = limit["s1"], limit["s2"]
    expected = steps * limit["t2"] / (w * (s1 + s2) + (steps - w) * max(s1, s2))
    head = result["headline"]
    assert head["limit_kind"] == "estimate" and head["speedup_limit"] == pytest.approx(expected)
    assert head["row"] == f"b{max(result['settings']['batches'])}-async"
    assert head["quality_interval"] is not None
    assert "speedup" in rows["b2-stream"]["intervals"]
