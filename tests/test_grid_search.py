"""reference.grid_search: the crash-safe worker protocol (kill -9 and restart), liveness by
heartbeats on every storage (a slow journal trial that beats is alive), the unique claim of a
grid point (two workers racing on one failed point run it once), the Pareto front against brute
force, the choice rule, the strategy replay, bad options."""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from optuna.storages import RDBStorage, fail_stale_trials
from optuna.trial import TrialState
from postgres_support import INSTALL_HINT, Postgres, postgres_bin, postgres_server

from reference import grid_search as gs
from reference.grid_search.bench import FULL
from reference.grid_search.storage import HEARTBEAT, JOURNAL

ROOT = Path(__file__).resolve().parents[1]


STORAGES = (
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres")),  # one server
    "journal",
)
WORKERS = 3


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throw-away PostgreSQL server (tests/postgres_support.py); fails, never skips, when the
    binaries are missing: ``make test`` installs them."""
    if postgres_bin() is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    with postgres_server() as server:
        yield server


@pytest.fixture(params=STORAGES)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty storage of each kind: SQLite file, PostgreSQL database, journal file."""
    if request.param == "postgresql":
        return request.getfixturevalue("postgres").new_database()
    return (
        f"sqlite:///{tmp_path / 'study.db'}"
        if request.param == "sqlite"
        else (f"{JOURNAL}{tmp_path / 'study.log'}")
    )


@contextmanager
def _reader(storage: str) -> Iterator[Any]:
    """The test's own connection to the storage (a short SQLite lock timeout: a frozen worker
    may hold the lock, see :func:`_kill_mid_trial`)."""
    if storage.startswith(JOURNAL):
        yield gs.open_storage(storage)
        return
    connect_args = {"timeout": 0.2} if storage.startswith("sqlite") else {}
    rdb = RDBStorage(storage, engine_kwargs={"connect_args": connect_args})
    try:
        yield rdb
    finally:
        rdb.engine.dispose()


def _worker(storage: str, out: Path) -> subprocess.Popen:
    # Every storage judges liveness by heartbeats (the journal's are appended to the file): a
    # live trial beats every 1 s however long it runs, so --grace only bounds how long a killed
    # worker's point waits for its retry, never the run time of a slow live trial. It must also
    # exceed the longest pause of a live worker's heartbeat thread: on a loaded 2-core machine
    # (the suite on two workers beside three grid workers) a pause of over 3 s happened, the live
    # trial was failed as stale and its point ran twice; 8 s leaves room for that.
    cmd = [
        *(sys.executable, "-m", "reference.grid_search", "--objective", "toy", "--sleep", "0.3"),
        *("--space", "full", "--storage", storage, "--study", "s"),
        *("--heartbeat", "1", "--grace", "8", "--out", str(out)),
    ]
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _trials(reader: Any) -> list[optuna.trial.FrozenTrial]:
    try:
        return optuna.load_study(study_name="s", storage=reader).get_trials()
    except KeyError:  # the study does not exist yet
        return []


def _wait_stopped(pid: int) -> None:
    """Until every thread of ``pid`` is stopped (SIGSTOP is delivered asynchronously)."""
    tasks = Path(f"/proc/{pid}/task")
    while tasks.is_dir():
        try:
            states = [
                (t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in tasks.iterdir()
            ]
        except FileNotFoundError:  # a thread ended meanwhile
            continue
        if all(s in "tT" for s in states):
            return
        time.sleep(0.001)


def _kill_mid_trial(proc: subprocess.Popen, reader: Any, storage: str) -> list[int]:
    """SIGKILL the worker ``proc`` while it runs a trial, and return the numbers of the trials it
    left RUNNING. The worker is frozen (SIGSTOP) while the storage is read, so that it cannot
    finish its trial between the check and the kill; it is not killed while it may hold the
    journal file's lock (an orphaned lock stalls every worker for the lock's 30 s grace)."""
    me = f":{proc.pid}"
    lock = storage[len(JOURNAL) :] + ".lock"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"worker exited early: {proc.communicate()[0][-2000:]}")
        os.killpg(proc.pid, signal.SIGSTOP)
        _wait_stopped(proc.pid)
        try:
            trials = _trials(reader)
        except optuna.exceptions.StorageInternalError:  # the frozen worker holds SQLite's lock
            trials = []
        mine = [
            t.number
            for t in trials
            if t.state == TrialState.RUNNING and str(t.user_attrs.get("worker")).endswith(me)
        ]
        if mine and not (storage.startswith(JOURNAL) and os.path.lexists(lock)):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL
            return mine
        os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(0.05)
    pytest.fail("no worker ran a trial within 120 s")


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_killed_workers_lose_and_repeat_no_grid_point(storage: str, tmp_path: Path) -> None:
    """Three workers share a study; two are killed mid-trial (one after the other) and
    restarted: every grid point ends COMPLETE exactly once, and each trial a killed worker left
    RUNNING is failed as stale with a retry of its grid point queued."""
    left: list[int] = []
    with _reader(storage) as reader:  # first: an RDB schema exists before the workers start
        procs = [_worker(storage, tmp_path) for _ in range(WORKERS)]
        try:
            for victim in (0, 1):
                left += _kill_mid_trial(procs[victim], reader, storage)
                procs[victim] = _worker(storage, tmp_path)  # the restart
            for p in procs:
                out, _ = p.communicate(timeout=120)
                assert p.returncode == 0, out
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        trials = _trials(reader)
    complete = [tuple(sorted(t.params.items())) for t in trials if t.state == TrialState.COMPLETE]
    expected = {tuple(sorted(p.items())) for p in gs.grid_points(gs.FULL_SPACE)}
    assert sorted(complete) == sorted(expected)  # every point exactly once, no duplicates
    assert len(left) == 2  # each killed worker left its trial RUNNING
    for number in left:  # failed as stale, and a retry of its grid point queued
        assert trials[number].state == TrialState.FAIL
        retries = [t for t in trials if number in t.system_attrs.get("retry_history", [])]
        assert retries[0].system_attrs["grid_id"] == trials[number].system_attrs["grid_id"]
    pending = [
        (t.number, t.state.name, t.params, t.user_attrs, t.system_attrs)
        for t in trials
        if t.state in (TrialState.RUNNING, TrialState.WAITING)
    ]
    assert not pending, (pending, left)


def test_pareto_front_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    rows = [{"q": float(a), "c": float(b)} for a, b in rng.integers(0, 8, size=(40, 2))]
    front = gs.pareto_front(rows, ["q", "c"])
    for r in rows:
        dominated = any(
            o["q"] <= r["q"]
            and o["c"] <= r["c"]
            and o != r
            and (o["q"] < r["q"] or o["c"] < r["c"])
            for o in rows
        )
        assert (r in front) == (not dominated)
    assert [r["c"] for r in front] == sorted(r["c"] for r in front)
    assert all(a["q"] >= b["q"] for a, b in itertools.pairwise(front))


def test_grid_status_counts_and_strategy_replay(tmp_path: Path) -> None:
    space = {"sampler": ["ddim", "unipc"], "steps": [2, 3], "guidance": [1.0, 2.0]}
    assert len(gs.grid_points(space)) == 8
    study = gs.open_study(f"sqlite:///{tmp_path / 't.db'}", "t", space, heartbeat=1, grace=2)
    status = gs.run_worker(study, space, gs.toy_objective(0.0))
    assert (status.complete, status.total, status.duplicates, status.free) == (8, 8, 0, 0)
    table = {
        (r["guidance"], r["sampler"], r["steps"]): r["fd_digits"] for r in gs.completed_table(study)
    }
    curves = gs.best_so_far_curves(table, space, budget=8, seeds=[0, 1])
    assert set(curves) == {"grid", "random", "tpe"}
    for c in curves.values():
        assert len(c) == 8 and np.all(np.diff(c) <= 0) and c[-1] >= min(table.values())
    assert curves["grid"][-1] == min(table.values())  # the full grid always finds the best


SMALL = {"sampler": ["ddim", "unipc"], "steps": [2, 3], "guidance": [1.0]}
LATER = datetime.now() + timedelta(days=1)  # "now" for a trial that has long gone stale


def _small_study(tmp_path: Path, kind: str) -> optuna.Study:
    url = f"sqlite:///{tmp_path / 'o.db'}" if kind == "sqlite" else f"{JOURNAL}{tmp_path / 'o.log'}"
    return gs.open_study(url, "o", SMALL, heartbeat=1, grace=2)


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_trial_no_heartbeat_judges_is_retried_once_older_than_grace(
    tmp_path: Path, kind: str
) -> None:
    """SQLite: a worker killed before its first heartbeat; journal: any trial (no heartbeat)."""
    study = _small_study(tmp_path, kind)
    orphan = study.ask()  # RUNNING with a grid point, no heartbeat: a worker killed right here
    assert gs.fail_orphaned_trials(study) == []  # younger than the grace period: left alone
    assert gs.fail_orphaned_trials(study, now=LATER) == [orphan.number]
    trials = study.get_trials(deepcopy=False)
    assert trials[orphan.number].state == TrialState.FAIL
    retry = [t for t in trials if t.state == TrialState.WAITING]
    assert len(retry) == 1
    assert retry[0].system_attrs["grid_id"] == trials[orphan.number].system_attrs["grid_id"]
    status = gs.run_worker(study, SMALL, gs.toy_objective(0.0))
    assert (status.complete, status.total, status.duplicates) == (4, 4, 0)


def test_a_trial_failed_as_stale_while_it_runs_is_dropped_and_rerun(tmp_path: Path) -> None:
    """A live trial that another worker judges stale (here: a worker whose clock is a day ahead)
    cannot store its result; the worker goes on, and the retry evaluates the point."""
    study = _small_study(tmp_path, "journal")
    toy, evaluated = gs.toy_objective(0.0), []

    def objective(point: dict) -> dict:
        if not evaluated:  # meanwhile, another worker fails this trial as stale
            assert gs.fail_orphaned_trials(study, now=LATER) == [0]
        evaluated.append(point)
        return toy(point)

    status = gs.run_worker(study, SMALL, objective)
    assert (status.complete, status.total, status.duplicates) == (4, 4, 0)
    trials = study.get_trials(deepcopy=False)
    assert trials[0].state == TrialState.FAIL
    assert len(evaluated) == 5 and evaluated.count(evaluated[0]) == 2  # run again by the retry


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
def test_a_second_claim_of_a_grid_point_is_given_up(tmp_path: Path) -> None:
    """Two workers that claim one point at the same instant: the claim that finds the other
    gives up (PRUNED, ``duplicate_of``) instead of evaluating the point twice."""
    study = _small_study(tmp_path, "sqlite")
    first = study.ask()  # grid point 0, claimed by "another worker" (and finished there)
    search_space = study.get_trials(deepcopy=False)[0].system_attrs["search_space"]
    twin = optuna.trial.create_trial(
        state=TrialState.WAITING, system_attrs={"grid_id": 0, "search_space": search_space}
    )
    study.add_trial(twin)
    study.tell(first, [1.0, 1.0])
    status = gs.run_worker(study, SMALL, gs.toy_objective(0.0))
    assert (status.complete, status.total, status.duplicates) == (4, 4, 0)
    given_up = study.get_trials(deepcopy=False, states=(TrialState.PRUNED,))
    assert [t.system_attrs["duplicate_of"] for t in given_up] == [first.number]


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
def test_a_journal_trial_is_judged_by_its_newest_heartbeat_not_its_age(tmp_path: Path) -> None:
    """The journal's liveness rule, on recorded times (no sleeping): a trial that started long
    ago but beat recently is alive; once its heartbeats stop for longer than --grace (2 s here)
    it is stale, failed and retried."""
    study = _small_study(tmp_path, "journal")
    trial = study.ask()
    start = study.get_trials(deepcopy=False)[0].datetime_start
    beat = (start + timedelta(seconds=10)).astimezone(UTC).isoformat()  # still beating at +10 s
    study._storage.set_trial_system_attr(trial._trial_id, HEARTBEAT, beat)
    assert gs.fail_orphaned_trials(study, now=start + timedelta(seconds=11)) == []
    assert gs.fail_orphaned_trials(study, now=start + timedelta(seconds=12.5)) == [trial.number]
    trials = study.get_trials(deepcopy=False)
    retry = [t for t in trials if t.state == TrialState.WAITING]
    assert [t.system_attrs["grid_id"] for t in retry] == [trials[0].system_attrs["grid_id"]]


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_trial_killed_between_two_suggests_keeps_its_point(tmp_path: Path, kind: str) -> None:
    """A worker killed between two ``suggest`` calls leaves a trial with one of its params, and
    its retry copies that one. If the grid completed meanwhile (another worker ran the point),
    the copy still counts as WAITING on its point, so a worker pops it and gives it up instead of
    leaving it WAITING for ever (a flaky failure of the kill -9 test under load)."""
    study = _small_study(tmp_path, kind)
    killed = study.ask()
    killed.suggest_categorical("sampler", SMALL["sampler"])  # then kill -9
    assert gs.grid_status(study, SMALL).running == 1  # the trial holds its point
    dists = {n: optuna.distributions.CategoricalDistribution(v) for n, v in SMALL.items()}
    for point in gs.grid_points(SMALL):  # meanwhile other workers complete the whole grid
        done = optuna.trial.create_trial(params=point, distributions=dists, values=[1.0, 1.0])
        study.add_trial(done)
    assert gs.fail_orphaned_trials(study, now=LATER) == [killed.number]
    (retry,) = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    assert list(retry.params) == ["sampler"]  # a copy of the partial params
    assert gs.grid_status(study, SMALL).waiting == 1
    status = gs.run_worker(study, SMALL, gs.toy_objective(0.0))
    assert (status.complete, status.duplicates, status.waiting) == (4, 0, 0)
    states = [t.state for t in study.get_trials(deepcopy=False)]
    assert TrialState.WAITING not in states and TrialState.RUNNING not in states


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_a_slow_journal_trial_that_beats_outlives_grace_and_completes(tmp_path: Path) -> None:
    """Optuna's heartbeat thread beats for a journal trial too: a trial that runs longer than
    --grace (2 s) is neither failed by Optuna's stale check nor by ours, and completes once."""
    study, checks = _small_study(tmp_path, "journal"), []
    other = gs.open_study(f"{JOURNAL}{tmp_path / 'o.log'}", "o", SMALL, heartbeat=1, grace=2)

    def slow(point: dict) -> dict:
        if not checks:  # the first trial outlives the grace period; another worker checks
            time.sleep(2.6)
            fail_stale_trials(other)
            checks.append(gs.fail_orphaned_trials(other))
        return gs.toy_objective(0.0)(point)

    status = gs.run_worker(study, SMALL, slow)
    assert checks == [[]] and (status.complete, status.duplicates) == (4, 0)
    trials = study.get_trials(deepcopy=False)
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4  # none failed, none retried
    assert HEARTBEAT in trials[0].system_attrs


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_two_workers_racing_on_one_failed_point_run_it_once(tmp_path: Path, kind: str) -> None:
    """Both workers read the grid at the same instant, both re-queue its failed point and both
    pop a copy at once: the copy the storage numbered first evaluates the point, the other gives
    up (never both), and the finished grid holds the point COMPLETE once."""
    a = _small_study(tmp_path, kind)
    b = gs.open_study(
        f"sqlite:///{tmp_path / 'o.db'}" if kind == "sqlite" else f"{JOURNAL}{tmp_path / 'o.log'}",
        "o",
        SMALL,
        heartbeat=1,
        grace=2,
    )
    failed = a.ask()
    a.tell(failed, state=TrialState.FAIL)  # an exception in a third worker
    point = failed.params or gs.search._params_of_grid_id(a.get_trials()[0], a.sampler)
    seen = gs.grid_status(a, SMALL)  # what both workers read at the same instant
    assert seen.failed_unretried == [point]
    gs.requeue_failed(a, seen)
    gs.requeue_failed(b, seen)  # the race: two WAITING copies of one point
    first, second = a.ask(), b.ask()  # both popped before either checks its claim
    assert sorted((first.number, second.number)) == [1, 2]
    assert gs.search._earlier_claim(b, second._trial_id, SMALL) == first.number
    assert gs.search._earlier_claim(a, first._trial_id, SMALL) is None  # exactly one holds it
    a.tell(first, state=TrialState.FAIL)  # put both back: run the race through the workers
    b.tell(second, state=TrialState.PRUNED)
    seen = gs.grid_status(a, SMALL)  # the same race again, then both workers run to the end
    gs.requeue_failed(a, seen)
    gs.requeue_failed(b, seen)
    evaluated: list[dict] = []

    def count(p: dict) -> dict:
        evaluated.append(p)
        return gs.toy_objective(0.0)(p)

    for study in (a, b):  # the first copy (trial 3) runs the point, the second (4) gives up
        status = gs.run_worker(study, SMALL, count)
    assert (status.complete, status.duplicates) == (4, 0)
    assert sorted(map(str, evaluated)) == sorted(map(str, gs.grid_points(SMALL)))  # each once
    given_up = a.get_trials(deepcopy=False, states=(TrialState.PRUNED,))
    assert [(t.number, t.system_attrs.get("duplicate_of")) for t in given_up] == [(2, None), (4, 3)]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"select_seeds": (0, 100)}, "--select-seeds must be disjoint from --seeds"),
        ({"seeds": (0, 1000)}, "seed 1000 is the latency batch's"),
        ({"n_quality": 25}, "--n-quality must be a multiple of 10 (classes), got 25"),
        ({"heartbeat": 5, "grace": 5}, "--grace must be > --heartbeat, got 5 and 5"),
        ({"storage": "study.db"}, "--storage must be an SQLAlchemy URL (sqlite:///study.db"),
        ({"storage": "redis://h/0"}, "--storage must be an SQLAlchemy URL"),
        ({"storage": "journal:///"}, "--storage names no file, got 'journal:///'"),
        ({"storage": "mssql+pymssql://u@h/db"}, "--storage needs the mssql+pymssql driver"),
    ],
)
def test_bad_configurations_fail_with_one_line_naming_the_option(
    change: dict, message: str
) -> None:
    cfg = dataclasses.replace(FULL, **change)
    with pytest.raises(ValueError, match=re.escape(message)) as exc:
        cfg.validate()
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--n-select", "5"], "--n-select"),
        (["--space", "huge"], "--space"),
        (["--objective", "real"], "--objective"),
        (["--repeats", "0"], "--repeats"),
        (["--seeds", "0"], "--seeds"),
        (["--study", " "], "--study"),
        (["--sleep", "nan"], "--sleep"),
    ],
)
def test_bad_options_are_one_line_before_any_work(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.grid_search import bench

    monkeypatch.setattr(bench, "measure", lambda cfg, out: pytest.fail("the benchmark ran"))
    assert message in refused_in_one_line("reference.grid_search", args)


def test_an_unknown_sampler_is_named() -> None:
    with pytest.raises(ValueError, match="unknown sampler 'heun'"):
        gs.toy_objective(0)({"sampler": "heun", "steps": 4, "guidance": 1.0})


def test_choice_rule_prefers_quality_within_the_cost_target() -> None:
    rows = [
        {"sampler": "ddim", "steps": 50, "guidance": 1.0, "fd_digits": 10.0, "latency_ms": 100.0},
        {"sampler": "ddim", "steps": 20, "guidance": 1.0, "fd_digits": 10.5, "latency_ms": 40.0},
        {"sampler": "ddim", "steps": 10, "guidance": 1.0, "fd_digits": 10.9, "latency_ms": 20.0},
        {"sampler": "ddim", "steps": 4, "guidance": 1.0, "fd_digits": 30.0, "latency_ms": 8.0},
    ]
    default = {"sampler": "ddim", "steps": 50, "guidance": 1.0}
    assert gs.choose(rows, default, 1.1, 0.5)["steps"] == 20  # best FDD at <= half the cost
    assert gs.choose(rows, default, 1.1, 0.1)["steps"] == 10  # none that cheap: the cheapest ok
