"""The command line of a study: a measured comparison that is not a glossary technique.

A study (the baseline sanity check, the real-shape timings) has a ``bench`` module with the
technique contract of `reference.harness.cli` (``Config``, ``FULL``, ``QUICK``, ``OPTIONS``,
``benchmark``, ``demo``), a result ``reference/results/<slug>.json`` with provenance, and the
same command line, plus ``--check``. It is not in `reference.registry` (it has no glossary
entry); `STUDIES` lists them for ``glossary bench``.

Usage: ``python -m reference.<study> [--bench] [--quick] [--check] [--threads N] [--out DIR]
[--<option> VALUE ...]``. Every option is checked before any work; a bad one is refused in one
line, exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from reference.registry import Technique

STUDIES = (Technique("baseline-sanity"), Technique("realshape"))
"""Every study, by slug (the package follows the registry's rule)."""


def check(study: Technique, results_dir: Path | None = None) -> list[str]:
    """Problems of the study's committed result (empty: it still holds)."""
    from .provenance import RESULTS_DIR, check_one

    return check_one(study, Path(results_dir) if results_dir is not None else RESULTS_DIR)


def main(study: Technique, argv: Sequence[str] | None = None) -> int:
    """``python -m reference.<study>``; returns the exit code."""
    from . import cli

    bench = importlib.import_module(f"{study.package}.bench")
    prog = f"python -m {study.package}"
    p = argparse.ArgumentParser(prog=prog, description=(bench.__doc__ or "").splitlines()[0])
    p.add_argument("--bench", action="store_true", help="measure (default: a quick demo)")
    p.add_argument("--quick", action="store_true", help="the test configuration")
    p.add_argument("--check", action="store_true", help="check the committed result only")
    p.add_argument("--threads", type=int, default=None, metavar="N")
    p.add_argument("--out", type=cli.out_dir, default=None, metavar="DIR")
    for opt in bench.OPTIONS:
        flag = "--" + opt.name.replace("_", "-")
        p.add_argument(flag, dest=opt.name, type=opt.parse, default=None, metavar=opt.metavar)
    args = p.parse_args(argv)
    if args.check:
        problems = check(study)
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{study.slug}: 1 result checked, {len(problems)} problem(s)")
        return 1 if problems else 0
    overrides = {o.name: getattr(args, o.name) for o in bench.OPTIONS}
    try:
        plan = cli.plan(
            study,
            bench,
            run_bench=args.bench,
            quick=args.quick,
            threads=args.threads,
            out=args.out,
            overrides={k: v for k, v in overrides.items() if v is not None},
        )
    except cli.UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    cli.quiet_threads()
    if plan.mode == "demo":
        import torch

        torch.set_num_threads(plan.threads)
        bench.demo(plan.cfg, plan.out)
        return 0
    _, path = cli.run_benchmark(plan)
    print(f"{study.slug}: wrote {path} ({'standard' if plan.standard else 'non-standard'})")
    return 0
