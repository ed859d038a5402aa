"""Command-line hygiene: long queries are cut with a notice, a dash-leading query gets a hint and
works after ``--``, ``python -m glossary`` runs, and ``--json`` escapes control and bidi text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from glossary_support import ROOT

from glossary.cli import main, safe_json
from glossary.lookup import MAX_QUERY_CHARS


def test_a_long_query_is_cut_with_a_notice(capsys: pytest.CaptureFixture[str]) -> None:
    main(["lookup", "poda " * (MAX_QUERY_CHARS // 2)])
    err = capsys.readouterr().err
    assert f"cut to its first {MAX_QUERY_CHARS} characters" in err


def test_a_dash_leading_query_gets_a_hint_and_works_after_dashes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["lookup", "-lora"]) == 2
    err = capsys.readouterr().err
    assert "glossary lookup -- -lora" in err and err.count("\n") == 1
    main(["lookup", "--", "-lora"])
    out = capsys.readouterr().out
    assert "lora" in out.lower()


def test_python_dash_m_glossary_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "glossary", "lookup", "poda"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 0 and "pruning" in run.stdout


def test_json_output_escapes_control_and_bidi_characters() -> None:
    text = safe_json({"a": "x\u007fy\u202ez\u200b", "b": "línea\tñ"})
    assert "\u007f" not in text and "\u202e" not in text and "\u200b" not in text
    assert "\\u007f" in text and "\\u202e" in text and "ñ" in text
    assert json.loads(text) == {"a": "x\u007fy\u202ez\u200b", "b": "línea\tñ"}


def _console_script() -> str:
    """What the installed ``glossary`` script runs: the entry point of pyproject.toml, imported
    and called the way pip's generated wrapper does."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    module, function = project["project"]["scripts"]["glossary"].split(":")
    return f"import sys\nfrom {module} import {function}\nsys.exit({function}())\n"


def _as_from_a_shell(tmp_path: Path, *paths: Path) -> tuple[str, dict[str, str]]:
    """A prelude and an environment for a child that starts as from a user's shell, whatever
    the tests before it or the way the suite was started left in this process: SIGINT at its
    default (an ignored or blocked signal is inherited across exec; a non-interactive shell
    starts a command run in the background with SIGINT ignored, so a suite run that way gave
    it to this child, and Python turns SIGINT into KeyboardInterrupt only when it starts with
    the default), ``paths`` first on
    ``sys.path``, and only the variables the command reads (run with ``-I``, which ignores
    every ``PYTHON*`` variable and the user's site-packages)."""
    prelude = (
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
        f"sys.path[:0] = {[str(path) for path in paths]!r}\n"
    )
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "LANGUAGE": "en",
        # an empty cache of its own: with the session's compiled index the command would take
        # the fast path, and every route imports argparse, the stand-in below, anyway
        "GLOSSARY_CACHE_DIR": str(tmp_path / "cache"),
    }
    return prelude, env


def test_sigint_while_the_command_line_imports_is_one_line_and_130(tmp_path: Path) -> None:
    # ``argparse``, imported by the command line and not by Python's start-up, stands in for any
    # module being imported when Ctrl-C arrives: it delivers a real SIGINT while it loads (once:
    # the one line is then translated with SIGINT ignored, which imports the command line again).
    (tmp_path / "argparse.py").write_text(
        "import builtins, os, signal, time\n"
        "if not hasattr(builtins, 'sigint_sent'):\n"
        "    builtins.sigint_sent = True\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n",
        encoding="utf-8",
    )
    prelude, env = _as_from_a_shell(tmp_path, tmp_path, ROOT)
    run = subprocess.run(
        [sys.executable, "-I", "-c", prelude + _console_script(), "list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert (run.returncode, run.stdout, run.stderr) == (130, "", "glossary: interrupted\n")


def test_a_path_with_a_line_break_is_shown_escaped_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no\nsuch" / "g.csv"
    assert main(["--ui-lang", "en", "export", "--format", "csv", "-o", str(target)]) == 1
    err = capsys.readouterr().err
    folder = str(target.parent).replace("\n", "\\n")
    assert err == (f"glossary: cannot write {folder}/g.csv: folder {folder} does not exist\n")
