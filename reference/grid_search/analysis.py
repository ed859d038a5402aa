"""Reading a finished grid: the Pareto front, and grid vs random vs TPE at equal budgets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def pareto_front(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> list[Mapping[str, Any]]:
    """Rows not dominated on ``keys`` (all minimised), sorted by the last key (the cost).

    Row ``a`` dominates ``b`` when it is no worse on every key and better on at least one.
    """

    def dominates(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        return all(a[k] <= b[k] for k in keys) and any(a[k] < b[k] for k in keys)

    front = [r for r in rows if not any(dominates(o, r) for o in rows if o is not r)]
    return sorted(front, key=lambda r: r[keys[-1]])


def same_point(row: Mapping[str, Any], point: Mapping[str, Any]) -> bool:
    """Whether ``row`` is the grid point ``point`` (sampler, steps and guidance agree)."""
    return all(row[k] == point[k] for k in ("sampler", "steps", "guidance"))


def choose(
    rows: Sequence[Mapping[str, Any]],
    default: Mapping[str, Any],
    tolerance: float,
    cost_target: float,
) -> Mapping[str, Any]:
    """The choice rule: among the points whose FDD is within ``tolerance`` times the default's
    and whose latency is at most ``cost_target`` times the default's, the best FDD; if there is
    none, the cheapest point within the tolerance."""
    base = next(r for r in rows if same_point(r, default))
    ok = [r for r in rows if r["fd_digits"] <= tolerance * base["fd_digits"]]
    cheap = [r for r in ok if r["latency_ms"] <= cost_target * base["latency_ms"]]
    if cheap:
        return min(cheap, key=lambda r: (r["fd_digits"], r["latency_ms"]))
    return min(ok, key=lambda r: r["latency_ms"])


def single_axis_choice(
    rows: Sequence[Mapping[str, Any]],
    default: Mapping[str, Any],
    tolerance: float,
    cost_target: float,
    axis: str = "steps",
) -> Mapping[str, Any]:
    """The choice rule applied to the points that differ from ``default`` on ``axis`` alone:
    what tuning one knob (by default the number of steps of the default sampler) finds."""
    others = [k for k in ("sampler", "steps", "guidance") if k != axis]
    line = [r for r in rows if all(r[k] == default[k] for k in others)]
    return choose(line, default, tolerance, cost_target)


def best_so_far_curves(
    table: Mapping[tuple[Any, ...], float],
    space: Mapping[str, Sequence[Any]],
    budget: int,
    seeds: Sequence[int],
) -> dict[str, np.ndarray]:
    """Mean best-found value (minimised) after 1..``budget`` trials for grid, random and TPE.

    All three choose among the same grid points and read the cached value ``table[point]``
    (keys ordered by ``sorted(space)``), so the comparison costs no model evaluations. Grid
    search visits points in the ``GridSampler``'s seeded random order (without replacement);
    random search draws independently (repeats waste budget); TPE (Bergstra et al. 2011) models
    good and bad regions after 5 random start-up trials. Random vs grid: Bergstra & Bengio
    2012 (JMLR 13:281-305).
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names = sorted(space)

    def objective(trial: optuna.Trial) -> float:
        key = tuple(trial.suggest_categorical(n, list(space[n])) for n in names)
        return float(table[key])

    makers = {
        "grid": lambda s: optuna.samplers.GridSampler(dict(space), seed=s),
        "random": lambda s: optuna.samplers.RandomSampler(seed=s),
        "tpe": lambda s: optuna.samplers.TPESampler(seed=s, n_startup_trials=5),
    }
    curves: dict[str, np.ndarray] = {}
    for name, make in makers.items():
        runs = []
        for seed in seeds:
            study = optuna.create_study(sampler=make(seed))
            study.optimize(objective, n_trials=budget)
            values = [t.value for t in study.trials]
            runs.append(np.minimum.accumulate(np.asarray(values, dtype=float)))
        curves[name] = np.mean(runs, axis=0)
    return curves
