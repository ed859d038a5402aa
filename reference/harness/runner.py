"""``glossary bench``: run registered benchmarks one after another, or check committed results.

Usage:

    glossary bench [TECHNIQUE ...] [--quick] [--threads N] [--out DIR] [--traceback]
    glossary bench --check [TECHNIQUE ...]

Without ``TECHNIQUE`` every technique of `reference.registry` runs. Each run is exactly what
``python -m reference.<package> --bench`` does (`reference.harness.cli.plan` and
`run_benchmark`): the standard configuration writes the committed
``reference/results/<slug>.json``; ``--quick``, ``--threads`` or ``--out`` make it non-standard
and write under ``artifacts/``.

``--check`` runs nothing: it fails (exit 1), one line per problem naming the result and the file,
if a result is missing, invalid, non-standard, recorded from a dirty tree, or stale (a covered
source file or a loaded weight file changed; see `reference.harness.provenance`).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference.registry import BY_SLUG, TECHNIQUES, get


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="glossary bench",
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


def _check(selected: Sequence[str]) -> int:
    from .provenance import check_results

    problems = check_results([get(s) for s in selected])
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{len(selected)} result(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``glossary bench`` and ``scripts/run_benchmarks.py``; returns exit code."""
    args = _parser().parse_args(argv)
    unknown = [t for t in args.techniques if t not in BY_SLUG]
    if unknown:
        known = ", ".join(t.slug for t in TECHNIQUES)
        print(f"glossary bench: unknown technique {unknown[0]!r}; known: {known}", file=sys.stderr)
        return 2
    selected = list(args.techniques) or [t.slug for t in TECHNIQUES]
    if args.check:
        return _check(selected)
    from .cli import UsageError, contract, plan, quiet_threads, run_benchmark

    quiet_threads()
    from tqdm.auto import tqdm

    try:
        plans = []
        for slug in selected:
            technique = get(slug)
            plans.append(
                plan(
                    technique,
                    contract(technique),
                    run_bench=True,
                    quick=args.quick,
                    threads=args.threads,
                    out=args.out,
                    overrides={},
                )
            )
    except UsageError as exc:
        print(f"glossary bench: error: {exc}", file=sys.stderr)
        return 2
    lines, failures = [], 0
    for p in tqdm(plans, desc="benchmarks", disable=len(plans) < 2):
        start = time.perf_counter()
        try:
            result, path = run_benchmark(p)
        except Exception as exc:
            failures += 1
            if args.traceback:
                traceback.print_exc()
            first = (str(exc).strip().splitlines() or [""])[0]
            slug = p.technique.slug
            print(f"glossary bench: {slug} failed: {type(exc).__name__}: {first}", file=sys.stderr)
            continue
        elapsed = time.perf_counter() - start
        lines.append(f"{summary_line(result.to_dict())}  {elapsed:6.1f} s  {path}")
    if lines:
        print(f"{'technique':30} {'speedup / limit':>20} {'quality':>8} {'aims':>8}")
        print("\n".join(lines))
        print("aims: met/missed/inconclusive; (!) a speedup above its analytic bound")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
