"""Crash-safe grid search with Optuna's ``GridSampler`` on a shared storage (SQLite by default).

Every worker runs the same command against the same storage (an RDB URL or a journal file, see
[`storage`][reference.grid_search.storage]) and study name; the storage is the only coordination.
[`run_worker`][reference.grid_search.search.run_worker] loops:

1. trials whose worker stopped sending heartbeats for ``grace`` seconds (killed, machine lost)
   are failed, and `optuna.storages.RetryHeartbeatStaleTrialCallback` adds a WAITING copy of
   each that keeps its ``grid_id`` (so the grid point is re-run, not lost): Optuna's
   ``fail_stale_trials``, and
   [`fail_orphaned_trials`][reference.grid_search.storage.fail_orphaned_trials] for a trial
   killed before its first heartbeat. Liveness is judged by heartbeats on every storage, the
   journal file included, never by how long a trial has run;
2. grid points that failed without a pending retry (an exception, retries used up, a claim
   given up) are queued again as WAITING trials with their ``grid_id``
   ([`requeue_failed`][reference.grid_search.search.requeue_failed]);
3. if every point is COMPLETE and no copy is left WAITING the worker exits; if the remaining
   points are all RUNNING in other workers, it waits (they finish, or go stale and come back as
   WAITING);
4. otherwise it runs exactly one trial (``study.optimize(n_trials=1)``): a WAITING retry first,
   else the ``GridSampler`` picks a point that no trial has claimed. Before evaluating, the
   trial checks its claim (below); if another worker judged this live trial stale meanwhile,
   its result can no longer be stored: the worker drops it and goes on, and the retry evaluates
   the point.

The unique claim
================
Several trials can hold one grid point at once: two workers that read the grid at the same
instant both re-queue a failed point in step 2 (the re-queue is a read, then a write, and no
storage offers a conditional insert through Optuna's API), and at the tail of a study
``GridSampler`` deliberately hands out points that are still RUNNING elsewhere ("all grids should
be evaluated before stopping"; optuna/optuna#2039 documents simultaneous draws as expected).
Instead of preventing the duplicates, the claim is made unique by an order the storage itself
defines: trial numbers, which the storage assigns once, at creation, in one total order. A
trial ``t`` of point ``p`` evaluates it only if

    no trial of p is COMPLETE, and no other trial of p that is RUNNING or WAITING
    has a smaller number than t                                                   (1)

and gives up otherwise (PRUNED, with ``duplicate_of``). A claim is stored (RUNNING, with its grid
point) before it is checked, and numbers never change, so of any set of live claims of one point
exactly the lowest passes (1), whatever the order and timing of the checks: two workers that
pop two copies of a re-queued point at the same instant run it once, and never both give it up
(a check that only looked for *another* live claim let both give up, and the point was queued
yet again). A WAITING copy with a smaller number wins over a RUNNING one that has not been
checked yet; once a trial has passed (1), every new claim of its point has a larger number.
A copy left WAITING after its point is COMPLETE is popped, gives up at once and costs no
evaluation. [`grid_status`][reference.grid_search.search.grid_status] counts duplicate COMPLETE
trials anyway, so a broken protocol is reported, never hidden.

Why the loop instead of ``study.optimize(n_trials=None)``: ``GridSampler`` keeps handing out
RUNNING points at the tail, and a point whose worker was killed stays RUNNING (counted as
claimed) until someone marks it stale; checking the grid state before every trial keeps workers
waiting instead of duplicating work. Every point ends COMPLETE exactly once for any number of
workers, kills and restarts.
"""

from __future__ import annotations

import itertools
import os
import socket
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.storages import fail_stale_trials
from optuna.trial import FrozenTrial, Trial, TrialState

from .storage import fail_orphaned_trials, open_storage

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


def worker_id() -> str:
    """This process as ``host:pid``: the ``worker`` user attribute of the trials it runs."""
    return f"{socket.gethostname()}:{os.getpid()}"


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
        key = _point_key(t, study.sampler, space)
        if t.state == TrialState.COMPLETE:
            complete[key] = complete.get(key, 0) + 1
        elif t.state == TrialState.RUNNING:
            running.add(key)
        elif t.state == TrialState.WAITING:
            waiting.add(key)
        elif t.state in (TrialState.FAIL, TrialState.PRUNED):  # PRUNED: a claim given up
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


def _point_key(t: FrozenTrial, sampler: Any, space: SearchSpace) -> tuple[Any, ...]:
    """The grid point of a trial: assigned by the sampler (``grid_id``), else fixed
    (``enqueue_trial``) or suggested. The assignment comes first: a worker killed between two
    ``suggest`` calls leaves a trial with only some of its params (each suggest is one write),
    and its retry copies them; keyed by those, the trial would claim no point, and a retry left
    WAITING after its point completed elsewhere would not be seen by the exit check."""
    if "grid_id" in t.system_attrs:
        return _key(_params_of_grid_id(t, sampler), space)
    return _key(t.params or t.system_attrs.get("fixed_params", {}), space)


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
        storage = open_storage(storage_url, heartbeat=heartbeat, grace=grace, max_retry=max_retry)
    return optuna.create_study(
        storage=storage,
        study_name=study_name,
        load_if_exists=True,
        directions=["minimize"] * len(OBJECTIVES),
        sampler=optuna.samplers.GridSampler(dict(space), seed=seed),
    )


def _enqueue_point(study: optuna.Study, params: Mapping[str, GridValue]) -> None:
    """Queue a WAITING trial of a grid point the way the retry callback does (by ``grid_id``):
    ``enqueue_trial`` would fix its parameters without a ``grid_id``, which
    ``GridSampler.after_trial`` requires when one point is left (KeyError)."""
    sampler = study.sampler
    grid = tuple(params[n] for n in sampler._param_names)
    system_attrs = {
        "grid_id": sampler._all_grids.index(grid),
        "search_space": sampler._search_space,
    }
    study.add_trial(optuna.trial.create_trial(state=TrialState.WAITING, system_attrs=system_attrs))


def _earlier_claim(study: optuna.Study, trial_id: int, space: SearchSpace) -> int | None:
    """The number of the trial that holds this trial's grid point by (1): a COMPLETE trial of
    it, or a RUNNING or WAITING one with a smaller number (``None``: this trial holds it)."""
    trials = study.get_trials(deepcopy=False)
    mine = next(t for t in trials if t._trial_id == trial_id)
    key = _point_key(mine, study.sampler, space)
    pending = (TrialState.RUNNING, TrialState.WAITING)
    for t in trials:
        if t._trial_id == trial_id or _point_key(t, study.sampler, space) != key:
            continue
        if t.state == TrialState.COMPLETE or (t.state in pending and t.number < mine.number):
            return t.number  # (1)
    return None


def requeue_failed(study: optuna.Study, status: GridStatus) -> None:
    """Step 2: queue a WAITING trial for each grid point that failed without a pending retry
    (two workers may both do it from the same status: (1) runs the point once)."""
    for params in status.failed_unretried:
        _enqueue_point(study, params)


def _taken_over(study: optuna.Study, trial_id: int) -> bool:
    """Whether another worker finished this trial while it ran here: failed it as stale and
    queued a retry (only the stale-trial callback writes ``retry_history``), or completed it
    (SQLite can hand one WAITING trial to two workers, optuna/optuna#4002)."""
    trial = study._storage.get_trial(trial_id)
    if trial.state == TrialState.COMPLETE:
        return True
    trials = study.get_trials(deepcopy=False)
    retried = any(trial.number in t.system_attrs.get("retry_history", ()) for t in trials)
    return trial.state == TrialState.FAIL and retried


def run_worker(
    study: optuna.Study,
    space: SearchSpace,
    objective: Objective,
    *,
    poll_s: float = 1.0,
    on_trial: Callable[[GridStatus], None] | None = None,
) -> GridStatus:
    """Evaluate grid points until every point is COMPLETE (see the module docstring)."""
    started: list[int] = []  # the trial id of the current ``optimize`` call

    def optuna_objective(trial: Trial) -> tuple[float, ...]:
        started.append(trial._trial_id)
        trial.set_user_attr("worker", worker_id())
        other = _earlier_claim(study, trial._trial_id, space)
        if other is not None:  # an earlier claim holds the point: give this one up, (1)
            study._storage.set_trial_system_attr(trial._trial_id, "duplicate_of", other)
            raise optuna.TrialPruned(f"grid point held by trial {other}")
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
        if status.done and status.waiting == 0:
            return status  # (a copy still WAITING is popped below and gives up at once)
        if status.failed_unretried:
            requeue_failed(study, status)
            continue
        if status.free == 0 and status.waiting == 0:
            time.sleep(poll_s)  # the rest is RUNNING elsewhere (or about to go stale)
            continue
        started.clear()
        try:
            study.optimize(optuna_objective, n_trials=1, catch=())
        except Exception:
            if not (started and _taken_over(study, started[-1])):
                raise
            continue  # its result is another worker's now (see the module docstring)
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
