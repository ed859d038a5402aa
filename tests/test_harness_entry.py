"""The command line of ported benchmarks (`reference.harness.entry`), on a fake technique.

The fake (``tests/fixtures/entry_fake``) declares contract 2 and imports no torch; here its
registry lookup and the torch-bound steps (threads, provenance) are replaced by fakes, in
process through ``monkeypatch`` and in a fresh interpreter through
``tests/fixtures/entry_fake_launch.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference.harness import entry, integrity
from reference.harness import machine as cli
from reference.registry import REFERENCE_DIR

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LAUNCH = FIXTURES / "entry_fake_launch.py"
PROG = "python -m entry_fake"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The fake bench, imported afresh, with the registry and torch-bound steps faked."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    for name in [m for m in sys.modules if m == "entry_fake" or m.startswith("entry_fake.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(entry, "target_of", lambda p: entry.Target("fake-tech", p, None))
    monkeypatch.setattr(entry, "set_threads", lambda n: None)
    monkeypatch.setattr(entry, "recording_for", lambda p: _recording())
    monkeypatch.setattr(entry, "provenance_for", lambda p, record: {"fake": True})
    monkeypatch.setattr(entry, "installed", lambda: False)
    # the fake's body and provenance are not schema-valid: the integrity check is tested on a
    # real body in test_result_integrity, and its wiring here in test_the_written_result_*
    monkeypatch.setattr(integrity, "check_result", lambda data, shown: [])
    import entry_fake.bench as bench

    yield bench
    for name in [m for m in sys.modules if m == "entry_fake" or m.startswith("entry_fake.")]:
        del sys.modules[name]


@contextlib.contextmanager
def _recording() -> Iterator[dict[str, Any]]:
    yield {"load_end": [0.0, 0.0, 0.0]}


def run(*argv: str) -> tuple[int, str, str]:
    """``main`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    redirect = contextlib.redirect_stdout(out), contextlib.redirect_stderr(err)
    with redirect[0], redirect[1], pytest.raises(SystemExit) as info:
        entry.main("entry_fake", list(argv))
    code = info.value.code
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


def one_error(err: str) -> str:
    """The text of the one stderr line (asserting there is exactly one, and no traceback)."""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    prefix = f"{PROG}: error: "
    assert err.startswith(prefix), err
    return err[len(prefix) : -1]


# --- every option checked before any work -----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--n-quality", "10"], "expected a whole number from 20 to 4096, got '10'"),
        (["--n-quality", "10**13"], "expected a whole number from 20 to 4096"),
        (["--n-quality", "21"], "--n-quality must be even (pairs), got 21"),
        (["--n-quality", "٣٣"], "expected a whole number"),  # int() would take Arabic digits
        (["--seeds", "0,99999999999999999999"], "from 0 to 4294967295"),
        (["--seeds", "0,4294967296"], "from 0 to 4294967295"),
        (["--seeds", "3,3"], "a value is given twice"),
        (["--seeds", "3"], "expected 2 to 64 values, got 1"),
        (["--steps", "10**30"], "expected a whole number from 1 to 1000"),
        (["--steps=0,-1"], "expected a whole number from 1 to 1000, got '0'"),
        (["--steps", "5,,6"], "expected values separated by commas"),
        (["--threads", "100000"], "argument --threads: expected a whole number from 1 to"),
        (["--threads", "0"], "argument --threads: expected a whole number from 1 to"),
        (["--threshold", "inf"], "expected a finite number from 0 to 1, got 'inf'"),
        (["--threshold", "nan"], "expected a finite number"),
        (["--threshold", "1e308"], "expected a finite number from 0 to 1"),
        (["--elements", "solver,solver,deepcache"], "'solver' is given twice"),
        (["--elements", "bogus"], "unknown value 'bogus'; valid: solver, deepcache, fusion"),
        (["--backend", "Not A Name"], "expected a lowercase name"),
        (["--quik"], "unrecognized arguments: --quik"),
        (["--ben"], "unrecognized arguments: --ben"),  # no prefix abbreviation
        (["--seeds"], "argument --seeds: expected one argument"),
        (["--out", ""], "argument --out: empty path"),
    ],
)
def test_a_bad_option_is_one_line_exit_2_and_no_work(
    fake: ModuleType, tmp_path: Path, args: list[str], said: str
) -> None:
    code, out, err = run("--bench", "--quick", "--out", str(tmp_path / "o"), *args)
    assert (code, out, fake.CALLS) == (2, "", [])
    assert said in one_error(err)
    assert not (tmp_path / "o").exists()  # nothing created either


KNOWN = {"--bench", "--quick", "--threads", "--out", "--traceback", "--help", "-h"}
KNOWN |= {"--n-quality", "--seeds", "--steps", "--threshold", "--elements", "--backend"}
NOT_A_FLAG = st.text(max_size=30).filter(lambda s: not s.startswith("-"))
WHOLE = re.compile(r"[+-]?[0-9]+")
NOT_A_NUMBER = st.text(min_size=1, max_size=30).filter(lambda s: not WHOLE.fullmatch(s.strip()))
NOT_A_LIST = st.text(max_size=30).filter(
    lambda s: not all(WHOLE.fullmatch(x.strip()) for x in s.split(","))
)
OUT_OF_RANGE = st.one_of(st.integers(max_value=19), st.integers(min_value=4097)).map(str)
TWICE = st.lists(st.integers(0, 1000), min_size=1, max_size=5).map(
    lambda xs: ",".join(map(str, [*xs, xs[0]]))
)
NOT_IN_0_1 = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "NaN", "1e999", "-0.5", "1.0001"]),
    st.floats(allow_nan=False).filter(lambda x: not 0 <= x <= 1).map(repr),
)
BAD = st.one_of(
    st.tuples(st.from_regex(r"--[a-z][a-z0-9-]{0,20}", fullmatch=True), NOT_A_FLAG).filter(
        lambda pair: pair[0] not in KNOWN
    ),
    st.tuples(st.just("--n-quality"), st.one_of(OUT_OF_RANGE, NOT_A_NUMBER)),
    st.tuples(st.sampled_from(["--seeds", "--steps"]), st.one_of(TWICE, NOT_A_LIST)),
    st.tuples(st.just("--seeds"), st.integers(min_value=2**32).map(lambda v: f"0,{v}")),
    st.tuples(st.just("--steps"), st.integers(max_value=0).map(lambda v: f"5,{v}")),
    st.tuples(st.just("--threads"), st.one_of(st.integers(max_value=0).map(str), NOT_A_NUMBER)),
    st.tuples(st.just("--threshold"), NOT_IN_0_1),
    st.tuples(
        st.just("--elements"),
        st.text(max_size=20).filter(
            lambda s: "," not in s and s.strip() not in ("solver", "deepcache", "fusion")
        ),
    ),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(bad=BAD, joined=st.booleans(), bench=st.booleans())
def test_random_bad_options_are_refused_before_any_work(
    fake: ModuleType, tmp_path: Path, bad: tuple[str, str], joined: bool, bench: bool
) -> None:
    flag, value = bad
    args = [f"{flag}={value}"] if joined else [flag, value]
    mode = ["--bench", "--quick"] if bench else []
    code, out, err = run(*mode, "--out", str(tmp_path / "o"), *args)
    assert (code, out, fake.CALLS) == (2, "", [])
    one_error(err)
    assert not (tmp_path / "o").exists()


def test_out_must_be_a_folder_outside_the_package(fake: ModuleType, tmp_path: Path) -> None:
    a_file = tmp_path / "a\nfile"
    a_file.write_text("x")
    code, _, err = run("--bench", "--quick", "--out", str(a_file))
    assert code == 2 and "a\\nfile: exists and is not a folder" in one_error(err)
    code, _, err = run("--bench", "--quick", "--out", str(REFERENCE_DIR / "results" / "x"))
    assert code == 2 and "inside the package" in one_error(err)
    assert fake.CALLS == []


def test_the_compile_backend_is_checked_late_and_against_torch(
    fake: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str, ...]] = []
    dynamo = ModuleType("torch._dynamo")
    dynamo.list_backends = lambda exclude_tags=(): asked.append(exclude_tags) or ["eager"]  # type: ignore[attr-defined]
    torch = ModuleType("torch")
    torch._dynamo = dynamo  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._dynamo", dynamo)
    out = str(tmp_path / "o")
    code, _, err = run("--bench", "--quick", "--out", out, "--backend", "bogus", "--seeds", "1,1")
    assert code == 2 and "--seeds" in one_error(err) and asked == []  # cheap checks first
    code, _, err = run("--bench", "--quick", "--out", out, "--backend", "bogus")
    assert code == 2 and one_error(err) == "--backend: unknown backend 'bogus'; valid: eager"
    assert asked == [()] and fake.CALLS == []  # every backend, debug ones included


def test_the_seed_bound_is_every_generators_range() -> None:
    import numpy as np
    import torch

    np.random.RandomState(entry.SEED_MAX)  # the largest seed numpy's legacy generator takes, (1)
    with pytest.raises(ValueError):
        np.random.RandomState(entry.SEED_MAX + 1)
    np.random.default_rng(entry.SEED_MAX)
    assert torch.Generator().manual_seed(entry.SEED_MAX).initial_seed() == entry.SEED_MAX


def test_a_list_of_numbers_keeps_its_open_ends_and_may_be_empty() -> None:
    import argparse

    ratios = entry.reals("ratios", low=0.0, high=1.0, open_low=True, open_high=True, min_count=0)
    assert ratios.parse("0.25, 0.5") == (0.25, 0.5) and ratios.parse(" ") == ()
    for bad, says in [
        ("0", r"in \(0, 1\)"),
        ("1", r"in \(0, 1\)"),
        ("0.5,0.5", "given twice"),
        ("nan", "finite number"),
        ("0.5,,0.2", "separated by commas"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=says):
            ratios.parse(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="separated by commas, got ''"):
        entry.reals("scales", low=0.0, high=10.0).parse("")
    with pytest.raises(ValueError, match="finite"):
        entry.reals("x", low=0.0, high=float("inf"))


def test_a_switch_reads_yes_and_no_only() -> None:
    import argparse

    compile_ = entry.switch("compile")
    assert [compile_.parse(w) for w in ("yes", "No", "on", "false")] == [True, False, True, False]
    with pytest.raises(argparse.ArgumentTypeError, match="expected yes or no, got 'maybe'"):
        compile_.parse("maybe")


def test_help_prints_the_whole_help(fake: ModuleType) -> None:
    code, out, err = run("--help")
    assert (code, err) == (0, "")
    assert out.startswith("usage: python -m entry_fake") and "--seeds SEED,SEED,..." in out
    assert "--threads N" in out and "--traceback" in out


def test_an_unregistered_package_is_one_line(
    fake: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entry, "target_of", lambda p: None)
    code, _, err = run("--bench")
    assert code == 2 and "entry_fake is not a registered technique" in one_error(err)


# --- the run ----------------------------------------------------------------------------------


def test_a_run_writes_the_result_then_its_figures_and_no_staging(
    fake: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run("--bench", "--quick", "--out", str(tmp_path), "--seeds", "4,5")
    assert (code, err) == (0, ""), err
    result = json.loads((tmp_path / "fake-tech.json").read_text())
    assert list(result)[:6] == ["schema_version", "slug", "module", "standard", "quick", "options"]
    assert list(result)[6:14] == list(entry.BODY_KEYS)
    assert result["schema_version"] == 4 and result["module"] == "entry_fake"
    assert (result["standard"], result["quick"], result["options"]) == (
        False,
        True,
        {"seeds": [4, 5]},
    )
    assert result["provenance"] == {"fake": True} and list(result)[-1] == "digest"
    assert result["digest"] == integrity.digest(result)  # sealed by `finish`
    assert (tmp_path / "fake-tech-fig.png").read_bytes() == b"not really a png"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake-tech-fig.png", "fake-tech.json"]
    assert fake.CALLS[0][1].seeds == (4, 5) and "fake-tech.json" in out


def test_the_written_result_must_pass_the_integrity_check(
    fake: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.undo()  # the real integrity check, with the fake's steps faked again below
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setattr(entry, "target_of", lambda p: entry.Target("fake-tech", p, None))
    monkeypatch.setattr(entry, "set_threads", lambda n: None)
    monkeypatch.setattr(entry, "recording_for", lambda p: _recording())
    monkeypatch.setattr(entry, "provenance_for", lambda p, record: {"fake": True})
    monkeypatch.setattr(entry, "installed", lambda: False)
    code, _, err = run("--bench", "--quick", "--out", str(tmp_path))
    assert code == 1 and "is not valid under any of the given schemas" in one_error(err)
    assert list(tmp_path.iterdir()) == []  # nothing written, no staging left


def test_a_failure_is_one_line_and_leaves_the_previous_result(
    fake: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "fake-tech.json").write_text("previous")
    for threshold, said in (("0.25", "RuntimeError: boom"), ("0.75", "not finite JSON")):
        code, _, err = run("--bench", "--quick", "--out", str(tmp_path), "--threshold", threshold)
        assert code == 1 and said in one_error(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake-tech.json"]
    assert (tmp_path / "fake-tech.json").read_text() == "previous"
    code, _, err = run(
        "--bench", "--quick", "--out", str(tmp_path), "--threshold", "0.25", "--traceback"
    )
    assert code == 1 and "Traceback" in err and "RuntimeError: boom" in err.splitlines()[-1]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_staging_of_a_dead_process_is_removed(fake: ModuleType, tmp_path: Path) -> None:
    dead = tmp_path / f".staging-{_dead_pid()}-abc123"
    live = tmp_path / f".staging-{os.getpid()}-def456"
    old_style = tmp_path / ".staging-xyz"  # the old command line's name: no pid, kept
    for folder in (dead, live, old_style):
        (folder / "partial.png").parent.mkdir()
        (folder / "partial.png").write_bytes(b"half")
    assert run("--bench", "--quick", "--out", str(tmp_path))[0] == 0
    assert not dead.exists() and live.exists() and old_style.exists()


def test_an_installed_package_writes_where_its_user_is(
    fake: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entry, "installed", lambda: True)
    monkeypatch.setattr(cli, "wait_until_idle", lambda limit: 0.0)
    monkeypatch.chdir(tmp_path)
    code, _, err = run("--bench")
    said = one_error(err)
    assert code == 2 and "reference/results/" in said and "glossary bench fake-tech" in said
    assert fake.CALLS == [] and list(tmp_path.iterdir()) == []
    assert run("--bench", "--seeds", "7,8")[0] == 0  # a timed non-standard run
    folder = tmp_path / "artifacts" / "fake-tech"
    assert json.loads((folder / "fake-tech.json").read_text())["options"] == {"seeds": [7, 8]}
    assert (tmp_path / "artifacts" / ".bench.lock").read_text() == str(os.getpid())


def test_a_timed_run_waits_for_an_idle_machine_under_the_lock(
    fake: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waited: list[float] = []
    monkeypatch.setattr(cli, "LOCK_PATH", tmp_path / "lock" / ".bench.lock")
    monkeypatch.setattr(cli, "wait_until_idle", lambda limit: waited.append(limit) or 0.0)
    monkeypatch.setenv(cli.MAX_LOAD_ENV, "1.5")
    busy = {"load_end": [9.0, 0.0, 0.0]}  # another job competed: more than 1.5 + 2 threads
    monkeypatch.setattr(entry, "recording_for", lambda p: contextlib.nullcontext(busy))
    out = tmp_path / "out"
    code, _, err = run("--bench", "--seeds", "3,4", "--out", str(out))
    assert code == 1 and "BusyMachine: the load average rose to 9.00" in one_error(err)
    assert waited == [1.5] and list(out.iterdir()) == []  # nothing written, no staging
    assert (tmp_path / "lock" / ".bench.lock").read_text() == str(os.getpid())


def test_the_recorded_command_reproduces_the_run(fake: ModuleType, tmp_path: Path) -> None:
    target = entry.Target("fake-tech", "entry_fake", None)
    p = entry.plan(
        target, fake, run_bench=True, quick=True, threads=1, out=tmp_path,
        overrides={"seeds": (4, 5), "threshold": 0.5},
    )  # fmt: skip
    assert p.options == {"seeds": (4, 5)}  # the default threshold is no option
    assert entry.command_of(p) == "python -m entry_fake --bench --quick --threads 1 --seeds 4,5"
    assert (p.standard, p.lock, p.out) == (False, None, tmp_path)


# --- interruptions and pipes, in a fresh interpreter ------------------------------------------


def launch(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    environ = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **env}
    return subprocess.Popen(
        [sys.executable, str(LAUNCH), *args],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(mark: Path, proc: subprocess.Popen[str]) -> None:
    """Until ``mark`` exists (the child reached the point to interrupt)."""
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.02)


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_a_signal_while_measuring_removes_the_staging_folder(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    mark, out = tmp_path / "measuring", tmp_path / "out"
    proc = launch(tmp_path, "--bench", "--quick", "--out", str(out), ENTRY_FAKE_MARK=str(mark))
    _wait_for(mark, proc)
    staging = Path(mark.read_text())
    assert staging.is_dir() and staging.parent == out
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=30)
    assert (proc.returncode, stdout, stderr) == (code, "", f"{PROG}: {said}\n")
    assert list(out.iterdir()) == []  # no staging folder, no figure, no result


def test_sigint_during_the_imports_is_one_line_130(tmp_path: Path) -> None:
    mark = tmp_path / "importing"
    proc = launch(tmp_path, "--bench", "--quick", ENTRY_FAKE_IMPORT_MARK=str(mark))
    _wait_for(mark, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert (proc.returncode, stderr) == (130, f"{PROG}: interrupted\n")


def test_a_refused_command_has_loaded_no_torch(tmp_path: Path) -> None:
    # refused by the last cheap check, Config.validate(), after every import of the command line
    proc = launch(tmp_path, "--bench", "--n-quality", "21", ENTRY_FAKE_REPORT_TORCH="1")
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2 and stdout == "torch-loaded=False\n"
    assert one_error(stderr) == "--n-quality must be even (pairs), got 21"


def test_a_closed_standard_output_is_quiet(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the demo prints: like `| head` that has quit
    environ = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, str(LAUNCH), "--out", str(tmp_path / "demo")],
        env=environ,
        stdout=write,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )
    os.close(write)
    assert (proc.returncode, proc.stderr) == (0, b"")
