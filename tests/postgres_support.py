"""A throw-away PostgreSQL server for tests: ``initdb`` in a temporary folder, ``pg_ctl start``
listening on a Unix socket in that folder only (``listen_addresses=''``, no TCP port), one
database per call of :meth:`Postgres.new_database`, stopped and removed at the end.

The binaries are Debian's ``postgresql`` package (``/usr/lib/postgresql/<version>/bin``, or on
``PATH``); ``make test`` installs it. ``initdb`` refuses to run as root, so under root the
server runs as the unprivileged ``postgres`` user that the package creates (``runuser``), in a
folder it owns.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path

INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found: run `make postgres` "
    "(as root: apt-get install -y postgresql), then rerun the tests"
)
SERVER_USER = "postgres"
DB_USER = "grid"


def postgres_bin() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``createdb`` (``PATH`` first, else the
    newest Debian version), or None."""
    on_path = shutil.which("initdb")
    if on_path:  # Debian links only a few of the binaries onto PATH
        folder = Path(on_path).resolve().parent
        if all((folder / name).exists() for name in ("pg_ctl", "createdb")):
            return folder
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser") is None:
        raise RuntimeError("running as root needs runuser (util-linux) to start PostgreSQL")
    return ["runuser", "-u", SERVER_USER, "--"]


@dataclass
class Postgres:
    """A running server; :meth:`new_database` gives a fresh database's SQLAlchemy URL."""

    bin: Path
    socket_dir: Path
    _numbers: count

    def _run(self, *cmd: str) -> None:
        done = subprocess.run(
            [*_as_server_user(), *cmd], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr}")

    def new_database(self) -> str:
        name = f"grid{next(self._numbers)}"
        self._run(str(self.bin / "createdb"), "-h", str(self.socket_dir), "-U", DB_USER, name)
        return f"postgresql+psycopg://{DB_USER}@/{name}?host={self.socket_dir}"


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """Start a private server (see the module docstring); RuntimeError with
    :data:`INSTALL_HINT` when the binaries are missing."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError(INSTALL_HINT)
    # Not under pytest's tmp_path: its parent is private to root, and the server user must
    # reach the folder. The path stays short (a Unix socket path has at most 107 bytes).
    root = Path(tempfile.mkdtemp(prefix="pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, SERVER_USER, SERVER_USER)
    data, log = root / "data", root / "server.log"
    server = Postgres(bin_dir, root, count())
    options = f"-k {root} -c listen_addresses='' -c fsync=off"
    try:
        server._run(
            str(bin_dir / "initdb"), "-D", str(data), "-U", DB_USER, "-A", "trust", "--no-sync"
        )
        server._run(
            str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"
        )
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            server._run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
