"""Benchmark and command line of :mod:`reference.grid_search` (harness protocol)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SLUG = "grid-search"
MODULE = "reference.grid_search"
SOURCES = [
    Path(__file__).with_name(n)
    for n in ("__init__.py", "search.py", "objective.py", "analysis.py", "bench.py", "__main__.py")
]
QUALITY_TOLERANCE = 1.1
"""A configuration "matches" the default when its FDD is at most this factor above it."""
COST_TARGET = 0.5


def _label(p: Mapping[str, Any]) -> str:
    return f"{p['sampler']} {p['steps']} steps, guidance {p['guidance']:g}"


def run_grid(
    space: Mapping[str, Sequence[Any]],
    objective: Any,
    storage: str,
    study_name: str,
    *,
    heartbeat: int = 5,
    grace: int = 20,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], Any]:
    """Run (or resume) a worker on ``storage``/``study_name``; return completed rows + status."""
    import optuna
    from tqdm import tqdm

    from .search import completed_table, grid_status, open_study, run_worker

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(storage, study_name, space, heartbeat=heartbeat, grace=grace)
    start = grid_status(study, space)
    bar = tqdm(total=start.total, initial=start.complete, desc="grid points", disable=not progress)

    def on_trial(status: Any) -> None:
        bar.n = status.complete
        bar.refresh()

    try:
        status = run_worker(study, space, objective, on_trial=on_trial)
    finally:
        bar.close()
    return completed_table(study), status


def choose(rows: Sequence[Mapping[str, Any]], default: Mapping[str, Any]) -> Mapping[str, Any]:
    """The cheapest configuration whose FDD is within ``QUALITY_TOLERANCE`` of the default's;
    among those at <= ``COST_TARGET`` of its latency, the best quality."""
    base = next(r for r in rows if _same(r, default))
    ok = [r for r in rows if r["fd_digits"] <= QUALITY_TOLERANCE * base["fd_digits"]]
    cheap = [r for r in ok if r["latency_ms"] <= COST_TARGET * base["latency_ms"]]
    if cheap:
        return min(cheap, key=lambda r: (r["fd_digits"], r["latency_ms"]))
    return min(ok, key=lambda r: r["latency_ms"])


def _same(r: Mapping[str, Any], p: Mapping[str, Any]) -> bool:
    return all(r[k] == p[k] for k in ("sampler", "steps", "guidance"))


def benchmark(quick: bool = False) -> Any:
    """Full grid on the zoo teacher, Pareto front, interleaved re-measurement of the chosen
    point vs the default, and grid vs random vs TPE from the cached grid values."""
    import torch

    from reference.harness import (
        BenchmarkResult,
        Headline,
        Row,
        aim,
        compare_latency,
        fdd_floor,
        frechet_digits_distance,
        metrics,
        output_dir,
        provenance,
    )

    from .analysis import best_so_far_curves, pareto_front
    from .objective import (
        DEFAULT_POINT,
        FULL_SPACE,
        QUICK_SPACE,
        QUICK_TRAIN_SPACE,
        TRAIN_SPACE,
        model_objective,
        sample_point,
        train_objective,
    )

    torch.set_num_threads(2)
    space = QUICK_SPACE if quick else FULL_SPACE
    if quick:
        space = {**space, "steps": [*space["steps"], DEFAULT_POINT["steps"]]}
    n = 16 if quick else 100
    out = output_dir(quick)
    out.mkdir(parents=True, exist_ok=True)
    db = out / f".{SLUG}-study.db"
    db.unlink(missing_ok=True)
    try:
        rows, status = run_grid(
            space, model_objective(n), f"sqlite:///{db}", "bench", progress=not quick
        )
        train_space = QUICK_TRAIN_SPACE if quick else TRAIN_SPACE
        train_steps = 5 if quick else 200
        train_rows, _ = run_grid(
            train_space,
            train_objective(train_steps, n),
            f"sqlite:///{db}",
            "train-lr",
            progress=not quick,
        )
    finally:
        db.unlink(missing_ok=True)
    front = pareto_front(rows, ["fd_digits", "latency_ms"])
    base = next(r for r in rows if _same(r, DEFAULT_POINT))
    chosen = choose(rows, DEFAULT_POINT)
    control = {
        "sampler": "ddim",
        "steps": max(1, round(chosen["rows_per_image"])),
        "guidance": 1.0,
    }

    points = {"default": DEFAULT_POINT, "chosen": chosen, "control": control}
    runs = {k: (lambda p=p: sample_point(p, n)) for k, p in points.items()}
    lat = compare_latency(runs, repeats=2 if quick else 7, warmup=1, threads=2)
    fdd = {k: frechet_digits_distance(sample_point(p, n)[0]) for k, p in points.items()}
    names = {
        "default": f"default: {_label(DEFAULT_POINT)}",
        "chosen": f"grid choice: {_label(chosen)}",
        "control": f"DDIM at the choice's denoiser rows ({control['steps']} steps)",
    }
    roles = {"default": "baseline", "chosen": "technique", "control": "control"}
    result_rows = [
        Row(
            names[k],
            roles[k],
            {"latency_ms": lat.median_ms(k), "fd_digits": fdd[k]},
            {"latency_ms": lat.iqr_ms(k)},
        )
        for k in points
    ]
    for r in front:
        if not (_same(r, chosen) or _same(r, DEFAULT_POINT)):
            result_rows.append(
                Row(
                    f"Pareto front: {_label(r)}",
                    "reference",
                    {"latency_ms": r["latency_ms"], "fd_digits": r["fd_digits"]},
                )
            )
    for r in sorted(train_rows, key=lambda r: r["lr"]):
        result_rows.append(
            Row(
                f"training grid: tiny U-Net, {train_steps} steps, lr {r['lr']:g}",
                "reference",
                {"latency_ms": r["latency_ms"], "fd_digits": r["fd_digits"]},
            )
        )
    best_lr = min(train_rows, key=lambda r: r["fd_digits"])
    curves = best_so_far_curves(
        {(r["guidance"], r["sampler"], r["steps"]): r["fd_digits"] for r in rows},
        space,
        budget=len(rows),
        seeds=range(2 if quick else 8),
    )
    figures = _figures(rows, front, chosen, base, curves, out)
    speedup = lat.speedup["chosen"]
    quality_ratio = fdd["chosen"] / fdd["default"]
    budgets = [b for b in (5, 10, 20) if b <= len(rows)]
    notes = [
        f"Grid: {len(rows)} points ({', '.join(f'{k}={v}' for k, v in space.items())}), "
        f"{n} images each, FDD and one timed run per point; every point COMPLETE exactly once "
        f"({status.duplicates} duplicates). Default: {_label(DEFAULT_POINT)}.",
        f"Choice rule: the best FDD among points within {QUALITY_TOLERANCE}x of the default's "
        f"FDD at <= {COST_TARGET}x its grid latency (else the cheapest within the tolerance); "
        "its latency was then re-measured interleaved against the default (rows above).",
        f"FDD floor (real digits) at n = {n}: {fdd_floor(n):.2f}; differences below about that "
        "size are sampling noise.",
        "Best-found FDD after k trials (mean over seeds, from the cached grid values): "
        + "; ".join(
            f"k={b}: grid {curves['grid'][b - 1]:.2f}, random {curves['random'][b - 1]:.2f}, "
            f"TPE {curves['tpe'][b - 1]:.2f}"
            for b in budgets
        )
        + ".",
        f"Training-hyperparameter grid (second study in the same storage): a tiny U-Net "
        f"trained {train_steps} AdamW steps per learning rate {train_space['lr']}, FDD of "
        f"{n} DDIM-10 samples; best lr {best_lr['lr']:g} (FDD {best_lr['fd_digits']:.1f}); "
        "its 'latency' rows are training time.",
        "Latency is a 2-core CPU figure measured while other jobs shared the machine.",
    ]
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Grid search over sampler x steps x guidance on the zoo teacher (Optuna)",
        quick=quick,
        settings={
            "n": n,
            "space": {k: list(v) for k, v in space.items()},
            "threads": 2,
            "default": DEFAULT_POINT,
            "storage": "sqlite (temporary)",
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (active spin)"),
        },
        metrics=metrics("latency_ms", "fd_digits"),
        rows=result_rows,
        headline=Headline(
            speedup=speedup,
            speedup_limit=base["rows_per_image"] / chosen["rows_per_image"],
            quality_ratio=quality_ratio,
            quality_metric="fd_digits",
        ),
        aims=[
            aim(
                f"choice at <= {COST_TARGET}x the default's latency (speedup >= 2)",
                speedup,
                1 / COST_TARGET,
                ">=",
            ),
            aim(
                f"choice matches the default's FDD (ratio <= {QUALITY_TOLERANCE})",
                quality_ratio,
                QUALITY_TOLERANCE,
                "<=",
            ),
        ],
        notes=notes,
        figures=figures,
        provenance=provenance(SOURCES),
    )


def _figures(rows: Any, front: Any, chosen: Any, base: Any, curves: Any, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from reference.harness import curve_plot

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(
        [r["latency_ms"] for r in rows],
        [r["fd_digits"] for r in rows],
        s=14,
        color="0.6",
        label="grid points",
    )
    ax.plot(
        [r["latency_ms"] for r in front],
        [r["fd_digits"] for r in front],
        "o-",
        color="tab:blue",
        label="Pareto front",
    )
    ax.scatter(
        [base["latency_ms"]],
        [base["fd_digits"]],
        marker="s",
        s=60,
        color="tab:red",
        label=f"default ({_label(base)})",
        zorder=3,
    )
    ax.scatter(
        [chosen["latency_ms"]],
        [chosen["fd_digits"]],
        marker="*",
        s=140,
        color="tab:green",
        label=f"choice ({_label(chosen)})",
        zorder=3,
    )
    ax.set_xscale("log")
    ax.set_xlabel("latency per batch, ms (one run, 2-core CPU)")
    ax.set_ylabel("Fréchet digits distance (lower is better)")
    ax.legend(fontsize=7)
    ax.set_title("Quality vs latency over the grid")
    fig.tight_layout()
    fig.savefig(out / f"{SLUG}.png", dpi=120)
    plt.close(fig)
    k = list(range(1, len(curves["grid"]) + 1))
    curve_plot(
        k,
        {"grid": curves["grid"], "random": curves["random"], "TPE": curves["tpe"]},
        out / f"{SLUG}-strategies.png",
        xlabel="trials",
        ylabel="best FDD found (mean)",
        title="Grid vs random vs TPE at equal budgets (cached grid values)",
    )
    return [f"{SLUG}.png", f"{SLUG}-strategies.png"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.grid_search",
        description="Grid search over sampler x steps x guidance with Optuna's GridSampler on "
        "an RDB storage; run the same --search command on many machines to share the grid.",
    )
    p.add_argument("--search", action="store_true", help="run one worker on --storage/--study")
    p.add_argument(
        "--storage",
        default=None,
        help="SQLAlchemy URL (default: sqlite in --out); e.g. postgresql://...",
    )
    p.add_argument("--study", default="grid-search", help="study name shared by the workers")
    p.add_argument("--space", choices=["quick", "full"], default="quick", help="grid to search")
    p.add_argument(
        "--objective",
        choices=["model", "toy"],
        default="model",
        help="model: sample the zoo teacher; toy: cheap stand-in for protocol tests",
    )
    p.add_argument("--n", type=int, default=32, help="images per grid point (model objective)")
    p.add_argument("--sleep", type=float, default=0.2, help="seconds per toy trial")
    p.add_argument("--heartbeat", type=int, default=5, help="heartbeat interval, s")
    p.add_argument("--grace", type=int, default=20, help="seconds without heartbeat = stale")
    p.add_argument("--bench", action="store_true", help="full benchmark -> reference/results/")
    p.add_argument("--quick", action="store_true", help="with --bench: small run to artifacts/")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="output dir")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    from reference.zoo.store import ZooError

    args = _parser().parse_args(argv)
    try:
        if args.bench:
            from reference.harness import write_result

            result = benchmark(quick=args.quick)
            path = write_result(result)
            for a in result.aims:
                print(f"[{'met' if a.met else 'NOT met'}] {a.text}: {a.measured:.3g}")
            print(f"wrote {path}")
            return 0
        return _search(args)
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


def _search(args: argparse.Namespace) -> int:
    from .analysis import pareto_front
    from .objective import FULL_SPACE, QUICK_SPACE, model_objective, toy_objective

    if args.n < 2:
        raise ValueError(f"--n must be >= 2, got {args.n}")
    space = FULL_SPACE if args.space == "full" else {**QUICK_SPACE, "steps": [4, 10, 50]}
    args.out.mkdir(parents=True, exist_ok=True)
    storage = args.storage or f"sqlite:///{args.out / 'study.db'}"
    objective = toy_objective(args.sleep) if args.objective == "toy" else model_objective(args.n)
    rows, status = run_grid(
        space,
        objective,
        storage,
        args.study,
        heartbeat=args.heartbeat,
        grace=args.grace,
        progress=not args.search,
    )
    print(f"grid complete: {status.complete}/{status.total} points, {status.duplicates} duplicates")
    if not args.search:
        print(f"{'Pareto front':40s} {'FDD':>8s} {'latency ms':>11s}")
        for r in pareto_front(rows, ["fd_digits", "latency_ms"]):
            print(f"{_label(r):40s} {r['fd_digits']:8.2f} {r['latency_ms']:11.1f}")
    return 0
