"""The machine a benchmark runs on: threads, load, the lock's place and the launcher's rank.

Idea
====
A benchmark times wall clock, so it runs alone on an idle machine: one lock in ``artifacts/``
(`LOCK_PATH`), a wait until the 1-minute load average falls to `max_load` (`wait_until_idle`),
and OpenMP threads that sleep instead of spinning (`quiet_threads`). Under a launcher such as
``torchrun`` (``RANK`` and ``WORLD_SIZE``, `launched_rank`) every rank runs the same command, and
the command line (`reference.harness.entry`) refuses ``--bench`` on more than one rank.

Pitfalls
========
* ``OMP_WAIT_POLICY`` is read when torch loads: `quiet_threads` must run before ``import torch``.
* The load average counts this process's own earlier work for about a minute; `SETTLE_SECONDS`
  gives an earlier run's load time to decay before a run is refused.
"""

from __future__ import annotations

import os
import sys

from reference.registry import REFERENCE_DIR


class UsageError(ValueError):
    """A bad argument: reported as one line, exit code 2, before any work."""


DEFAULT_THREADS = 2
ARTIFACTS = REFERENCE_DIR.parent / "artifacts"
LOCK_PATH = ARTIFACTS / ".bench.lock"
MAX_LOAD_ENV = "REFERENCE_MAX_LOAD"
SETTLE_SECONDS = 240.0
"""How long a benchmark waits for the load of an earlier run (or another job) to decay."""


class BusyMachine(RuntimeError):
    """The machine is too busy for a wall-clock measurement; nothing is written."""


def max_load() -> float:
    """The 1-minute load average a benchmark tolerates from *other* processes.

    ``REFERENCE_MAX_LOAD`` overrides; the default, three quarters of the cores (1.5 on the
    2-core reference machine), leaves room for the shell and the OS but not for a second job.
    """
    value = os.environ.get(MAX_LOAD_ENV)
    if value:
        try:
            return float(value)
        except ValueError:
            raise UsageError(f"{MAX_LOAD_ENV}={value!r} is not a number") from None
    return max(1.0, 0.75 * (os.cpu_count() or 1))


def wait_until_idle(limit: float, timeout: float = SETTLE_SECONDS, poll: float = 5.0) -> float:
    """Wait until the 1-minute load average is at most ``limit``; ``BusyMachine`` after
    ``timeout`` seconds. Returns the load it started at."""
    import time

    start = time.monotonic()
    told = False
    while True:
        load = os.getloadavg()[0]
        if load <= limit:
            return load
        if time.monotonic() - start > timeout:
            raise BusyMachine(
                f"the machine is busy: load average {load:.2f} > {limit:.2f} after waiting "
                f"{timeout:.0f} s; benchmarks time wall clock, so run them on an idle machine "
                f"(or set {MAX_LOAD_ENV})"
            )
        if not told:
            print(
                f"waiting for the machine to settle (load {load:.2f} > {limit:.2f})",
                file=sys.stderr,
            )
            told = True
        time.sleep(poll)


def launched_rank() -> tuple[int, int] | None:
    """``(RANK, WORLD_SIZE)`` when a launcher (``torchrun``) started this process, else ``None``.

    These are the variables of ``torch.distributed``'s ``env://`` rendezvous; raises
    `UsageError` when they are set but are not integers.
    """
    rank, size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None or size is None:
        return None
    try:
        return int(rank), int(size)
    except ValueError:
        raise UsageError(f"RANK={rank!r} and WORLD_SIZE={size!r} must be integers") from None


def quiet_threads() -> None:
    """OpenMP threads sleep instead of spinning when idle (set before torch is imported): on a
    shared 2-core machine the default active wait made torch 10-50x slower whenever another
    process was busy. An explicit ``OMP_WAIT_POLICY`` wins."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
