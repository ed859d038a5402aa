"""Measure the cold start of ``glossary lookup``: N fresh processes, median wall time.

Usage: ``python scripts/bench_cli.py [-n 15] [QUERY] [--entries DIR] [--no-cache] [--exe CMD]``.
Each run is a new Python process (no warm imports, no warm caches other than the OS page cache),
timed from spawn to exit. Targets: under 0.15 s median with an empty cache (``--no-cache``) and
0.1 s warm, measured on a wheel installed outside the repository (``--exe``, run from another
folder); this script reports, it does not assert.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


CPU: list[float] = []
"""CPU time (user + system) of each timed process, in the order run."""


def time_once(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        sys.exit(
            f"bench_cli: {' '.join(cmd)} exited {proc.returncode}: "
            f"{proc.stderr.decode(errors='replace').strip()[:300]}"
        )
    return elapsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("query", nargs="?", default="poda")
    p.add_argument("-n", type=int, default=15, help="number of cold runs (default 15)")
    p.add_argument("--entries", type=Path, help="entries folder (default: the package's)")
    p.add_argument("--no-cache", action="store_true", help="GLOSSARY_CACHE=0 (empty cache)")
    p.add_argument("--exe", help="the glossary command to time, e.g. an installed wheel's")
    args = p.parse_args(argv)
    cmd = [args.exe] if args.exe else [sys.executable, "-m", "glossary.cli"]
    if args.entries:
        cmd += ["--entries", str(args.entries)]
    cmd += ["lookup", args.query]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="0")
    if args.no_cache:
        env["GLOSSARY_CACHE"] = "0"
    cwd = Path(tempfile.gettempdir()) if args.exe else ROOT  # an installed wheel: not the repo
    time_once(cmd, env, cwd)  # warm the OS page cache and write .pyc files; not counted
    CPU.clear()
    times = [time_once(cmd, env, cwd) for _ in range(args.n)]
    cpu = statistics.median(CPU)
    base = [time_once([sys.executable, "-c", "pass"], env) for _ in range(5)]
    print(
        f"glossary lookup {args.query!r}: median {statistics.median(times):.3f} s over "
        f"{args.n} cold runs (min {min(times):.3f}, max {max(times):.3f}; CPU {cpu:.3f} s); "
        f"bare interpreter start {statistics.median(base):.3f} s; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
