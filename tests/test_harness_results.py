"""Result files: schema round trip, strict validation, provenance, staleness, the bench runner."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from reference.harness import results as R
from reference.harness import runner

PLOTS = "reference/harness/plots.py"  # an existing repository file used as "technique source"


def make_result(slug: str = "feature-caching", quick: bool = False) -> R.BenchmarkResult:
    return R.BenchmarkResult(
        slug=slug,
        module=runner.TECHNIQUES.get(slug, "reference.harness.plots"),
        title="A test result",
        quick=quick,
        settings={"batch": 8, "steps": 5, "threads": 2},
        metrics=R.metrics("latency_ms", "fd_digits"),
        rows=[
            R.Row(
                "baseline", "baseline", {"latency_ms": 10.0, "fd_digits": 3.0}, {"latency_ms": 1.0}
            ),
            R.Row("technique", "technique", {"latency_ms": 5.0, "fd_digits": 3.3}),
            R.Row("control", "control", {"latency_ms": 5.0, "fd_digits": None}),
        ],
        headline=R.Headline(2.0, 2.5, None, 1.1, "fd_digits"),
        aims=[R.aim(">= 1.5x faster", 2.0, 1.5, ">=")],
        notes=["tiny"],
        figures=[],
        provenance=R.provenance([R.REPO_ROOT / PLOTS], command="pytest"),
    )


def test_round_trip_through_json_is_exact(tmp_path: Path) -> None:
    result = make_result()
    path = R.write_result(result, tmp_path)
    assert path == tmp_path / "feature-caching.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == [
        "schema_version", "slug", "module", "title", "quick", "settings", "metrics", "rows",
        "headline", "aims", "notes", "figures", "provenance",
    ]  # fmt: skip
    assert "spread" not in data["rows"][1]
    again = R.read_result(path)
    assert again == result
    assert again.to_dict() == data


def test_provenance_records_sources_and_environment() -> None:
    prov = make_result().provenance
    assert list(prov.source_sha256) == [PLOTS]
    assert prov.source_sha256[PLOTS] == R.sha256_file(R.REPO_ROOT / PLOTS)
    assert prov.command == "pytest" and prov.threads >= 1
    assert prov.date.endswith("Z") and len(prov.commit) in (40, len("unknown"))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("title"), "result: missing key 'title'"),
        (lambda d: d.update(extra=1), "result: unknown key 'extra'"),
        (lambda d: d.update(schema_version=2), "schema_version: must be 1"),
        (lambda d: d.update(slug="Feature Caching"), "slug:"),
        (lambda d: d["rows"][0].update(role="winner"), "rows[0].role"),
        (lambda d: d["rows"][0]["values"].update(speed=1.0), "rows[0].values.speed: not declared"),
        (lambda d: d["rows"][0]["spread"].update(latency_ms=None), "rows[0].spread.latency_ms"),
        (lambda d: d.update(rows=d["rows"][1:]), "needs at least one 'baseline' row"),
        (lambda d: d["metrics"]["fd_digits"].update(better="smaller"), "better"),
        (lambda d: d["headline"].update(quality_metric="psnr"), "headline.quality_metric"),
        (lambda d: d["aims"][0].update(met=False), "aims[0].met: contradicts"),
        (lambda d: d.update(figures=["../x.png"]), "figures:"),
        (lambda d: d["provenance"].update(threads="2"), "provenance.threads"),
        (lambda d: d["provenance"]["source_sha256"].update(x="abc"), "sha256 hex"),
    ],
)
def test_validator_rejects_each_schema_violation(mutate, message: str) -> None:
    data = make_result().to_dict()
    assert R.validate_result(data) == []
    mutate(data)
    problems = R.validate_result(data)
    assert any(message in p for p in problems), problems
    with pytest.raises(ValueError):
        R.BenchmarkResult.from_dict(data)


def test_nan_is_rejected_before_writing(tmp_path: Path) -> None:
    result = make_result()
    result.rows[0].values["fd_digits"] = float("nan")
    with pytest.raises(ValueError, match="finite number"):
        R.write_result(result, tmp_path)
    assert not list(tmp_path.iterdir())


def test_check_results_reports_missing_stale_and_quick(tmp_path: Path) -> None:
    registry = {"fake-technique": "reference.harness.plots", "later": "reference.not_written_yet"}
    problems = R.check_results(registry, tmp_path)
    assert problems == [
        "fake-technique: "
        f"{tmp_path / 'fake-technique.json'} is missing; run: glossary bench fake-technique"
    ]
    good = make_result("fake-technique")
    R.write_result(good, tmp_path)
    assert R.check_results(registry, tmp_path) == []

    stale = make_result("fake-technique")
    stale.provenance.source_sha256[PLOTS] = "0" * 64
    R.write_result(stale, tmp_path)
    (line,) = R.check_results(registry, tmp_path)
    assert line.startswith(f"fake-technique: stale result: {PLOTS} changed")

    R.write_result(make_result("fake-technique", quick=True), tmp_path)
    assert any("--quick" in p for p in R.check_results(registry, tmp_path))


def test_runner_rejects_an_unknown_technique(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["no-such-technique"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown technique 'no-such-technique'" in err[0]


def test_runner_runs_a_benchmark_and_writes_quick_results_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "fake_bench.py"
    source.write_text(
        "def benchmark(quick):\n"
        "    result = make_result('fake-technique', quick=quick)\n"
        "    result.module = __name__\n"
        "    return result\n",
        encoding="utf-8",
    )
    spec = importlib.util.spec_from_file_location("reference._fake_bench", source)
    module = importlib.util.module_from_spec(spec)
    module.make_result = make_result
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "reference._fake_bench", module)
    monkeypatch.setattr(runner, "TECHNIQUES", {"fake-technique": "reference._fake_bench"})
    out = tmp_path / "out"
    monkeypatch.setenv(R.OUT_ENV, str(out))
    assert runner.main(["--quick"]) == 0
    written = R.read_result(out / "fake-technique.json")
    assert written.quick is True and written.module == "reference._fake_bench"
    table = capsys.readouterr().out
    assert "fake-technique" in table and "2.00x / 2.50x" in table and "1/1" in table
    # --check only looks at committed results: a quick run never satisfies it
    monkeypatch.delenv(R.OUT_ENV)
    monkeypatch.setattr(R, "RESULTS_DIR", tmp_path / "committed")
    assert runner.main(["--check"]) == 1
    assert "is missing" in capsys.readouterr().err


def test_output_dir_keeps_quick_results_away_from_committed_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(R.OUT_ENV, raising=False)
    assert R.output_dir(False) == R.RESULTS_DIR
    assert R.output_dir(True) != R.RESULTS_DIR


def test_every_public_harness_name_resolves() -> None:
    import reference.harness as harness

    for name in harness.__all__:
        assert getattr(harness, name) is not None, name
    with pytest.raises(AttributeError):
        _ = harness.no_such_name
