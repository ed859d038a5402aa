"""Command line: a one-minute demonstration, ``--bench`` for the full benchmark."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

SLUG = "stochastic-reparameterization"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.stochastic_reparameterization",
        description="Variance of the diffusion training objective under different noise/timestep "
        "sampling schemes (zoo teacher), its decomposition, and optional short training runs of "
        "a tiny U-Net per parameterization (eps, v, x0, EDM).",
    )
    p.add_argument("--batch", type=int, default=32, help="minibatch size (default 32)")
    p.add_argument("--draws", type=int, default=100, help="repeated minibatches (default 100)")
    p.add_argument(
        "--train-steps",
        type=int,
        default=0,
        help="also train a tiny U-Net per scheme for this many steps (default 0: skip)",
    )
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="figure folder")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write its result")
    p.add_argument("--quick", action="store_true", help="with --bench: small configuration")
    return p


def _validate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.batch < 2 or args.batch % 2:
        parser.error(f"--batch must be an even number >= 2 (antithetic pairs), got {args.batch}")
    if args.draws < 20:
        parser.error(f"--draws must be >= 20 to estimate a variance, got {args.draws}")
    if args.train_steps < 0:
        parser.error(f"--train-steps must be >= 0, got {args.train_steps}")
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    if args.quick and not args.bench:
        parser.error("--quick only applies with --bench")


def _bench(quick: bool) -> int:
    from reference.harness import write_result

    from .bench import benchmark

    result = benchmark(quick=quick, progress=True)
    path = write_result(result)
    for a in result.aims:
        print(f"{'met    ' if a.met else 'NOT met'}  {a.text}: {a.measured:.3g}")
    print(f"wrote {path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .bench import (
        ESTIMATORS,
        SAME_EPS,
        Context,
        mechanism_figure,
        settings,
        teacher_loss_study,
        training_figure,
        training_runs,
    )
    from .variance import variance_ratio_ci

    s = replace(
        settings(False),
        batch=args.batch,
        loss_draws=args.draws,
        train_steps=max(args.train_steps, 1),
        eval_every=max(args.train_steps // 5, 1),
        fdd_n=100,
        ddim_steps=25,
        own_draws=8,
    )
    ctx = Context.make()
    loss = teacher_loss_study(ctx, s, progress=True)
    base = loss.values["eps-iid"]
    print(f"\nZoo teacher, eps objective (L_simple), batch {s.batch}, {s.loss_draws} minibatches")
    print(f"{'estimator':58} {'mean':>8} {'var ratio':>10}  95% interval")
    for e in ESTIMATORS:
        if e.group != SAME_EPS:
            continue
        vals = loss.values[e.key]
        ratio, lo, hi = variance_ratio_ci(base, vals)
        print(f"{e.name:58} {float(vals.mean()):8.4f} {ratio:10.2f}  [{lo:.2f}, {hi:.2f}]")
    d = loss.decomposition
    print(
        f"\nper-example variance: between-t {d.between_t / d.total:.0%} (stratification removes "
        f"it), odd in eps {d.odd_eps / d.total:.0%} (antithetic pairs cancel it), optimal "
        f"importance sampling of t would divide it by {d.is_gain:.2f}"
    )
    figures = [mechanism_figure(ctx, loss, args.out / f"{SLUG}-mechanism.png")]
    if args.train_steps:
        runs = training_runs(ctx, s, progress=True)
        print(f"\nTiny U-Net, {s.train_steps} steps of batch {s.train_batch}, held-out yardsticks")
        print(f"{'scheme':16} {'eps-MSE':>9} {'x0-MSE':>9} {'FDD':>8}")
        for key, r in runs.items():
            eps_mse, x0_mse = r.mean_curve("eps_mse")[-1], r.mean_curve("x0_mse")[-1]
            print(f"{key:16} {eps_mse:9.4f} {x0_mse:9.4f} {sum(r.fdds) / len(r.fdds):8.2f}")
        figures.append(training_figure(runs, args.out / f"{SLUG}-training.png"))
    print("\nwrote " + " and ".join(str(f) for f in figures))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 and one error line for bad arguments)."""
    parser = _parser()
    args = parser.parse_args(argv)
    _validate(args, parser)
    import torch

    from reference.zoo import ZooError

    torch.set_num_threads(args.threads)
    try:
        return _bench(args.quick) if args.bench else _demo(args)
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")
