"""What ``stacking.json`` was made from, and its check (torch-free, like the harness's).

The study runs the code of every member technique, so its result hashes more than a technique's:
the stacking package, the shared layers, ``reference/compatibility.py`` and the package of every
registered technique among its elements (`stack_files`). `check_stacking` recomputes those and
reports any change with the hint to rerun the study.
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
    sha256_file,
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
    """Problems of the committed ``stacking.json``, one line each (empty: it still holds)."""
    from reference.harness.results import read_result

    directory = Path(results_dir) if results_dir is not None else RESULTS_DIR
    path = directory / "stacking.json"
    basic = check_one(STACKING, directory)
    if not path.is_file() or any("unreadable" in line or "invalid" in line for line in basic):
        return basic
    try:
        data = read_result(path)
    except ValueError as exc:
        return [f"{exc}; {RERUN}"]
    # check_one compared only the package's own files; the study's list is longer
    out = [line for line in basic if ": stale: " not in line or "weight file" in line]
    shown = rel(path) if path.resolve().is_relative_to(REFERENCE_DIR.parent) else str(path)
    recorded = data["provenance"]["files"]
    current = {rel(p): p for p in stack_files(data["settings"].get("element_slugs", []))}
    for name in sorted(set(recorded) - set(current)):
        out.append(f"{shown}: stale: {name} no longer exists; {RERUN}")
    for name in sorted(set(current) - set(recorded)):
        out.append(f"{shown}: stale: {name} was added since it was measured; {RERUN}")
    for name in sorted(set(recorded) & set(current)):
        if sha256_file(current[name]) != recorded[name]:
            out.append(f"{shown}: stale: {name} changed since it was measured; {RERUN}")
    return out
