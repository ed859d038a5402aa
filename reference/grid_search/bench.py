"""Benchmark and demo of [`reference.grid_search`][reference.grid_search] (the technique contract of
`reference.harness.cli`).

The benchmark runs the whole grid on the zoo teacher in a temporary SQLite study, evaluating every
point on the selection seeds ([`SELECT_SEEDS`][reference.grid_search.objective.SELECT_SEEDS]), keeps
the Pareto front and applies the choice rule. It then reports the choice on **held-out** seeds (the
harness's paired `SEEDS` at 256 samples, never seen by the search) against the default (DDIM, 50
steps) and two controls that are not the choice: the best single-axis setting (the same rule,
varying only the number of steps of the default sampler) and DDIM at the choice's denoiser rows
(matched cost), all timed in one interleaved comparison. A second study searches training learning
rates, and grid vs random vs TPE are replayed from the cached grid.

The demo *is* the distributed worker: run the same command on each of any number of machines
with one ``--storage`` and ``--study`` name, and they share the grid (each point is stored
COMPLETE exactly once; the point of a killed worker is re-run by another):

    python -m reference.grid_search --study NAME --space full \\
        --storage postgresql+psycopg://user:pw@host/db

``--storage`` picks where the study lives (see [`storage`][reference.grid_search.storage] and the
package docstring): ``postgresql+psycopg://...`` for many machines (a database server),
``journal:///PATH`` for a shared file system without one (no heartbeat: ``--grace`` must exceed the
slowest trial), and ``sqlite:///study.db`` (the default, in ``--out``) for one machine with one or a
few workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference.harness.cli import Option, at_least, check_seeds, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Metric,
    Row,
    metrics,
    note,
    settings_of,
    speedup_headline,
)
from reference.harness.seeds import N_QUALITY, SEEDS

from .analysis import choose, same_point, single_axis_choice
from .figures import label, pareto_figure, strategies_figure
from .objective import DEFAULT_POINT, QUICK_TRAIN_SPACE, SELECT_SEEDS, SPACES, TRAIN_SPACE
from .report import COST_TARGET, QUALITY_TOLERANCE, choice_aims, point_config, reported_rows

SLUG = "grid-search"
BUDGETS = (5, 10, 20)


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark, and the worker's storage, study and objective (demo)."""

    n: int = 100
    select_seeds: tuple[int, ...] = SELECT_SEEDS
    n_quality: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
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
        at_least(self, n=10, n_quality=10)
        check_seeds(self.seeds)
        if not self.select_seeds or set(self.select_seeds) & set(self.seeds):
            raise ValueError(
                f"--select-seeds must be non-empty and disjoint from --seeds (held out), got "
                f"{self.select_seeds} and {self.seeds}"
            )
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
QUICK = Config(
    n=16,
    select_seeds=(100,),
    n_quality=16,
    seeds=(0, 1),
    space="quick",
    repeats=2,
    train_steps=5,
    strategy_seeds=2,
)
DEMO = Config(n=32, space="quick")
OPTIONS = (
    Option("n"),
    Option("select_seeds", int_tuple, "S,S,..."),
    Option("n_quality"),
    Option("seeds", int_tuple, "S,S,..."),
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
        objective = model_objective(cfg.n, cfg.select_seeds)
        rows, status = run_grid(SPACES[cfg.space], objective, storage, "bench")
        objective = train_objective(cfg.train_steps, cfg.n)
        train_rows, _ = run_grid(train_space, objective, storage, "train-lr")
    finally:
        db.unlink(missing_ok=True)
    return rows, status, train_rows, train_space


def _held_out(cfg: Config, points: Mapping[str, Mapping[str, Any]]) -> Any:
    """FDD and KID of every reported point on the held-out seeds (paired, ``cfg.n_quality``)."""
    from reference.harness import over_seeds, quality_report

    from .objective import sample_point

    samplers = {
        k: (lambda seed, p=p: sample_point(p, cfg.n_quality, seed)[0]) for k, p in points.items()
    }
    return over_seeds(samplers, lambda k, x, same: quality_report(x), cfg.seeds, "held-out seeds")


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Grid on the selection seeds, Pareto front, choice; the choice, the default and two
    controls on held-out seeds, timed interleaved; training grid; search strategies."""
    from reference.harness import compare_latency, quality_note, real_reference_row

    from .analysis import best_so_far_curves, pareto_front
    from .objective import sample_point

    space = SPACES[cfg.space]
    rows, status, train_rows, train_space = _grids(cfg, out / f".{SLUG}-study.db")
    front = pareto_front(rows, ["fd_digits", "latency_ms"])
    base = next(r for r in rows if same_point(r, DEFAULT_POINT))
    chosen = choose(rows, DEFAULT_POINT, QUALITY_TOLERANCE, COST_TARGET)
    single = single_axis_choice(rows, DEFAULT_POINT, QUALITY_TOLERANCE, COST_TARGET)
    matched = {"sampler": "ddim", "steps": max(1, round(chosen["rows_per_image"])), "guidance": 1.0}
    points: dict[str, Mapping[str, Any]] = {"default": DEFAULT_POINT, "chosen": chosen}
    if not same_point(single, chosen):  # else tuning the steps alone finds the choice (a note)
        points["single"] = single
    points["matched"] = matched

    q = _held_out(cfg, points)
    runs = {k: (lambda p=p: sample_point(p, cfg.n)) for k, p in points.items()}
    lat = compare_latency(runs, repeats=cfg.repeats, warmup=1)
    result_rows = reported_rows(points, q, lat, rows)
    for r in front:
        if not any(same_point(r, p) for p in points.values()):
            values = {"latency_ms": r["latency_ms"], "fd_select": r["fd_digits"]}
            result_rows.append(Row(f"front-{_point_id(r)}", point_config(r), "reference", values))
    for r in sorted(train_rows, key=lambda r: r["lr"]):
        config = {"method": "train-lr", "lr": r["lr"], "steps": cfg.train_steps}
        values = {"train_s": r["latency_ms"] / 1000, "fd_select": r["fd_digits"]}
        result_rows.append(Row(f"lr-{r['lr']:g}", config, "reference", values))
    result_rows.append(real_reference_row(cfg.n_quality))

    best_lr = min(train_rows, key=lambda r: r["fd_digits"])
    table = {(r["guidance"], r["sampler"], r["steps"]): r["fd_digits"] for r in rows}
    curves = best_so_far_curves(table, space, len(rows), range(cfg.strategy_seeds))
    figures = [Figure(f"{SLUG}.png", "pareto"), Figure(f"{SLUG}-strategies.png", "strategies")]
    pareto_figure(rows, front, chosen, base, out / figures[0].file)
    strategies_figure(curves, out / figures[1].file)

    limit = base["rows_per_image"] / chosen["rows_per_image"]
    ratio = q.ratio("chosen", "default", "fd_digits")
    notes = [
        note(
            "grid",
            points=len(rows),
            samplers=len(space["sampler"]),
            steps=list(space["steps"]),
            guidance=list(space["guidance"]),
            n=cfg.n,
            select_seeds=len(cfg.select_seeds),
            duplicates=status.duplicates,
        ),
        note("choice-rule", tolerance=QUALITY_TOLERANCE, cost_target=COST_TARGET),
        note(
            "selection-vs-held-out",
            selected=chosen["fd_digits"] / base["fd_digits"],
            held_out=ratio.value,
            n=cfg.n,
            n_quality=cfg.n_quality,
        ),
        *([] if "single" in points else [note("single-axis-is-the-choice")]),
        note("rows-limit", limit=limit),
        note("solver-settings"),
        quality_note(cfg.n_quality, cfg.seeds),
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
        metrics=metrics(
            "latency_ms",
            "speedup",
            "fd_digits",
            "kid_digits",
            "diversity",
            fd_select=Metric("", "lower"),
            train_s=Metric("s", "lower"),
        ),
        rows=result_rows,
        headline=speedup_headline(
            "chosen",
            lat,
            limit=limit,
            limit_kind="estimate",  # denoiser rows; the samplers' own overheads differ
            quality_ratio=ratio.value,
            quality_interval=ratio.interval,
        ),
        aims=choice_aims(q, lat),
        notes=notes,
        figures=figures,
    )


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
        print(f"{label(r):40s} {r['fd_digits']:8.2f} {r['latency_ms']:11.1f}")
