"""Benchmark and demo of :mod:`reference.grid_search` (the technique contract of
:mod:`reference.harness.cli`).

The benchmark runs the whole grid on the zoo teacher in a temporary SQLite study, keeps the
Pareto front, re-measures the chosen point interleaved against the default (DDIM, 50 steps) and a
matched-cost control (DDIM at the choice's denoiser rows), runs a second study over training
learning rates, and replays grid vs random vs TPE from the cached grid values.

The demo *is* the distributed worker: run the same command on each of any number of machines
with one ``--storage`` and ``--study`` name, and they share the grid (each point is stored
COMPLETE exactly once; the point of a killed worker is re-run by another)::

    python -m reference.grid_search --study NAME --space full \\
        --storage postgresql+psycopg://user:pw@host/db

``--storage`` picks where the study lives (see :mod:`.storage` and the package docstring):
``postgresql+psycopg://...`` for many machines (a database server), ``journal:///PATH`` for a
shared file system without one (no heartbeat: ``--grace`` must exceed the slowest trial), and
``sqlite:///study.db`` (the default, in ``--out``) for one machine with one or a few workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference.harness.cli import Option, at_least
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)

from .analysis import choose, same_point
from .objective import DEFAULT_POINT, QUICK_TRAIN_SPACE, SPACES, TRAIN_SPACE

SLUG = "grid-search"
QUALITY_TOLERANCE = 1.1
"""A configuration "matches" the default when its FDD is at most this factor above it."""
COST_TARGET = 0.5
BUDGETS = (5, 10, 20)


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark, and the worker's storage, study and objective (demo)."""

    n: int = 100
    space: str = "full"
    repeats: int = 15
    train_steps: int = 200
    strategy_seeds: int = 8
    storage: str = ""
    study: str = "grid-search"
    objective: str = "model"
    sleep: float = 0.2
    heartbeat: int = 5
    grace: int = 20

    def validate(self) -> None:
        at_least(self, n=2)
        if self.space not in SPACES:
            raise ValueError(f"--space must be one of {', '.join(SPACES)}, got {self.space!r}")
        if self.objective not in ("model", "toy"):
            raise ValueError(f"--objective must be model or toy, got {self.objective!r}")
        for name in ("repeats", "train_steps", "strategy_seeds", "heartbeat"):
            if getattr(self, name) < 1:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be >= 1, got {getattr(self, name)}")
        if self.grace <= self.heartbeat:
            raise ValueError(
                f"--grace must be > --heartbeat, got {self.grace} and {self.heartbeat}"
            )
        at_least(self, sleep=0)
        if not self.study.strip():
            raise ValueError("--study must not be empty")
        if self.storage:
            from .storage import storage_kind

            try:
                storage_kind(self.storage)
            except ValueError as exc:
                raise ValueError(f"--storage {exc}") from None


FULL = Config()
QUICK = Config(n=16, space="quick", repeats=2, train_steps=5, strategy_seeds=2)
DEMO = Config(n=32, space="quick")
OPTIONS = (
    Option("n"),
    Option("space", str, "quick|full"),
    Option("repeats"),
    Option("train_steps"),
    Option("storage", str, "URL"),
    Option("study", str, "NAME"),
    Option("objective", str, "model|toy"),
    Option("sleep", float, "S"),
    Option("heartbeat"),
    Option("grace"),
)


def _config(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"method": p["sampler"], "steps": int(p["steps"]), "guidance": float(p["guidance"])}


def _point_id(p: Mapping[str, Any]) -> str:
    return f"{p['sampler']}-{p['steps']}-{p['guidance']:g}"


def _grids(cfg: Config, db: Path) -> tuple[list[dict[str, Any]], Any, list[dict[str, Any]], Any]:
    """Both studies in one temporary SQLite storage: the sampling grid and the training grid."""
    from .objective import model_objective, train_objective
    from .search import run_grid

    storage = f"sqlite:///{db}"
    train_space = QUICK_TRAIN_SPACE if cfg.space == "quick" else TRAIN_SPACE
    db.unlink(missing_ok=True)
    try:
        rows, status = run_grid(SPACES[cfg.space], model_objective(cfg.n), storage, "bench")
        objective = train_objective(cfg.train_steps, cfg.n)
        train_rows, _ = run_grid(train_space, objective, storage, "train-lr")
    finally:
        db.unlink(missing_ok=True)
    return rows, status, train_rows, train_space


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Grid, Pareto front, interleaved re-measurement of the choice, training grid, strategies."""

    from reference.harness import compare_latency, fdd_floor, frechet_digits_distance

    from .analysis import best_so_far_curves, pareto_front
    from .objective import sample_point

    space = SPACES[cfg.space]
    rows, status, train_rows, train_space = _grids(cfg, out / f".{SLUG}-study.db")
    front = pareto_front(rows, ["fd_digits", "latency_ms"])
    base = next(r for r in rows if same_point(r, DEFAULT_POINT))
    chosen = choose(rows, DEFAULT_POINT, QUALITY_TOLERANCE, COST_TARGET)
    control = {"sampler": "ddim", "steps": max(1, round(chosen["rows_per_image"])), "guidance": 1.0}

    points = {"default": DEFAULT_POINT, "chosen": chosen, "control": control}
    runs = {k: (lambda p=p: sample_point(p, cfg.n)) for k, p in points.items()}
    lat = compare_latency(runs, repeats=cfg.repeats, warmup=1)
    fdd = {k: frechet_digits_distance(sample_point(p, cfg.n)[0]) for k, p in points.items()}
    roles = {"default": "baseline", "chosen": "technique", "control": "control"}
    result_rows = [
        Row(
            k,
            _config(p) if k != "control" else {"method": "ddim-matched", "steps": p["steps"]},
            roles[k],  # type: ignore[arg-type]
            {"latency_ms": lat.median_ms(k), "speedup": lat.speedup[k], "fd_digits": fdd[k]},
            intervals={} if k == "default" else {"speedup": lat.speedup_interval(k)},
            spread={"latency_ms": lat.iqr_ms(k)},
        )
        for k, p in points.items()
    ]
    for r in front:
        if not (same_point(r, chosen) or same_point(r, DEFAULT_POINT)):
            values = {"latency_ms": r["latency_ms"], "fd_digits": r["fd_digits"]}
            result_rows.append(Row(f"front-{_point_id(r)}", _config(r), "reference", values))
    for r in sorted(train_rows, key=lambda r: r["lr"]):
        config = {"method": "train-lr", "lr": r["lr"], "steps": cfg.train_steps}
        values = {"train_s": r["latency_ms"] / 1000, "fd_digits": r["fd_digits"]}
        result_rows.append(Row(f"lr-{r['lr']:g}", config, "reference", values))

    best_lr = min(train_rows, key=lambda r: r["fd_digits"])
    table = {(r["guidance"], r["sampler"], r["steps"]): r["fd_digits"] for r in rows}
    curves = best_so_far_curves(table, space, len(rows), range(cfg.strategy_seeds))
    figures = [Figure(f"{SLUG}.png", "pareto"), Figure(f"{SLUG}-strategies.png", "strategies")]
    _pareto_figure(rows, front, chosen, base, out / figures[0].file)
    _strategies_figure(curves, out / figures[1].file)

    speedup, limit = lat.speedup["chosen"], base["rows_per_image"] / chosen["rows_per_image"]
    notes = [
        note(
            "grid",
            points=len(rows),
            samplers=len(space["sampler"]),
            steps=list(space["steps"]),
            guidance=list(space["guidance"]),
            n=cfg.n,
            duplicates=status.duplicates,
        ),
        note("choice-rule", tolerance=QUALITY_TOLERANCE, cost_target=COST_TARGET),
        note(
            "quality-by-construction",
            ratio=fdd["chosen"] / fdd["default"],
            tolerance=QUALITY_TOLERANCE,
            n=cfg.n,
        ),
        note("rows-limit", limit=limit),
        note("fdd-at-n", n=cfg.n, floor=fdd_floor(cfg.n)),
        latency_note(cfg.repeats, cfg.n),
        *[
            note("strategies", k=b, **{name: c[b - 1] for name, c in curves.items()})
            for b in BUDGETS
            if b <= len(rows)
        ],
        note(
            "train-grid",
            steps=cfg.train_steps,
            lrs=list(train_space["lr"]),
            n=cfg.n,
            best_lr=best_lr["lr"],
            best_fdd=best_lr["fd_digits"],
        ),
        note("grid-latency"),
    ]
    return Measurement(
        settings=settings_of(
            cfg,
            samplers=list(space["sampler"]),
            steps=list(space["steps"]),
            guidance=list(space["guidance"]),
            default_sampler=DEFAULT_POINT["sampler"],
            default_steps=DEFAULT_POINT["steps"],
            default_guidance=DEFAULT_POINT["guidance"],
            storage="sqlite",
        ),
        metrics=metrics("latency_ms", "speedup", "fd_digits", train_s=Metric("s", "lower")),
        rows=result_rows,
        headline=speedup_headline(
            "chosen",
            lat,
            limit=limit,
            limit_kind="estimate",  # denoiser rows; the samplers' own overheads differ
            quality_ratio=fdd["chosen"] / fdd["default"],
        ),
        aims=[
            aim(
                "speedup",
                speedup,
                1 / COST_TARGET,
                ">=",
                interval=lat.speedup_interval("chosen"),
                cost_target=COST_TARGET,
            )
        ],
        notes=notes,
        figures=figures,
    )


def _label(p: Mapping[str, Any]) -> str:
    return f"{p['sampler']} {p['steps']} steps, guidance {p['guidance']:g}"


def _pareto_figure(rows: Sequence[Any], front: Sequence[Any], chosen: Any, base: Any, path: Path):  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(7, 4.5), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    lat, fd = [r["latency_ms"] for r in rows], [r["fd_digits"] for r in rows]
    ax.scatter(lat, fd, s=14, color="0.6", label="grid points")
    ax.plot([r["latency_ms"] for r in front], [r["fd_digits"] for r in front], "o-", label="front")
    for p, marker, color, name in (
        (base, "s", "tab:red", "default"),
        (chosen, "*", "tab:green", "choice"),
    ):
        label = f"{name} ({_label(p)})"
        ax.scatter(
            [p["latency_ms"]], [p["fd_digits"]], marker=marker, s=100, color=color, label=label
        )
    ax.set_xscale("log")
    ax.set_xlabel("latency per batch, ms (one run per point)")
    ax.set_ylabel("FDD (lower is better)")
    ax.legend(fontsize=7)
    fig.savefig(path)


def _strategies_figure(curves: Mapping[str, Any], path: Path) -> None:
    from reference.harness import curve_plot

    k = list(range(1, len(curves["grid"]) + 1))
    series = {"grid": curves["grid"], "random": curves["random"], "TPE": curves["tpe"]}
    curve_plot(k, series, path, xlabel="trials", ylabel="best FDD found (mean over seeds)")


def demo(cfg: Config, out: Path) -> None:
    """One worker of a (possibly distributed) grid search; prints the front when it is complete."""
    from .analysis import pareto_front
    from .objective import model_objective, toy_objective
    from .search import run_grid

    out.mkdir(parents=True, exist_ok=True)
    storage = cfg.storage or f"sqlite:///{out / 'study.db'}"
    objective = toy_objective(cfg.sleep) if cfg.objective == "toy" else model_objective(cfg.n)
    rows, status = run_grid(
        SPACES[cfg.space], objective, storage, cfg.study, heartbeat=cfg.heartbeat, grace=cfg.grace
    )
    print(f"grid complete: {status.complete}/{status.total} points, {status.duplicates} duplicates")
    print(f"{'Pareto front':40s} {'FDD':>8s} {'latency ms':>11s}")
    for r in pareto_front(rows, ["fd_digits", "latency_ms"]):
        print(f"{_label(r):40s} {r['fd_digits']:8.2f} {r['latency_ms']:11.1f}")
