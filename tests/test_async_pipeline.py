"""reference.async_pipeline: the stage split composes to the U-Net exactly, the stages take the
harness's clipped-ODE DDIM step, the synchronous 2-process pipeline reproduces the single-process
sampler (spawned, and launched by torchrun), async/stream invariants, the declared comparison's
quick result (pairs, fidelity headline, limit), the demo's table, errors (a torchrun world size
other than 2, the benchmark under a launcher)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from reference import async_pipeline as ap
from reference import zoo
from reference.async_pipeline import bench
from reference.async_pipeline.pipeline import Pipeline
from reference.harness import entry, model_eps_fn
from reference.harness.ode import solve
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
            # exact by construction: the same modules on the same tensors, only split in two
            assert torch.equal(ap.split_forward(unet, x, t, labels, k), ref), names[k]


def test_balanced_split_minimises_the_slower_stage() -> None:
    times = {"a": 1.0, "b": 1.0, "c": 5.0, "d": 1.0}
    assert ap.balanced_split(times) == 2  # [a, b] | [c, d] -> 6 beats 7 for k = 1 or 3
    times = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    assert ap.balanced_split(times) == 3  # 6 | 4


def test_the_stage_step_is_the_harness_ddim_on_the_clipped_ode(unet, one_torch_thread) -> None:
    job = ap.Job(n=3, steps=3, mode="sync")
    noise, labels = ap.job_noise(job)
    ddim, x = ap.ClippedDDIM.of(job.steps), noise.clone()
    split, units = 5, len(ap.unit_names(unet))
    with torch.no_grad():
        for i, t in enumerate(ddim.timesteps):
            eps = ap.run_units(
                unet, ap.run_units(unet, x, t, labels, 0, split), t, labels, split, units
            )
            x = ddim.step(x, eps.h, i)
        ref = solve(model_eps_fn(unet), noise, steps=job.steps, labels=labels)
    # bitwise: the same modules and the same step arithmetic on the same tensors, one thread
    assert torch.equal(x.clamp(-1, 1), ref)
    assert torch.equal(ap.single_process(unet, job)[0], ref)  # the baseline is the harness's DDIM


@pytest.mark.slow
def test_two_process_pipeline_sync_reproduces_the_single_process_sampler(unet) -> None:
    source = {"config": dict(TEACHER_CONFIG), "state_dict": unet.state_dict()}
    job = ap.Job(n=3, steps=3, mode="sync")
    noise, labels = ap.job_noise(job)
    ref = solve(model_eps_fn(unet), noise, steps=3, labels=labels)
    with ap.StagePool(split=5, source=source) as pool:
        sync = pool.run(job)
        no_stale = pool.run(ap.Job(n=3, steps=3, mode="async", warmup=3))  # staleness off
        stale = pool.run(ap.Job(n=3, steps=3, mode="async", warmup=1))
        stream = pool.run(ap.Job(n=3, steps=3, mode="stream", requests=2))
    for result in (sync, no_stale):
        assert (result.samples[0] - ref).abs().max() <= 1e-4  # 1 vs 2 threads: reassociation
    assert (stale.samples[0] - ref).abs().max() > 1e-3  # stale features really were used
    assert len(stream.samples) == 2 and (stream.samples[0] - ref).abs().max() <= 1e-4
    second = solve(model_eps_fn(unet), ap.job_noise(job, 1)[0], steps=3, labels=labels)
    assert (stream.samples[1] - second).abs().max() <= 1e-4  # stream mode is exact
    assert all(c > 0 for c in sync.compute_s)


def test_bad_arguments_give_one_clear_line() -> None:
    import argparse

    with pytest.raises(ValueError, match="unknown mode 'pipe'"):
        ap.Job(n=1, steps=2, mode="pipe")
    with pytest.raises(ValueError, match=r"warmup must be in 0\.\.steps"):
        ap.Job(n=1, steps=2, warmup=3)
    with pytest.raises(ValueError, match="even number of requests"):
        ap.Job(n=1, steps=2, mode="stream", requests=3)
    for change, message in (
        ({"warmup": 20}, "--warmup must be in 0..steps-1 (19), got 20"),
        ({"n_quality": 25}, "--n-quality must be a multiple of 10 (classes), got 25"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            dataclasses.replace(ap.Config(), **change).validate()
    options = {o.name: o for o in bench.OPTIONS}
    for name, text in (("batches", "0"), ("steps", "1"), ("repeats", "0"), ("seeds", "0")):
        with pytest.raises(argparse.ArgumentTypeError):  # refused by the bounds it declares
            options[name].parse(text)


def test_the_benchmark_measures_quality_on_paired_seeds_at_the_standard_size() -> None:
    from reference.harness.ode import SOLUTION
    from reference.harness.seeds import SEEDS

    full = bench.FULL
    from reference.harness.sizes import MAX_QUALITY

    assert full.n_quality == MAX_QUALITY == 140 and full.seeds == SEEDS
    assert full.repeats >= 15 and full.solution_steps == SOLUTION[1]
    assert full.batches == (1, 8, 64)  # the site draws the sweep's rows b1, b8, b64


def _aims(result: dict) -> dict[str, dict]:
    return {a["id"]: a for a in result["aims"]}


@pytest.mark.slow
def test_quick_result_pairs_every_row_with_its_own_baseline(quick_result) -> None:
    from reference.harness.integrity import check_result

    result = quick_result("async-pipeline")
    assert check_result(result, "async-pipeline") == []  # sealed, every figure re-derived
    (n,) = result["settings"]["batches"]
    rows = {r["id"]: r for r in result["rows"]}
    kinds = ("single", "sync", "async", "single-x2", "stream")
    assert list(rows) == [f"b{n}-{k}" for k in kinds] + ["real"]
    pairs = {k: rows[f"b{n}-{k}"]["rounds"]["against"] for k in kinds}
    assert pairs == {
        "single": f"b{n}-single",
        "sync": f"b{n}-single",
        "async": f"b{n}-single",
        "single-x2": f"b{n}-single-x2",  # a baseline against itself: speedup 1
        "stream": f"b{n}-single-x2",
    }
    assert [rows[f"b{n}-{k}"]["role"] for k in kinds] == [
        "baseline", "control", "technique", "baseline", "technique"
    ]  # fmt: skip
    for k in ("single", "single-x2"):
        assert rows[f"b{n}-{k}"]["values"]["speedup"] == 1.0
    for k in kinds:  # (2): throughput from the row's own latency
        row = rows[f"b{n}-{k}"]
        images = n * row["config"].get("requests", 1)
        assert row["values"]["throughput"] == pytest.approx(
            images / (row["values"]["latency_ms"] / 1000), rel=1e-12
        )
    aims = _aims(result)
    assert {a: (aims[a]["row"], aims[a]["against"]) for a in aims} == {
        "speedup": (f"b{n}-async", f"b{n}-single"),
        "quality": (f"b{n}-async", f"b{n}-single"),
        "beats-sync": (f"b{n}-async", f"b{n}-sync"),
    }


@pytest.mark.slow
def test_quick_result_headlines_asyncdiff_on_its_fidelity(quick_result) -> None:
    import math

    result = quick_result("async-pipeline")
    (n,) = result["settings"]["batches"]
    rows = {r["id"]: r for r in result["rows"]}
    seeds = result["settings"]["seeds"]
    for key in ("single", "async"):  # the sampled rows: every quality metric on every seed
        per_seed = rows[f"b{n}-{key}"]["seeds"]
        assert {"rms_to_solution", "fd_digits", "kid_digits"} <= set(per_seed)
        assert all(len(v) == len(seeds) for v in per_seed.values())
    assert not rows[f"b{n}-sync"].get("seeds")  # timed only
    assert rows["real"]["config"]["n"] == result["settings"]["n_quality"]
    head = result["headline"]
    assert head["row"] == f"b{n}-async" and head["quality_metric"] == "rms_to_solution"
    rms_a = rows[f"b{n}-async"]["seeds"]["rms_to_solution"]
    rms_s = rows[f"b{n}-single"]["seeds"]["rms_to_solution"]
    geo = math.exp(sum(math.log(a / b) for a, b in zip(rms_a, rms_s, strict=True)) / len(seeds))
    # the same geometric mean computed in another order: float64 rounding only
    assert head["quality_ratio"] == pytest.approx(geo, rel=1e-9)
    assert _aims(result)["quality"]["measured"] == pytest.approx(geo, rel=1e-9)
    # the limit (1) is the ideal speedup over the same 2-thread process the speedup is against
    notes = {x["id"]: x["params"] for x in result["notes"]}
    limit, steps = notes["limit"], result["settings"]["steps"]
    w, s1, s2 = limit["warmup"], limit["s1"], limit["s2"]
    expected = steps * limit["t2"] / (w * (s1 + s2) + (steps - w) * max(s1, s2))
    assert head["limit_kind"] == "estimate"
    assert head["speedup_limit"] == pytest.approx(expected, rel=1e-12)
    # float32 reassociation of 1 against 2 threads only (samples lie in [-1, 1])
    assert max(notes["sync-exact"]["max_abs"]) <= 1e-3
    assert notes["async-quality"]["rms_async"] == rows[f"b{n}-async"]["values"]["rms_to_solution"]


@pytest.mark.slow
def test_the_demo_prints_the_sweep_and_draws_it(
    unet,
    quick_result,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    import types

    result = quick_result("async-pipeline")  # its rows stand in for a measurement
    rows = [types.SimpleNamespace(id=r["id"], values=r["values"]) for r in result["rows"]]
    notes = {x["id"]: x["params"] for x in result["notes"]}
    units = ap.unit_names(unet)  # the teacher's configuration: the same units
    split = notes["split"]["split"]
    p = Pipeline(None, split, units, 1.0, {"limit": notes["limit"]["limit"]})
    monkeypatch.setattr(bench, "measured", lambda cfg: (p, types.SimpleNamespace(rows=rows)))
    bench.demo(bench.QUICK, tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"split after unit {split}: stage 1 = {', '.join(units[:split])}"
    (n,) = bench.QUICK.batches
    speedups = [float(x) for x in lines[2].split()[2:]]
    values = {r.id: r.values for r in rows}
    # printed with two decimals: equal within half of the last digit
    expected = [values[f"b{n}-{k}"]["speedup"] for k in ("sync", "async", "stream")]
    assert speedups == pytest.approx(expected, abs=0.005 + 1e-12)
    assert (tmp_path / "async-pipeline-demo.png").is_file()


def _torchrun(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    """``torchrun --standalone --nproc-per-node=2 -m reference.async_pipeline ARGS --out OUT``."""
    script = Path(sys.executable).with_name("torchrun")  # the venv's; else the same module
    torchrun = (
        [str(script)] if script.is_file() else [sys.executable, "-m", "torch.distributed.run"]
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "LANGUAGE": "en"}
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)  # torchrun sets them for its children
    command = [*torchrun, "--standalone", "--nproc-per-node=2", "-m", "reference.async_pipeline"]
    return subprocess.run(
        [*command, *args, "--out", str(out)], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.slow
def test_torchrun_ranks_are_the_two_stages_and_rank_0_writes(tmp_path: Path) -> None:
    done = _torchrun("--quick", "--threads", "1", out=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "async-pipeline-torchrun.json",
        "async-pipeline-torchrun.safetensors",
    ]  # rank 0's files only: no lock, no staging folder, nothing from rank 1
    assert done.stdout.count(f"wrote {tmp_path}") == 2  # rank 1 printed nothing
    from safetensors.torch import load_file

    got = load_file(str(tmp_path / "async-pipeline-torchrun.safetensors"))
    summary = json.loads((tmp_path / "async-pipeline-torchrun.json").read_text(encoding="utf-8"))
    quick = bench.QUICK
    assert summary["world_size"] == 2 and summary["backend"] == "gloo"
    assert {r["mode"] for r in summary["runs"]} == set(ap.MODES)
    unet = zoo.load_teacher()
    depth = sum(isinstance(m, torch.nn.Conv2d | torch.nn.Linear) for m in unet.modules())
    # float32 reassociation (this process's threads vs 1 per rank): ~eps per layer, adding up
    # along the network's depth and the DDIM steps; samples lie in [-1, 1], so atol ~ rtol
    tol = torch.finfo(torch.float32).eps * depth * quick.steps
    (n,) = quick.batches
    job = ap.Job(n, quick.steps, mode="stream", requests=2)
    for r in range(2):
        noise, labels = ap.job_noise(job, r)
        ref = solve(model_eps_fn(unet), noise, steps=quick.steps, labels=labels)
        assert (got[f"b{n}-stream-{r}"] - ref).abs().max() <= tol
        if r == 0:
            assert (got[f"b{n}-sync-0"] - ref).abs().max() <= tol
            assert (got[f"b{n}-async-0"] - ref).abs().max() > 100 * tol  # stale features used
    for row in summary["runs"]:
        assert len(row["compute_ms"]) == 2 and min(row["compute_ms"]) > 0
        if row["mode"] != "async":
            assert row["max_abs"] <= tol  # rank 0's own comparison agrees


def test_torchrun_world_size_other_than_2_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LANGUAGE", "en")
    monkeypatch.setenv("WORLD_SIZE", "3")
    for rank, says in (("0", True), ("2", False)):  # the same check on every rank: rank 0 says it
        monkeypatch.setenv("RANK", rank)
        with pytest.raises(SystemExit) as info:
            entry.main("reference.async_pipeline", ["--quick"])
        err = capsys.readouterr().err
        assert info.value.code == 2
        assert err.count("\n") == int(says)
        assert ("torchrun started 3 processes" in err) == says


def test_the_benchmark_is_refused_under_torchrun_before_the_lock(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_lock(path: Path) -> None:
        raise AssertionError("the lock was taken")

    monkeypatch.setattr(entry, "hold_lock", no_lock)
    monkeypatch.setenv("LANGUAGE", "en")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(SystemExit) as info:
        entry.main("reference.async_pipeline", ["--bench"])
    assert info.value.code == 2
    assert "--bench runs in one process; this is one of 2 ranks" in capsys.readouterr().err
