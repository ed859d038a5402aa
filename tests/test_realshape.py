"""The real-shape study: every technique through its public shape, timed against the plain
model; the quick configuration runs it on tiny production classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.harness.study import main as study_main
from reference.realshape import bench
from reference.realshape.__main__ import STUDY


def test_bad_options_are_refused_before_any_model_is_built(capsys: pytest.CaptureFixture) -> None:
    assert study_main(STUDY, ["--bench", "--models", "sd15,nope"]) == 2
    assert "unknown model 'nope'; known: sd15, dit-xl-2" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--techniques", "magic"]) == 2
    assert "unknown technique 'magic'" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--steps", "1"]) == 2


def test_the_flop_estimate_counts_what_a_loop_computes() -> None:
    from reference.zoo import shapes

    model = shapes.tiny("dit")
    inputs = shapes.example_inputs(model)
    one = bench.loop_gflops(bench.denoising_loop(model, inputs, 1))
    three = bench.loop_gflops(bench.denoising_loop(model, inputs, 3))
    assert one > 0 and three == pytest.approx(3 * one, rel=1e-9)


@pytest.mark.slow
def test_quick_study_times_every_technique_on_every_model_it_applies_to(tmp_path: Path) -> None:
    from reference.harness.cli import plan, run_benchmark

    p = plan(STUDY, bench, run_bench=True, quick=True, threads=None, out=tmp_path, overrides={})
    result, path = run_benchmark(p)
    data = result.to_dict()
    ids = {r["id"] for r in data["rows"]}
    expected = {f"{m}.baseline" for m in bench.QUICK.models} | {
        f"{m}.{t}"
        for m in bench.QUICK.models
        for t in bench.QUICK.techniques
        if bench.MODELS[m] in bench.VARIANTS[t][0]
    }
    assert ids == expected and path.is_file()
    for row in data["rows"]:
        v = row["values"]
        if row["role"] == "baseline":
            assert v["latency_ms"] > 0 and v["gflops"] > 0
            continue
        lo, hi = row["intervals"]["speedup"]
        assert lo <= v["speedup"] <= hi and v["latency_ms"] > 0
        if row["config"]["method"] == "deepcache" or row["config"]["method"] == "forecasting":
            assert v["flop_speedup"] > 1  # skipped calls count no FLOPs
        if row["config"]["method"] == "cfg":
            assert v["flop_speedup"] == pytest.approx(0.5, rel=0.05)  # two rows per call
    assert not data["standard"] and data["provenance"]["files"]
