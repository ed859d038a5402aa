"""glossary.safewrite: atomic replacement, modes, symlinks, pipes and devices, clear refusals,
and no temporary file left behind by an error, a signal or a killed writer."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glossary import safewrite
from glossary.cli import main as glossary_main


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_gets_the_umask_and_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        fresh = safewrite.atomic_write_text(tmp_path / "a.txt", "one")
    finally:
        os.umask(old)
    assert fresh.read_text() == "one" and _mode(fresh) == 0o640
    shared = tmp_path / "b.txt"
    shared.write_text("old")
    shared.chmod(0o664)
    safewrite.atomic_write_text(shared, "new")
    assert shared.read_text() == "new" and _mode(shared) == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_a_symlink_is_followed_not_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    safewrite.atomic_write_text(link, "[1]")
    assert link.is_symlink() and real.read_text() == "[1]"


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    safewrite.atomic_write_text(fifo, "through the pipe")
    out, _ = reader.communicate(timeout=30)
    assert out == b"through the pipe"
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_dev_null_is_written_through_and_dev_full_reports_the_error() -> None:
    assert safewrite.resolve_target("/dev/null") == (Path("/dev/null"), "through")
    safewrite.atomic_write_text("/dev/null", "gone")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    if Path("/dev/full").exists():
        with pytest.raises(OSError, match="No space"):
            safewrite.atomic_write_text("/dev/full", "x" * 10000)


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda d: d, "is-folder"),
        (lambda d: d / "missing" / "x.json", "no-folder"),
        (lambda d: "", "empty"),
    ],
)
def test_refusals_are_one_clear_error(tmp_path: Path, make, kind: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(safewrite.WriteError) as info:
        safewrite.atomic_write_text(make(tmp_path), "x")
    assert info.value.kind == kind and "\n" not in str(info.value)


def test_a_failing_writer_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old")

    def boom(fh: object) -> None:
        fh.write(b"half")  # type: ignore[attr-defined]
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        safewrite.write_with(target, boom)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_a_stale_temp_of_a_killed_writer_is_removed_by_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.json.{dead.pid}.deadbeef.tmp"
    stale.write_text("left by a SIGKILL")
    mine = tmp_path / f".out.json.{os.getpid()}.cafebabe.tmp"
    mine.write_text("a live writer's")
    safewrite.atomic_write_text(tmp_path / "out.json", "{}")
    assert not stale.exists() and mine.exists()


def test_sigterm_during_a_write_removes_the_temp_file(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from glossary.safewrite import write_with\n"
        "def slow(fh):\n"
        "    fh.write(b'x' * 1000); fh.flush(); print('writing', flush=True); time.sleep(60)\n"
        f"write_with({str(tmp_path / 'big.json')!r}, slow)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    assert any(p.suffix == ".tmp" for p in tmp_path.iterdir())
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    deadline = time.monotonic() + 5
    while any(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.iterdir()) == []


def test_glossary_export_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert glossary_main(["export", "--format", "json", "-o", str(tmp_path)]) == 1
    assert "it is a folder" in capsys.readouterr().err
    assert glossary_main(["export", "--format", "json", "-o", ""]) == 2
    assert "output path is empty" in capsys.readouterr().err
