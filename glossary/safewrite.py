"""Atomic writes of regular files: never half-written, never a lost mode, no temp file left.

:func:`atomic_write_text` / :func:`atomic_write_bytes` write to a temporary file in the target's
folder, ``fsync`` it, give it the mode the target had (or, for a new file, ``0666`` minus the
umask, as ``open()`` would) and ``os.replace`` it over the target, so a reader sees either the
old or the new file. A symlink is followed: its target is replaced, the link stays. On any error
the temporary file is removed and the target is untouched.

Pitfall: ``tempfile.mkstemp`` creates ``0600`` files; renaming one over a shared file silently
makes it private. The mode is set explicitly before the rename.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Replace the regular file ``path`` (or create it) with ``data`` atomically."""
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    if target.exists() and not target.is_file():
        raise IsADirectoryError(f"{target}: not a regular file; refusing to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))
