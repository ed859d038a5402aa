"""Command-line hygiene: long queries are cut with a notice, a dash-leading query gets a hint and
works after ``--``, ``python -m glossary`` runs, and ``--json`` escapes control and bidi text."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
