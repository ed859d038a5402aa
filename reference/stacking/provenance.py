"""What ``stacking.json`` was made from, and its check (torch-free, like the harness's).

The study runs the code of every member technique, so its result records more than a technique's:
the stacking package, every file under ``reference/`` the run imported or opened (the members'
modules among them) and ``reference/compatibility.py`` (`amend`). Results measured before this rule
recorded every member's whole package. `check_stacking` recomputes the digest of
every recorded file and reports a changed or removed one with the hint to rerun the study (an added
file stales nothing; see `reference.harness.provenance`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reference.harness.provenance import (
    REPO_ROOT,
    RESULTS_DIR,
    _git,
    check_one,
    file_digests,
    rel,
)
from reference.registry import REFERENCE_DIR, Technique

STACKING = Technique("stacking")
"""The study as a harness technique (not registered: it has no glossary entry of its own)."""
RERUN = "rerun: glossary bench stacking"


def amend(provenance: dict[str, Any], element_slugs: Iterable[str]) -> dict[str, Any]:
    """``provenance`` with ``files`` and ``dirty`` over what the study used: the harness already
    recorded its package and every file under ``reference/`` it imported or opened (each member
    technique's modules among them), plus the compatibility matrix it reads its pairs from.

    ``element_slugs`` is kept for the callers: the members are known from the imports.
    """
    recorded = {REPO_ROOT / name for name in provenance["files"]}
    files = sorted(recorded | {(REFERENCE_DIR / "compatibility.py").resolve()})
    status = _git("status", "--porcelain", "--", *(rel(p) for p in files))
    dirty = status is None or bool(status.strip())
    return {**provenance, "files": file_digests(files), "dirty": dirty}


def check_stacking(results_dir: Path | None = None) -> list[str]:
    """Problems of the committed ``stacking.json``, one line each (empty: it still holds).

    `check_one` compares every file the result recorded, so the study's longer list
    (`stack_files`, written by `amend`) is checked like a technique's, and it recomputes the
    study's derived figures (`reference.harness.integrity`: the configurations its settings
    enumerate, its matrices, frontier, headline and aims).
    """
    directory = Path(results_dir) if results_dir is not None else RESULTS_DIR
    return check_one(STACKING, directory)
