"""The stacking study's command line refuses bad options in one line before any work, names a
refused pair, and ends quietly when its reader goes away (``--list | head``)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent


def _stacking(*args: str, stdout: int = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LANGUAGE": "en", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "reference.stacking", *args],
        cwd=REPO,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--budget", "inf"],
            "argument --budget: expected a finite number from 1 to 10, got 'inf'",
        ),
        (["--budget", "nan"], "argument --budget: expected a finite number from 1 to 10"),
        (["--budget", "1"], "--budget must be a finite FDD ratio above 1"),
        (["--control-steps", "0,-1"], "argument --control-steps: expected a whole number from 1"),
        (["--control-steps", "2,5000"], "expected a whole number from 1 to 1000, got '5000'"),
        (["--elements", "solver,solver"], "argument --elements: 'solver' is given twice"),
        (["--elements", "solver,magic"], "argument --elements: unknown value 'magic'"),
        (["--seeds", "0,99999999999"], "expected a whole number from 0 to 4294967295"),
        (["--n", "5000"], "argument --n: expected a whole number from 20 to 148, got '5000'"),
        (["--latency-batch", "100000"], "argument --latency-batch: expected a whole number from 1"),
        (["--repeats", "1000"], "argument --repeats: expected a whole number from 2 to 100"),
        (["--max-stages", "99"], "argument --max-stages: expected a whole number from 1 to 10"),
        (["--compile-backend", "bogus"], "--compile-backend: unknown backend 'bogus'"),
        (["--threads", "100000"], "argument --threads: expected a whole number from 1"),
        (["--threads", "0"], "argument --threads: expected a whole number from 1"),
        (["--quik"], "unrecognized arguments: --quik"),
        (["--rep", "3"], "unrecognized arguments: --rep"),  # no abbreviations
        (["--stack", "deepcache,forecast"], "--stack: deepcache and forecast do not stack: "),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2_before_any_work(
    args: list[str], says: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    done = _stacking("--bench", "--quick", *args, "--out", str(out))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert lines[0].startswith("python -m reference.stacking: error: ")
    assert not out.exists()  # nothing started: no output folder, no staging


def test_list_into_a_closed_pipe_ends_quietly_with_0() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line (``--list | head -0``)
    try:
        done = _stacking("--list", stdout=write)
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_list_prints_every_pair_with_its_verdict() -> None:
    from reference.compatibility import all_pairs

    done = _stacking("--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(list(all_pairs()))
    assert all(line.startswith(("+ ", "x ")) for line in lines)


def test_the_reading_commands_are_checked_too() -> None:
    done = _stacking("--list", "--check")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr
    done = _stacking("--check", "--out", "x")
    assert done.returncode == 2 and "--out goes with --summary" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_summary_reads_the_committed_result() -> None:
    done = _stacking("--summary")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Pairs and stacks against plain DDIM of the same latency: ")
    assert any("fastest measured stack" in line for line in lines) or any(
        "No measured stack" in line for line in lines
    )


BAD = st.one_of(
    st.tuples(st.just("--n"), st.integers(max_value=19) | st.integers(min_value=149)),
    st.tuples(st.just("--latency-batch"), st.integers(max_value=0) | st.integers(min_value=257)),
    st.tuples(st.just("--repeats"), st.integers(max_value=1) | st.integers(min_value=101)),
    st.tuples(st.just("--max-stages"), st.integers(max_value=0) | st.integers(min_value=11)),
    st.tuples(
        st.just("--budget"),
        st.sampled_from(["inf", "-inf", "nan", "0.5", "1", "11", "1e308", "x", "", " "]),
    ),
    st.tuples(st.just("--seeds"), st.sampled_from(["0", "0,0", "-1,2", "0,4294967296", "a,b"])),
    st.tuples(st.just("--elements"), st.sampled_from(["solver", "solver,solver", "x,y", ","])),
    st.tuples(st.just("--control-steps"), st.sampled_from(["0", "1,1", "5000", "-3", "1,,2"])),
    st.tuples(st.just("--stack"), st.sampled_from(["bogus", "deepcache,forecast", "solver,,x"])),
    st.tuples(st.just("--compile-backend"), st.sampled_from(["Bogus!", "nope", "", "x y"])),
    st.tuples(
        st.sampled_from(["--n", "--repeats", "--budget", "--seeds", "--elements", "--stack"]),
        st.text(alphabet="x-+.,é\n\t", max_size=12),
    ),
)


@settings(max_examples=60, deadline=None)
@given(bad=BAD, joined=st.booleans(), bench=st.booleans())
def test_random_bad_options_are_refused_before_any_work(
    bad: tuple[str, object], joined: bool, bench: bool
) -> None:
    """Any bad value of any option: one line, exit 2, neither the study nor the demo started
    (both are replaced by recorders here), nothing written."""
    from reference.harness.entry import Target, run
    from reference.stacking import bench as module
    from reference.stacking.provenance import STACKING

    flag, value = bad
    calls: list[str] = []
    saved = module.measure, module.demo
    module.measure = lambda cfg, staging: calls.append("measure")  # type: ignore[assignment]
    module.demo = lambda cfg, out: calls.append("demo")  # type: ignore[assignment]
    try:
        args = [f"{flag}={value}"] if joined else [flag, str(value)]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = run(
                Target(STACKING.slug, STACKING.package, STACKING),
                [*(["--bench", "--quick"] if bench else []), *args],
            )
    finally:
        module.measure, module.demo = saved
    assert (code, calls) == (2, []), (args, err.getvalue())
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m reference.stacking: error: ")
