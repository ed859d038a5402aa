"""The selection side of the benchmark: both grids run to completion in one temporary SQLite
storage, then read (Pareto front, choice, strategy replay). Nothing here sees a reporting seed or
a held-out digit (see `reference.grid_search.objective`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .analysis import best_so_far_curves, pareto_front, same_point
from .objective import (
    DEFAULT_POINT,
    QUICK_TRAIN_SPACE,
    SPACES,
    TRAIN_SPACE,
    model_objective,
    train_objective,
)
from .report import reported_points
from .search import GridStatus, run_grid


@dataclass(frozen=True)
class Selection:
    """What the search found on the selection seeds."""

    space: Mapping[str, Sequence[Any]]
    grid: list[dict[str, Any]]
    status: GridStatus
    front: list[Mapping[str, Any]]
    points: dict[str, Mapping[str, Any]]
    """The reported points by row id (default, chosen, and the controls that are not the
    choice)."""
    omitted: list[str]
    train_space: Mapping[str, Sequence[Any]]
    train_grid: list[dict[str, Any]]
    curves: dict[str, Any]
    """Best selection FDD found after 1..k trials, for grid, random and TPE search."""

    @property
    def base(self) -> Mapping[str, Any]:
        """The default point's grid row."""
        return next(r for r in self.grid if same_point(r, DEFAULT_POINT))

    def row_of(self, key: str) -> Mapping[str, Any]:
        """The grid row of reported point ``key``."""
        return next(r for r in self.grid if same_point(r, self.points[key]))


def select(
    space_name: str,
    n: int,
    seeds: tuple[int, ...],
    train_steps: int,
    strategy_seeds: int,
    db: Path,
) -> Selection:
    """Run the sampling grid and the learning-rate grid on ``seeds`` in a throw-away SQLite file
    ``db`` (removed afterwards), and read them."""
    space = SPACES[space_name]
    train_space = QUICK_TRAIN_SPACE if space_name == "quick" else TRAIN_SPACE
    storage = f"sqlite:///{db}"
    db.unlink(missing_ok=True)
    try:
        grid, status = run_grid(space, model_objective(n, seeds), storage, "bench")
        train = train_objective(train_steps, n, seeds)
        train_grid, _ = run_grid(train_space, train, storage, "train-lr")
    finally:
        db.unlink(missing_ok=True)
    points, omitted = reported_points(grid)
    table = {(r["guidance"], r["sampler"], r["steps"]): r["fd_digits"] for r in grid}
    curves = best_so_far_curves(table, space, len(grid), range(strategy_seeds))
    return Selection(
        space,
        grid,
        status,
        pareto_front(grid, ["fd_digits", "latency_ms"]),
        points,
        omitted,
        train_space,
        train_grid,
        curves,
    )
