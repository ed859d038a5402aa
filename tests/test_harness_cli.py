"""The technique command line: argument checks before any work, the idle-machine gate, the lock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reference.harness import cli
from reference.registry import get


@pytest.fixture
def bench():  # type: ignore[no-untyped-def]
    return cli.contract(get("feature-caching"))


def test_plan_checks_threads_out_and_options(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    technique = get("feature-caching")
    kwargs = {"run_bench": True, "quick": False, "threads": None, "out": None}
    with pytest.raises(cli.UsageError, match="--threads must be >= 1"):
        cli.plan(technique, bench, **{**kwargs, "threads": 0}, overrides={})
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(cli.UsageError, match="is not a folder"):
        cli.plan(technique, bench, **{**kwargs, "out": a_file}, overrides={})
    with pytest.raises(cli.UsageError, match="--steps must be >= 1"):
        cli.plan(technique, bench, **kwargs, overrides={"steps": 0})
    same = cli.plan(technique, bench, **kwargs, overrides={"steps": bench.FULL.steps})
    assert same.standard and same.options == {}  # the default value given explicitly is standard


def test_an_empty_out_path_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main("reference.feature_caching", ["--bench", "--out", ""])
    assert info.value.code == 2 and "--out: empty path" in capsys.readouterr().err


def test_the_idle_gate_waits_then_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = iter([3.0, 2.0, 1.2])
    monkeypatch.setattr(os, "getloadavg", lambda: (next(loads), 0.0, 0.0))
    monkeypatch.setattr("time.sleep", lambda s: None)
    assert cli.wait_until_idle(1.5, timeout=60) == 1.2
    monkeypatch.setattr(os, "getloadavg", lambda: (4.0, 4.0, 4.0))
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    with pytest.raises(cli.BusyMachine, match=r"load average 4\.00 > 1\.50"):
        cli.wait_until_idle(1.5, timeout=60)


def test_max_load_default_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cli.MAX_LOAD_ENV, raising=False)
    assert cli.max_load() == max(1.0, 0.75 * (os.cpu_count() or 1))
    monkeypatch.setenv(cli.MAX_LOAD_ENV, "4")
    assert cli.max_load() == 4.0
    monkeypatch.setenv(cli.MAX_LOAD_ENV, "lots")
    with pytest.raises(cli.UsageError, match="not a number"):
        cli.max_load()


def test_the_lock_records_its_holder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli, "ARTIFACTS", tmp_path)
    monkeypatch.setattr(cli, "LOCK_PATH", tmp_path / ".bench.lock")
    with cli.bench_lock():
        assert (tmp_path / ".bench.lock").read_text() == str(os.getpid())


def test_launched_rank_reads_the_env_rendezvous_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert cli.launched_rank() is None  # both variables, or no launcher
    monkeypatch.setenv("RANK", "1")
    assert cli.launched_rank() == (1, 2)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(cli.UsageError, match="must be integers"):
        cli.launched_rank()


def test_bench_under_a_launcher_is_refused_by_every_rank_said_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LANGUAGE", "en")
    monkeypatch.setenv("WORLD_SIZE", "2")
    for rank, lines in (("0", 1), ("1", 0)):
        monkeypatch.setenv("RANK", rank)
        with pytest.raises(SystemExit) as info:
            cli.main("reference.feature_caching", ["--bench", "--quick"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and err.count("\n") == lines
        assert ("--bench cannot run under a launcher with 2 ranks" in err) == bool(lines)
