"""The machine a benchmark runs on: the idle-machine gate, the launcher rendezvous and its
refusal (the options' checks and the lock are the entry's, tested with it)."""

from __future__ import annotations

import os

import pytest

from reference.harness import machine as cli


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
    """A benchmark's command line under torchrun: refused before any work, said once (rank 0)."""
    from reference.harness import entry

    monkeypatch.setenv("LANGUAGE", "en")
    monkeypatch.setenv("WORLD_SIZE", "2")
    for rank, lines in (("0", 1), ("1", 0)):
        monkeypatch.setenv("RANK", rank)
        with pytest.raises(SystemExit) as info:
            entry.main("reference.feature_caching", ["--bench", "--quick"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and err.count("\n") == lines
        assert ("--bench runs in one process; this is one of 2 ranks" in err) == bool(lines)
