"""Writing the generated files: only what changed, atomically, and removing what is stale.

Every byte goes through :mod:`glossary.safewrite`, the project's one writer (a crash never leaves
half a file). A file whose content is unchanged is not touched, so that ``mkdocs serve`` does not
rebuild in a loop; a file generated before that is no longer wanted (a deleted entry) is removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Report:
    """What a generation did."""

    written: list[Path] = field(default_factory=list)
    unchanged: int = 0
    removed: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def write(self, path: Path, data: str | bytes) -> None:
        """:func:`write_if_changed` into this report."""
        write_if_changed(path, data, self)


def write_if_changed(path: Path, text: str | bytes, report: Report) -> None:
    """Write ``path`` only if its content differs (keeps ``mkdocs serve`` from looping)."""
    from glossary.safewrite import atomic_write_bytes

    data = text.encode("utf-8") if isinstance(text, str) else text
    if path.is_file() and path.read_bytes() == data:
        report.unchanged += 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)
    report.written.append(path)


def remove_stale(directory: Path, keep: Iterable[Path], report: Report) -> None:
    """Remove the files directly in ``directory`` that are not in ``keep``."""
    if not directory.is_dir():
        return
    kept = set(keep)
    for path in sorted(directory.iterdir()):
        if path.is_file() and path not in kept:
            path.unlink()
            report.removed.append(path)
