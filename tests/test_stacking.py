"""reference.stacking: every compatible pair runs and is measured on the quick configuration,
every incompatible pair is refused with the matrix's line before a weight loads, one-element
stacks equal their technique's own path, the statistics, the command line and the check."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from glossary.resulttext import LANGS, missing_messages
from reference import compatibility as cm
from reference.harness import class_labels, make_noise, model_eps_fn, sample
from reference.harness.cost import LatencyComparison, LatencyStats
from reference.stacking import bench
from reference.stacking.compose import IncompatibleStack, Models, compose
from reference.stacking.elements import BY_SLUG, row_id
from reference.stacking.stats import Term, gain, pareto_front, speedup_product

REPO = Path(__file__).resolve().parent.parent
QUICK = bench.QUICK
ATOL = 1e-6
"""Same code, same process, same inputs: the two paths may differ only where a library picks a
different kernel order for a different call site (float32 rounding of the last digit)."""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The quick study's result (all ten composable elements, so all 35 compatible pairs)."""
    from reference.stacking.cli import main

    out = tmp_path_factory.mktemp("stacking-quick")
    assert main(["--quick", "--bench", "--out", str(out)]) == 0
    return json.loads((out / "stacking.json").read_text(encoding="utf-8"))


def _ids(a: str, b: str) -> tuple[str, str]:
    return BY_SLUG[a].id, BY_SLUG[b].id


@pytest.mark.slow
@pytest.mark.xdist_group("stacking-quick")  # one quick study for its four readers
def test_every_compatible_pair_is_measured_with_intervals(study: dict[str, Any]) -> None:
    rows = {r["id"]: r for r in study["rows"]}
    for a, b in cm.compatible_pairs():
        r = rows[row_id(_ids(a, b))]
        assert r["config"]["method"] == "pair" and r["role"] == "technique"
        for key in ("speedup", "fd_ratio", "interaction", "control_latency_ratio"):
            value, (lo, hi) = r["values"][key], r["intervals"][key]
            assert math.isfinite(value) and lo <= value <= hi, (r["id"], key)
        assert r["config"]["control"] in rows
        assert rows[r["config"]["control"]]["role"] == "control"


@pytest.mark.slow
@pytest.mark.xdist_group("stacking-quick")  # one quick study for its four readers
def test_the_quick_result_is_valid_and_speaks_three_languages(study: dict[str, Any]) -> None:
    from reference.harness.integrity import audit, schema_problems

    assert study["schema_version"] == 4  # sealed, like every result of the technique command line
    assert schema_problems(study) == [] and audit(study).problems == []
    for lang in LANGS:
        assert missing_messages(study, lang) == []
    assert study["standard"] is False and study["quick"] is True
    s = study["settings"]
    n = len(s["elements"])
    assert all(len(s[k]) == n for k in ("compatible", "reasons", "interaction", "element_slugs"))
    assert set(s["pareto"]) <= {r["id"] for r in study["rows"]}
    files = study["provenance"]["files"]
    assert "reference/compatibility.py" in files
    assert "reference/feature_caching/deepcache.py" in files  # a member's package is hashed


@pytest.mark.slow
@pytest.mark.xdist_group("stacking-quick")
def test_exact_elements_inherit_only_after_the_check(study: dict[str, Any]) -> None:
    for r in study["rows"]:
        members = r["config"].get("members", [])
        if {"fusion", "compile"} & set(members):
            assert r["values"]["max_abs_vs_parent"] <= 1e-3
            assert "quality_of" in r["config"]


@pytest.mark.parametrize(("a", "b"), [(a, b) for a, b, v in cm.all_pairs() if not v.compatible])
def test_every_incompatible_pair_is_refused_with_its_line_before_loading(a: str, b: str) -> None:
    from reference.zoo.store import LOADED_WEIGHTS

    before = dict(LOADED_WEIGHTS)
    with pytest.raises(IncompatibleStack) as info:
        compose(_ids(a, b), QUICK)
    assert str(info.value) == cm.verdict(a, b).line
    assert before == LOADED_WEIGHTS


def _same(x: torch.Tensor, y: torch.Tensor) -> None:
    assert x.shape == y.shape
    assert torch.allclose(x, y, atol=ATOL, rtol=0)


@pytest.fixture(scope="module")
def models() -> Models:
    return Models(QUICK)


N = 4


def _run(members: tuple[str, ...], models: Models) -> torch.Tensor:
    p = compose(members, QUICK)
    return p.run(models, make_noise(N, 3, p.noise_shape), class_labels(N), 3)


@pytest.mark.slow
def test_one_element_stacks_equal_their_technique_paths(models: Models) -> None:
    from reference import zoo
    from reference.accelerate_method import StepForecastConfig, apply_step_forecasting
    from reference.feature_caching import DeepCacheEps
    from reference.harness.ode import solve
    from reference.timestep_distillation import GridDDIMScheduler, load_student

    teacher, noise, y = models.base("teacher"), make_noise(N, 3), class_labels(N)
    steps = QUICK.base_steps
    _same(
        _run((), models),
        solve(model_eps_fn(teacher), noise, sampler="ddim", steps=steps, labels=y),
    )
    dc = DeepCacheEps(teacher, QUICK.cache_interval, QUICK.cache_branch)
    _same(
        _run(("deepcache",), models),
        solve(dc, noise, sampler="ddim", steps=steps, labels=y),
    )
    fc = apply_step_forecasting(teacher, StepForecastConfig(*QUICK.forecast, "newton"))
    _same(
        _run(("forecast",), models),
        solve(fc, noise, sampler="ddim", steps=steps, labels=y),
    )
    _same(
        _run(("solver",), models),
        solve(
            model_eps_fn(teacher), noise, sampler=QUICK.solver, steps=QUICK.solver_steps, labels=y
        ),
    )
    grid = GridDDIMScheduler(zoo.teacher_scheduler_config())
    student = model_eps_fn(load_student(QUICK.student_steps).eval())
    _same(
        _run(("student",), models),
        sample(student, grid, noise, steps=QUICK.student_steps, labels=y),
    )


@pytest.mark.slow
def test_guidance_sits_inside_the_forecaster(models: Models) -> None:
    from reference.accelerate_method import StepForecastConfig, apply_step_forecasting
    from reference.classifier_guidance import ClassifierGuidanceConfig, apply_classifier_guidance
    from reference.harness.ode import solve

    teacher, noise, y = models.base("teacher"), make_noise(N, 3), class_labels(N)
    cg = ClassifierGuidanceConfig(models.classifier(), models.alphas_cumprod(), QUICK.cg_scale)
    eps = apply_step_forecasting(
        apply_classifier_guidance(teacher, cg), StepForecastConfig(*QUICK.forecast, "newton")
    )
    want = solve(eps, noise, sampler="ddim", steps=QUICK.base_steps, labels=y)
    _same(_run(("forecast", "guidance"), models), want)


@pytest.mark.slow
def test_compiled_blocks_match_eager_and_never_fall_back_silently(models: Models) -> None:
    import torch._dynamo

    plain = _run(("fusion",), models)
    compiled = _run(("fusion", "compile"), models)
    # compile reorders float sums: 1e-4 on images in [-1, 1] is far above rounding, far below sight
    assert (compiled - plain).abs().max().item() < 1e-4
    assert torch._dynamo.config.fail_on_recompile_limit_hit is True


def _lat(times: dict[str, list[float]]) -> LatencyComparison:
    from reference.harness.cost import _stats

    stats: dict[str, LatencyStats] = {k: _stats(v) for k, v in times.items()}
    base = stats["base"].median_ms
    return LatencyComparison(
        "base", stats, {k: base / s.median_ms for k, s in stats.items()}, 1, len(times["base"]), 0
    )


def test_one_term_product_is_the_harness_speedup_interval() -> None:
    lat = _lat({"base": [10, 11, 9, 12, 10, 13], "a": [5, 6, 5, 7, 4, 6]})
    value, ci = speedup_product([Term(lat, "a", "base")])
    assert value == pytest.approx(lat.speedup["a"])
    assert ci == pytest.approx(lat.speedup_interval("a"))


def test_independent_savings_have_an_interaction_of_one() -> None:
    base = [100.0, 104.0, 98.0, 101.0, 99.0, 103.0, 100.5, 97.0]
    a = [t / 2 for t in base]
    b = [t / 3 for t in base]
    lat = _lat({"base": base, "a": a, "b": b, "ab": [t / 6 for t in base]})
    value, (lo, hi) = speedup_product(
        [Term(lat, "ab", "base"), Term(lat, "a", "base", -1), Term(lat, "b", "base", -1)]
    )
    assert value == pytest.approx(1.0) and lo <= 1.0 <= hi


def test_pareto_front_and_gain() -> None:
    pts = {"base": (1.0, 1.0), "fast": (0.2, 1.5), "good": (0.5, 0.9), "bad": (0.6, 1.2)}
    assert pareto_front(pts) == ["fast", "good"]
    assert gain(2.0, 1.0) == pytest.approx(math.log(2) / math.log(1.01))
    assert gain(2.0, 2.0) == pytest.approx(1.0)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reference.stacking", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "GLOSSARY_UI_LANG": "en", "OMP_NUM_THREADS": "1"},
        timeout=300,
    )


def test_list_prints_every_pair_without_torch() -> None:
    out = _cli("--list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 66 and sum(line.startswith("x ") for line in lines) == 31


def test_an_incompatible_stack_is_one_error_line() -> None:
    out = _cli("--stack", "forecast,deepcache")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].endswith(cm.REASONS["one-skipper"])


def test_check_reports_a_missing_result(tmp_path: Path) -> None:
    from reference.stacking.provenance import check_stacking

    lines = check_stacking(tmp_path)
    assert len(lines) == 1 and "missing" in lines[0] and "glossary bench stacking" in lines[0]


@pytest.mark.slow
@pytest.mark.xdist_group("stacking-quick")
def test_check_names_a_changed_member_file(study: dict[str, Any], tmp_path: Path) -> None:
    from reference.stacking.provenance import check_stacking

    edited = json.loads(json.dumps(study))
    edited["provenance"]["files"]["reference/feature_caching/deepcache.py"] = "0" * 64
    edited["provenance"]["files"]["reference/feature_caching/gone.py"] = "0" * 64
    del edited["provenance"]["files"]["reference/compatibility.py"]
    (tmp_path / "stacking.json").write_text(json.dumps(edited), encoding="utf-8")
    lines = check_stacking(tmp_path)
    assert any("deepcache.py changed since it was measured" in line for line in lines)
    assert any("feature_caching/gone.py no longer exists" in line for line in lines)
    # a file the study did not record could not have run in it: no line names it
    assert not any("compatibility.py" in line for line in lines)
