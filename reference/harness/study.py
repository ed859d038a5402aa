"""The studies: measured comparisons that are not glossary techniques.

A study (the baseline sanity check, the real-shape timings on a CPU and on an accelerator) has a
``bench.py`` of the technique contract (``CONTRACT = 2``, see `reference.harness.entry`), a
result ``reference/results/<slug>.json`` with provenance, and the technique command line, plus
``--check``. It is not in `reference.registry` (it has no glossary entry); `STUDIES` lists them
for the command line and for ``glossary bench``.

Usage: ``python -m reference.<study> [--bench] [--quick] [--threads N] [--out DIR]
[--<option> VALUE ...]``, or ``python -m reference.<study> --check`` to check the committed
result only. Every option is checked before any work; a bad one is refused in one line, exit 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from reference.registry import STUDIES, Technique
from reference.registry import study_by_package as by_package

__all__ = ["STUDIES", "by_package", "check", "main", "report_check", "run"]


def check(study: Technique, results_dir: Path | None = None) -> list[str]:
    """Problems of the study's committed result (empty: it still holds)."""
    from .provenance import RESULTS_DIR, check_one

    return check_one(study, Path(results_dir) if results_dir is not None else RESULTS_DIR)


def report_check(study: Technique) -> int:
    """``--check``: one line per problem of the committed result, then the count; the exit
    code (1 if any)."""
    problems = check(study)
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{study.slug}: 1 result checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def main(study: Technique, argv: Sequence[str] | None = None) -> int:
    """``python -m <study package>``: ``--check`` alone checks the committed result; anything
    else is the technique command line (`reference.harness.entry.run`). Returns the exit code."""
    from . import entry

    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--check"]:
        return report_check(study)
    if "--check" in args:
        print(f"python -m {study.package}: error: --check takes no other option", file=sys.stderr)
        return entry.EXIT_USAGE
    return entry.run(entry.Target(study.slug, study.package, study), args)


def run(package: str, argv: Sequence[str] | None = None) -> int:
    """`main` of the study whose package is ``package``."""
    study = by_package(package)
    if study is None:
        raise KeyError(f"{package} is not a study (reference.harness.study.STUDIES)")
    return main(study, argv)
