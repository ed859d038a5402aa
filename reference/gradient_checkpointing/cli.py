"""Command line: a one-minute demonstration, ``--bench`` for the full benchmark."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

SLUG = "gradient-checkpointing"


def _parser() -> argparse.ArgumentParser:
    from .bench import POLICIES

    p = argparse.ArgumentParser(
        prog="python -m reference.gradient_checkpointing",
        description="Gradient checkpointing on the zoo U-Net: retained and peak activation "
        "memory, step time and gradient equality per policy, and the sqrt(n) law on a chain.",
    )
    p.add_argument("--batch", type=int, default=32, help="training batch size (default 32)")
    p.add_argument(
        "--policies",
        default=",".join(POLICIES[1:]),
        help=f"comma-separated policies besides the baseline 'none' (from: {', '.join(POLICIES)})",
    )
    p.add_argument(
        "--microbatches",
        type=int,
        default=4,
        help="micro-batches of the gradient-accumulation control row (0: no control; default 4)",
    )
    p.add_argument("--repeats", type=int, default=3, help="timed rounds (default 3)")
    p.add_argument("--chain-max", type=int, default=64, help="largest chain length (default 64)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="figure folder")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write its result")
    p.add_argument("--quick", action="store_true", help="with --bench: small configuration")
    return p


def _configs(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list:
    from .bench import CONFIGS, POLICIES, Config

    by_policy = {c.policy: c for c in CONFIGS if c.microbatches == 1}
    chosen = [by_policy["none"]]
    for name in filter(None, (n.strip() for n in args.policies.split(","))):
        if name not in POLICIES:
            parser.error(f"--policies: unknown policy {name!r}; choose from {', '.join(POLICIES)}")
        if by_policy[name] not in chosen:
            chosen.append(by_policy[name])
    if args.microbatches:
        chosen.append(
            Config("accum", f"Control: {args.microbatches} micro-batches", "control", "none",
                   args.microbatches)
        )  # fmt: skip
    return chosen


def _validate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.batch < 1:
        parser.error(f"--batch must be >= 1, got {args.batch}")
    if args.microbatches < 0 or args.microbatches > args.batch:
        parser.error(f"--microbatches must be between 0 and --batch ({args.batch})")
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.chain_max < 4:
        parser.error(f"--chain-max must be >= 4, got {args.chain_max}")
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    if args.quick and not args.bench:
        parser.error("--quick only applies with --bench")


def _bench(quick: bool) -> int:
    from reference.harness import write_result

    from .bench import benchmark

    result = benchmark(quick=quick)
    path = write_result(result)
    for a in result.aims:
        print(f"{'met    ' if a.met else 'NOT met'}  {a.text}: {a.measured:.3g}")
    print(f"wrote {path}")
    return 0


def _demo(args: argparse.Namespace, configs: list) -> int:
    from reference import zoo

    from .bench import MB, Settings, chain_curves, chain_figure, measure, rows_of, unet_figure

    unet = zoo.load_teacher()
    ns = [n for n in (4, 9, 16, 25, 36, 49, 64, 81, 100, 144, 196, 256) if n <= args.chain_max]
    s = Settings(args.batch, args.repeats, 1, ns, rss=False)
    m, medians, iqrs = measure(unet, s, configs, threads=args.threads, progress=True)
    rows = rows_of(configs, m, medians, iqrs, s.batch, {})
    print(f"\nOne training step of the zoo U-Net, batch {s.batch} (MB = {MB} bytes)")
    print(f"{'policy':10} {'retained MB':>12} {'peak MB':>9} {'step ms':>9} {'x time':>7} "
          f"{'max|dg|':>9}  name")  # fmt: skip
    for c, r in zip(configs, rows, strict=True):
        v = r.values
        print(
            f"{c.key:10} {v['activation_mb']:12.2f} {v['peak_activation_mb']:9.2f} "
            f"{v['latency_ms']:9.1f} {v['step_time_ratio']:7.2f} {v['grad_max_abs_diff']:9.1e}"
            f"  {c.name}"
        )
    curves = chain_curves(ns)
    print("\nChain of n residual blocks: retained activation memory (units of one block input)")
    print(f"{'n':>5} " + " ".join(f"{k:>18}" for k in curves.saved))
    for i, n in enumerate(ns):
        print(f"{n:5d} " + " ".join(f"{v[i]:18.1f}" for v in curves.saved.values()))
    fig1 = unet_figure(configs, rows, args.out / f"{SLUG}-unet.png")
    fig2 = chain_figure(curves, args.out / f"{SLUG}-chain.png")
    print(f"\nwrote {fig1} and {fig2}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 and one error line for bad arguments)."""
    parser = _parser()
    args = parser.parse_args(argv)
    _validate(args, parser)
    configs = _configs(args, parser)
    import torch

    from reference.zoo import ZooError

    torch.set_num_threads(args.threads)
    try:
        return _bench(args.quick) if args.bench else _demo(args, configs)
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")
