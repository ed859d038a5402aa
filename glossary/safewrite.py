"""The one writer of every file the project writes: exports, results, zoo weights, site pages.

Rules
-----
* A **regular file** (or a new one) is replaced atomically: the data go to a temporary file in
  the same folder, which is flushed and ``fsync``-ed, given the mode the target had (a new file
  gets ``0666`` minus the umask, as ``open()`` would), and renamed over the target; the folder is
  ``fsync``-ed too. A reader sees the old file or the new one, never half of one.
* A **symlink** is followed: the file it points to is replaced, the link stays a link.
* A **FIFO or character device** (``/dev/stdout``, ``/dev/null``, a pipe) is written through:
  opened for writing and never replaced, so the node stays what it was. A write error there
  (``/dev/full``: no space) is reported, not swallowed.
* A **directory**, a socket, a block device, an empty path and a path whose folder does not
  exist are refused with one clear :class:`WriteError` before anything is written.
* **Interruptions**: SIGTERM and SIGINT during a write remove the temporary file before the
  process ends; a temporary file left by a killed process (SIGKILL) is removed by the next
  write to the same target (its name records the writer's pid).

Pitfall: ``tempfile.mkstemp`` creates ``0600`` files; renaming one over a shared file silently
makes it private, so the mode is set explicitly before the rename.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO


class WriteError(OSError):
    """A target that cannot be written safely; the message is one line naming it.

    ``kind`` says why (``empty``, ``no-folder``, ``is-folder``, ``not-a-file``) so that a user
    interface can say it in its own language; ``target`` is the path.
    """

    def __init__(self, code: int, message: str, kind: str = "", target: Path | None = None):
        super().__init__(code, message)
        self.kind, self.target = kind, target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def remove_stale_temps(target: Path) -> list[Path]:
    """Delete temporary files of ``target`` whose writer process no longer exists."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(\d+)\.[0-9a-f]{{8}}\.tmp$")
    removed = []
    with contextlib.suppress(OSError):
        for path in target.parent.iterdir():
            match = pattern.match(path.name)
            if match and not pid_alive(int(match.group(1))):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def resolve_target(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """The file to write and how: ``("replace" | "through")``; :class:`WriteError` otherwise."""
    if str(path) == "":
        raise WriteError(errno.EINVAL, "empty output path", "empty")
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise WriteError(
                errno.ENOENT,
                f"cannot write {target}: folder {target.parent} does not exist",
                "no-folder",
                target,
            ) from None
        return target, "replace"
    if stat.S_ISREG(mode):
        return target, "replace"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return target, "through"
    if stat.S_ISDIR(mode):
        raise WriteError(
            errno.EISDIR, f"cannot write {target}: it is a folder; name a file", "is-folder", target
        )
    raise WriteError(
        errno.EINVAL,
        f"cannot write {target}: not a regular file, pipe or terminal",
        "not-a-file",
        target,
    )


@contextlib.contextmanager
def _cleanup_on_signal(tmp: Path) -> Iterator[None]:
    """Remove ``tmp`` if SIGTERM or SIGINT arrives, then let the signal end the process."""
    previous: dict[int, object] = {}

    def handler(signum: int, frame: object) -> None:
        tmp.unlink(missing_ok=True)
        old = previous[signum]
        signal.signal(signum, old if callable(old) else signal.SIG_DFL)  # type: ignore[arg-type]
        os.kill(os.getpid(), signum)

    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: signals cannot be handled here
        previous.clear()
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)  # type: ignore[arg-type]


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_with(path: str | os.PathLike[str], write: Callable[[BinaryIO], None]) -> Path:
    """Write ``path`` by calling ``write(binary_file)``, following the rules above."""
    target, how = resolve_target(path)
    if how == "through":
        with open(target, "wb") as fh:
            write(fh)
            fh.flush()
        return target
    remove_stale_temps(target)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    tmp = _temp_name(target)
    with _cleanup_on_signal(tmp):
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    _fsync_dir(target.parent)
    return target


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` (see the module's rules)."""
    return write_with(path, lambda fh: fh.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))
