"""``glossary bench``'s techniques: run registered benchmarks one after another, or check results.

Usage:

    glossary bench [TECHNIQUE ...] [--quick] [--threads N] [--out DIR] [--traceback]
    glossary bench --check [TECHNIQUE ...]
    python -m reference.harness.runner ...          # the same, without the glossary's words

Without ``TECHNIQUE`` every technique of `reference.registry` runs. Each run is exactly what
``python -m reference.<package> --bench`` does (`reference.harness.entry.prepare_standard` and
`run_bench`), and every plan is checked before the first one runs: the standard configuration
writes the committed ``reference/results/<slug>.json``; ``--quick``, ``--threads`` or ``--out``
make it non-standard and write under ``artifacts/``. ``glossary bench`` parses and checks its
arguments in the reader's language and hands the runs over to `run_techniques`.

``--check`` runs nothing: it fails (exit 1), one line per problem naming the result and the file,
if a result is missing, invalid, non-standard, recorded from a dirty tree, or stale (a covered
source file or a loaded weight file changed; see `reference.harness.provenance`).

SIGINT and SIGTERM unwind the run in progress (no staging folder is left); SIGINT then reaches
the caller as ``KeyboardInterrupt``, SIGTERM ends with 143.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference.registry import BY_SLUG, TECHNIQUES, get

TABLE_HEAD = f"{'technique':30} {'speedup / limit':>20} {'quality':>8} {'aims':>8}"
TABLE_FOOT = "aims: met/missed/inconclusive; (!) a speedup above its analytic bound"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.harness.runner",
        description="Run reference benchmarks, or check the committed results.",
    )
    p.add_argument("techniques", nargs="*", metavar="TECHNIQUE", help="slugs (default: all)")
    p.add_argument("--quick", action="store_true", help="test configuration, under artifacts/")
    p.add_argument("--check", action="store_true", help="check committed results; run nothing")
    p.add_argument("--out", type=Path, default=None, help="write results to DIR (non-standard)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default 2)")
    p.add_argument("--traceback", action="store_true", help="show tracebacks of failures")
    return p


def summary_line(data: dict[str, Any]) -> str:
    """``slug  speedup [interval] / limit  quality ratio  aims met/missed/inconclusive``."""

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    h = data["headline"] or {}
    speed = f"{num(h.get('speedup'))}x / {num(h.get('speedup_limit'))}x"
    if data["anomalies"]:
        speed += " (!)"
    quality = num(h.get("quality_ratio"))
    states = [a["state"] for a in data["aims"]]
    aims = "/".join(str(states.count(s)) for s in ("met", "missed", "inconclusive"))
    return f"{data['slug']:30} {speed:>20} {quality:>8} {aims:>8}"


def check(selected: Sequence[str]) -> int:
    """``--check`` of ``selected``: one line per problem, then the count; 1 if any."""
    from .provenance import check_results

    problems = check_results([get(s) for s in selected])
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{len(selected)} result(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def run_techniques(
    selected: Sequence[str],
    *,
    quick: bool = False,
    threads: int | None = None,
    out: Path | None = None,
    show_traceback: bool = False,
) -> int:
    """Plan every technique of ``selected`` (`reference.harness.entry.UsageError` before any
    work if one plan is refused), then run them one after another and print the table; 1 if any
    failed."""
    from . import entry
    from .machine import quiet_threads

    quiet_threads()
    plans = [entry.prepare_standard(s, quick=quick, threads=threads, out=out) for s in selected]
    previous = entry.install_signals()
    try:
        return _run_plans(plans, show_traceback)
    except entry.Interrupted as exc:
        if exc.signum == signal.SIGINT:
            raise KeyboardInterrupt from None
        print("glossary bench: terminated", file=sys.stderr)
        return 128 + exc.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _run_plans(plans: list[Any], show_traceback: bool) -> int:
    from . import entry

    lines, failures = [], 0
    for p in plans:
        start = time.perf_counter()
        try:
            result, path = entry.run_bench(p)
        except Exception as exc:
            failures += 1
            if show_traceback:
                traceback.print_exc()
            first = entry.one_line((str(exc).strip().splitlines() or [""])[0])
            slug = p.target.slug
            print(f"glossary bench: {slug} failed: {type(exc).__name__}: {first}", file=sys.stderr)
            continue
        elapsed = time.perf_counter() - start
        lines.append(f"{summary_line(result)}  {elapsed:6.1f} s  {entry.one_line(str(path))}")
    if lines:
        print(TABLE_HEAD, "\n".join(lines), TABLE_FOOT, sep="\n")
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reference.harness.runner``; returns the exit code."""
    from .entry import UsageError

    args = _parser().parse_args(argv)
    unknown = [t for t in args.techniques if t not in BY_SLUG]
    if unknown:
        known = ", ".join(t.slug for t in TECHNIQUES)
        print(
            f"{_parser().prog}: unknown technique {unknown[0]!r}; known: {known}", file=sys.stderr
        )
        return 2
    selected = list(args.techniques) or [t.slug for t in TECHNIQUES]
    if args.check:
        return check(selected)
    try:
        return run_techniques(
            selected, quick=args.quick, threads=args.threads, out=args.out,
            show_traceback=args.traceback,
        )  # fmt: skip
    except UsageError as exc:
        print(f"{_parser().prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
