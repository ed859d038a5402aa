"""``glossary bench``: run technique benchmarks, write their results, check committed results.

The benchmark protocol
----------------------
A technique module ``reference.<name>`` (see :data:`TECHNIQUES`) exposes::

    def benchmark(quick: bool) -> BenchmarkResult: ...

``quick=False`` is the full measurement whose result is committed to
``reference/results/<slug>.json``; ``quick=True`` is a small configuration (seconds) for tests
and smoke runs, written to ``artifacts/bench-quick/`` and never over committed results. The
function measures and returns; the runner validates and writes the JSON (figures are written by
the technique into :func:`~reference.harness.results.output_dir`). A module that does not exist
yet is reported as "not implemented yet", which is not an error.

Usage::

    glossary bench [TECHNIQUE ...] [--quick] [--check] [--out DIR]
    python scripts/run_benchmarks.py [same arguments]

``--check`` runs nothing: it fails (exit 1) if an implemented technique's committed result is
missing, invalid, a quick result, or stale (its recorded source sha256 no longer matches).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from .results import (
    OUT_ENV,
    BenchmarkResult,
    check_results,
    module_source,
    output_dir,
    write_result,
)

TECHNIQUES: dict[str, str] = {
    "pruning": "reference.pruning",
    "classifier-guidance": "reference.classifier_guidance",
    "low-rank-inference": "reference.low_rank_inference",
    "accelerate-method": "reference.accelerate_method",
    "gradient-checkpointing": "reference.gradient_checkpointing",
    "mixture-of-experts": "reference.mixture_of_experts",
    "timestep-distillation": "reference.timestep_distillation",
    "stochastic-reparameterization": "reference.stochastic_reparameterization",
    "feature-caching": "reference.feature_caching",
    "tpu-deployment": "reference.tpu_deployment",
    "scheduler-tradeoff": "reference.scheduler_tradeoff",
    "conv-fusion": "reference.conv_fusion",
    "consistency-latent-diffusion": "reference.consistency_latent_diffusion",
    "grid-search": "reference.grid_search",
    "async-pipeline": "reference.async_pipeline",
}
"""Glossary slug -> reference module of the 15 techniques (the team contract's table)."""


def is_implemented(slug: str) -> bool:
    """Whether the technique's module exists (found without importing it)."""
    return module_source(TECHNIQUES[slug]) is not None


def run_benchmark(slug: str, quick: bool) -> BenchmarkResult:
    """Import the technique module, call ``benchmark(quick)`` and sanity-check the result."""
    module = importlib.import_module(TECHNIQUES[slug])
    fn = getattr(module, "benchmark", None)
    if not callable(fn):
        raise TypeError(f"{TECHNIQUES[slug]} has no benchmark(quick) function")
    result = fn(quick=quick)
    if not isinstance(result, BenchmarkResult):
        raise TypeError(f"{TECHNIQUES[slug]}.benchmark returned {type(result).__name__}")
    if result.slug != slug or result.module != TECHNIQUES[slug] or result.quick != quick:
        raise ValueError(
            f"{TECHNIQUES[slug]}.benchmark returned slug={result.slug!r}, "
            f"module={result.module!r}, quick={result.quick}; expected {slug!r}, "
            f"{TECHNIQUES[slug]!r}, {quick}"
        )
    return result


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def summary_line(result: BenchmarkResult) -> str:
    """``slug  speedup/limit  quality ratio  aims met`` for the summary table."""
    h = result.headline
    speed = "-" if h is None else f"{_fmt(h.speedup)}x / {_fmt(h.speedup_limit)}x"
    quality = (
        "-"
        if h is None or h.quality_ratio is None
        else (f"{_fmt(h.quality_ratio)} ({h.quality_metric})")
    )
    met = sum(a.met for a in result.aims)
    return f"{result.slug:30} {speed:>18} {quality:>24} {met}/{len(result.aims)}"


def write_and_report(result: BenchmarkResult) -> Path:
    """Write ``result`` and print one line per aim: what a module's ``--bench`` prints."""
    path = write_result(result)
    for a in result.aims:
        shown = "n/a" if a.measured is None else f"{a.measured:.3g}"
        print(f"[{'met' if a.met else 'NOT met'}] {a.text}: {shown}")
    print(f"wrote {path}")
    return path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="glossary bench",
        description="Run reference benchmarks and write reference/results/<slug>.json.",
    )
    p.add_argument("techniques", nargs="*", metavar="TECHNIQUE", help="slugs (default: all)")
    p.add_argument(
        "--quick", action="store_true", help="small configuration, written to artifacts/"
    )
    p.add_argument("--check", action="store_true", help="only check committed results; run nothing")
    p.add_argument("--out", type=Path, default=None, help="write results to DIR instead")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--traceback", action="store_true", help="show tracebacks of failures")
    return p


def _check(selected: Sequence[str]) -> int:
    pending = [s for s in selected if not is_implemented(s)]
    for slug in pending:
        print(f"{slug}: not implemented yet ({TECHNIQUES[slug]})")
    problems = check_results({s: TECHNIQUES[s] for s in selected})
    for line in problems:
        print(line, file=sys.stderr)
    done = len(selected) - len(pending)
    print(f"{done} implemented, {len(pending)} not implemented yet, {len(problems)} problem(s)")
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``glossary bench`` and ``scripts/run_benchmarks.py``; returns exit code."""
    args = _parser().parse_args(argv)
    unknown = [t for t in args.techniques if t not in TECHNIQUES]
    if unknown:
        print(
            f"glossary bench: unknown technique {unknown[0]!r}; known: {', '.join(TECHNIQUES)}",
            file=sys.stderr,
        )
        return 2
    selected = list(args.techniques) or list(TECHNIQUES)
    if args.check:
        return _check(selected)
    if args.out is not None:
        os.environ[OUT_ENV] = str(args.out)
    import torch
    from tqdm.auto import tqdm

    torch.set_num_threads(args.threads)
    runnable = [s for s in selected if is_implemented(s)]
    for slug in selected:
        if slug not in runnable:
            print(f"{slug}: not implemented yet ({TECHNIQUES[slug]})")
    lines, failures = [], 0
    for slug in tqdm(runnable, desc="benchmarks", disable=len(runnable) < 2):
        start = time.perf_counter()
        try:
            result = run_benchmark(slug, args.quick)
            path = write_result(result, output_dir(args.quick))
        except Exception as exc:
            failures += 1
            if args.traceback:
                traceback.print_exc()
            first = (str(exc).strip().splitlines() or [""])[0]
            print(f"glossary bench: {slug} failed: {type(exc).__name__}: {first}", file=sys.stderr)
            continue
        lines.append(f"{summary_line(result)}  {time.perf_counter() - start:6.1f} s  {path}")
    if lines:
        print(f"{'technique':30} {'speedup / limit':>18} {'quality ratio':>24} aims")
        print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
