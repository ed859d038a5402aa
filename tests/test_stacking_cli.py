"""The stacking study's command line refuses bad options in one line before any work, names a
refused pair, and ends quietly when its reader goes away (``--list | head``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
        (["--budget", "inf"], "--budget must be a finite FDD ratio above 1"),
        (["--budget", "nan"], "--budget must be a finite FDD ratio above 1"),
        (["--control-steps", "0,-1"], "--control-steps must be positive step counts"),
        (["--control-steps", "2,5000"], "step counts must be <= 1000"),
        (["--elements", "solver,solver"], "--elements names an element twice"),
        (["--seeds", "0,99999999999"], "--seeds must be <= 4294967295"),
        (["--n", "5000"], "--n must be <= 148"),
        (["--threads", "100000"], "--threads must be in 1.."),
        (["--threads", "0"], "--threads must be in 1.."),
        (["--quik"], "unrecognized arguments: --quik"),
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
