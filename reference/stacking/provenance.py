"""What ``stacking.json`` was made from, and its check (torch-free, like the harness's).

The study runs the code of every member technique, so its result hashes more than a technique's:
the stacking package, the shared layers, ``reference/compatibility.py`` and the package of every
registered technique among its elements (`stack_files`). `check_stacking` recomputes the digest of
every recorded file and reports a changed or removed one with the hint to rerun the study (an added
file stales nothing; see `reference.harness.provenance`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reference.harness.provenance import (
    RESULTS_DIR,
    _git,
    check_one,
    covered_files,
    file_digests,
    rel,
)
from reference.registry import BY_SLUG, REFERENCE_DIR, Technique

STACKING = Technique("stacking")
"""The study as a harness technique (not registered: it has no glossary entry of its own)."""
RERUN = "rerun: glossary bench stacking"


def stack_files(element_slugs: Iterable[str]) -> list[Path]:
    """The study's package and shared code, the matrix, and every member technique's package."""
    files = set(covered_files(STACKING))
    files.add((REFERENCE_DIR / "compatibility.py").resolve())
    for slug in element_slugs:
        if slug in BY_SLUG:
            files |= set(covered_files(BY_SLUG[slug]))
    return sorted(files)


def amend(provenance: dict[str, Any], element_slugs: Iterable[str]) -> dict[str, Any]:
    """``provenance`` with ``files`` and ``dirty`` over `stack_files` instead of the package's."""
    files = stack_files(element_slugs)
    status = _git("status", "--porcelain", "--", *(rel(p) for p in files))
    dirty = status is None or bool(status.strip())
    return {**provenance, "files": file_digests(files), "dirty": dirty}


def check_stacking(results_dir: Path | None = None) -> list[str]:
    """Problems of the committed ``stacking.json``, one line each (empty: it still holds).

    `check_one` compares every file the result recorded, so the study's longer list
    (`stack_files`, written by `amend`) is checked like a technique's.
    """
    directory = Path(results_dir) if results_dir is not None else RESULTS_DIR
    return check_one(STACKING, directory)
