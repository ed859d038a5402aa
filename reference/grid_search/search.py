"""Crash-safe grid search with Optuna's ``GridSampler`` on an RDB storage (SQLite by default).

Every worker runs the same command against the same storage URL and study name; the storage
is the only coordination. [`run_worker`][reference.grid_search.search.run_worker] loops:

1. ``fail_stale_trials``: a trial whose worker stopped sending heartbeats for ``grace`` seconds
   (killed, machine lost) is marked FAIL, and `optuna.storages.RetryHeartbeatStaleTrialCallback`
   adds a WAITING copy of it that keeps its ``grid_id`` (so the grid point is re-run, not lost).
   Optuna only judges trials that have a heartbeat: a worker killed between creating its trial and
   recording the first heartbeat (a window of milliseconds, wider on a loaded machine) would leave
   the point RUNNING forever, so
   [`fail_orphaned_trials`][reference.grid_search.search.fail_orphaned_trials] treats such a trial
   the same way once it is older than ``grace``;
2. grid points that failed without a pending retry (an exception, retries used up) are
   re-enqueued with ``enqueue_trial`` (fixed parameters);
3. if every point is COMPLETE the worker exits; if the remaining points are all RUNNING in other
   workers, it waits (they finish, or go stale and come back as WAITING);
4. otherwise it runs exactly one trial (``study.optimize(n_trials=1)``): a WAITING retry first,
   else the ``GridSampler`` picks a point that no trial has claimed.

Why the loop instead of ``study.optimize(n_trials=None)``: at the tail of a study
``GridSampler`` deliberately hands out points that are still RUNNING elsewhere ("all grids should
be evaluated before stopping"), which duplicates work, and a point whose worker was killed
stays RUNNING (counted as claimed) until someone marks it stale. Checking the grid state before
every trial gives "each point COMPLETE exactly once" for any number of kills and restarts.
Remaining race: two workers that ask at the same instant may draw the same free point (the
sampler picks randomly among free points to make this rare); the duplicate is detected by
[`grid_status`][reference.grid_search.search.grid_status] and reported, never hidden.
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback, fail_stale_trials
from optuna.trial import FrozenTrial, Trial, TrialState

GridValue = str | int | float
SearchSpace = Mapping[str, Sequence[GridValue]]
Objective = Callable[[dict[str, GridValue]], Mapping[str, float]]
OBJECTIVES = ("fd_digits", "latency_ms")
"""The two minimised objectives of a study (quality, cost)."""


def grid_points(space: SearchSpace) -> list[dict[str, GridValue]]:
    """All points of the grid, in a fixed order (the Cartesian product of ``space``)."""
    names = sorted(space)
    return [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(space[n] for n in names))
    ]


def _key(params: Mapping[str, Any], space: SearchSpace) -> tuple[Any, ...]:
    return tuple(params.get(n) for n in sorted(space))


@dataclass(frozen=True)
class GridStatus:
    """How the grid's points stand in the storage."""

    total: int
    complete: int
    running: int
    waiting: int
    free: int
    failed_unretried: list[dict[str, GridValue]]
    duplicates: int

    @property
    def done(self) -> bool:
        return self.complete == self.total


def grid_status(study: optuna.Study, space: SearchSpace) -> GridStatus:
    """Count COMPLETE / RUNNING / WAITING trials per grid point; ``duplicates`` = extra
    COMPLETE trials of an already complete point (0 when the protocol holds)."""
    points = {_key(p, space): p for p in grid_points(space)}
    complete: dict[tuple[Any, ...], int] = {}
    running, waiting, failed = set(), set(), set()
    for t in study.get_trials(deepcopy=False):
        params = t.params or t.system_attrs.get("fixed_params", {})
        if not params and "grid_id" in t.system_attrs:
            params = _params_of_grid_id(t, study.sampler)
        key = _key(params, space)
        if t.state == TrialState.COMPLETE:
            complete[key] = complete.get(key, 0) + 1
        elif t.state == TrialState.RUNNING:
            running.add(key)
        elif t.state == TrialState.WAITING:
            waiting.add(key)
        elif t.state == TrialState.FAIL:
            failed.add(key)
    claimed = set(complete) | running | waiting
    unretried = [points[k] for k in sorted(failed - claimed, key=str) if k in points]
    return GridStatus(
        total=len(points),
        complete=sum(1 for k in points if k in complete),
        running=len(running & set(points)),
        waiting=len(waiting & set(points)),
        free=sum(1 for k in points if k not in claimed),
        failed_unretried=unretried,
        duplicates=sum(c - 1 for c in complete.values()),
    )


def _params_of_grid_id(t: FrozenTrial, sampler: Any) -> dict[str, GridValue]:
    """The point a ``GridSampler`` assigned to a trial killed before it suggested its params.

    ``grid_id`` indexes the sampler's grid *after* its seeded shuffle, so every worker of a study
    must use the same ``seed`` ([`open_study`][reference.grid_search.search.open_study] fixes it).
    """
    grid = sampler._all_grids[t.system_attrs["grid_id"]]
    return dict(zip(sampler._param_names, grid, strict=True))


def open_study(
    storage_url: str,
    study_name: str,
    space: SearchSpace,
    *,
    heartbeat: int = 5,
    grace: int = 20,
    max_retry: int = 3,
    seed: int = 0,
) -> optuna.Study:
    """Create or load (``load_if_exists``) a two-objective study on ``storage_url`` with a
    ``GridSampler`` over ``space`` and heartbeat-based stale-trial retry."""
    if heartbeat < 1 or grace <= heartbeat:
        raise ValueError(f"need heartbeat >= 1 and grace > heartbeat, got {heartbeat}, {grace}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage = RDBStorage(
            storage_url,
            heartbeat_interval=heartbeat,
            grace_period=grace,
            heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry),
        )
    return optuna.create_study(
        storage=storage,
        study_name=study_name,
        load_if_exists=True,
        directions=["minimize"] * len(OBJECTIVES),
        sampler=optuna.samplers.GridSampler(dict(space), seed=seed),
    )


def _rdb_storage(study: optuna.Study) -> RDBStorage | None:
    storage = getattr(study._storage, "_backend", study._storage)
    return storage if isinstance(storage, RDBStorage) else None


def fail_orphaned_trials(study: optuna.Study, now: datetime | None = None) -> list[int]:
    """Fail (and retry) RUNNING trials that never recorded a heartbeat and are older than grace.

    ``fail_stale_trials`` skips a trial without a heartbeat row, so a worker killed before its
    first heartbeat would orphan its grid point. ``now`` (local time, as Optuna's
    ``datetime_start``) is for tests. Returns the numbers of the trials failed here.
    """
    import sqlalchemy

    rdb = _rdb_storage(study)
    if rdb is None or rdb.heartbeat_interval is None:
        return []
    grace = rdb.grace_period or 2 * rdb.heartbeat_interval
    now = now or datetime.now()
    with rdb.engine.connect() as conn:
        rows = conn.execute(sqlalchemy.text("SELECT trial_id FROM trial_heartbeats"))
        beating = {int(r[0]) for r in rows}
    callback = rdb.get_heartbeat_stale_trial_callback()
    failed: list[int] = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t._trial_id in beating or t.datetime_start is None:
            continue
        if (now - t.datetime_start).total_seconds() <= grace:
            continue
        try:
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        except RuntimeError:  # finished meanwhile (UpdateFinishedTrialError)
            continue
        failed.append(t.number)
        if callback is not None:
            callback(study, study._storage.get_trial(t._trial_id))
    return failed


def run_worker(
    study: optuna.Study,
    space: SearchSpace,
    objective: Objective,
    *,
    poll_s: float = 1.0,
    on_trial: Callable[[GridStatus], None] | None = None,
) -> GridStatus:
    """Evaluate grid points until every point is COMPLETE (see the module docstring)."""

    def optuna_objective(trial: Trial) -> tuple[float, ...]:
        params = {n: trial.suggest_categorical(n, list(space[n])) for n in sorted(space)}
        values = dict(objective(params))
        for k, v in values.items():
            trial.set_user_attr(k, float(v))
        return tuple(float(values[k]) for k in OBJECTIVES)

    while True:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            fail_stale_trials(study)
        fail_orphaned_trials(study)
        status = grid_status(study, space)
        if status.done:
            return status
        for params in status.failed_unretried:
            study.enqueue_trial(params, skip_if_exists=False)
        if status.failed_unretried:
            continue
        if status.free == 0 and status.waiting == 0:
            time.sleep(poll_s)  # the rest is RUNNING elsewhere (or about to go stale)
            continue
        study.optimize(optuna_objective, n_trials=1, catch=())
        if on_trial is not None:
            on_trial(grid_status(study, space))


def completed_table(study: optuna.Study) -> list[dict[str, Any]]:
    """One dict per COMPLETE trial: its params and user attributes (all measured values)."""
    rows = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        rows.append({**t.params, **t.user_attrs, "trial": t.number})
    return rows


def run_grid(
    space: SearchSpace,
    objective: Objective,
    storage: str,
    study_name: str,
    *,
    heartbeat: int = 5,
    grace: int = 20,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], GridStatus]:
    """Open (or join) ``study_name`` on ``storage``, run a worker until the grid is complete, and
    return the completed rows and the final status (what every machine of a search runs)."""
    from tqdm import tqdm

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(storage, study_name, space, heartbeat=heartbeat, grace=grace)
    start = grid_status(study, space)
    bar = tqdm(total=start.total, initial=start.complete, desc="grid points", disable=not progress)

    def on_trial(status: GridStatus) -> None:
        bar.n = status.complete
        bar.refresh()

    try:
        status = run_worker(study, space, objective, on_trial=on_trial)
    finally:
        bar.close()
    return completed_table(study), status
