"""reference.grid_search: the crash-safe worker protocol (kill -9 and restart), the Pareto
front against brute force, the choice rule, the strategy replay, bad options."""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from reference import grid_search as gs
from reference.grid_search.bench import FULL

ROOT = Path(__file__).resolve().parents[1]
SPACE = gs.QUICK_SPACE  # the demo worker's grid (ddim, dpmpp2m x 4, 10, 50 steps)


def _worker(db: Path, *extra: str) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "reference.grid_search",
        "--objective",
        "toy",
        "--sleep",
        "0.6",
        "--storage",
        f"sqlite:///{db}",
        "--study",
        "s",
        "--heartbeat",
        "1",
        "--grace",
        "2",
        "--out",
        str(db.parent),
        *extra,
    ]
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _trials(db: Path) -> list[optuna.trial.FrozenTrial]:
    try:
        return optuna.load_study(study_name="s", storage=f"sqlite:///{db}").get_trials()
    except KeyError:  # the study does not exist yet
        return []


def test_killed_worker_loses_and_repeats_no_grid_point(tmp_path: Path) -> None:
    db = tmp_path / "study.db"
    proc = _worker(db)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill -9 while a trial runs, after >= 2 completed
            states = [t.state for t in _trials(db)]
            if states.count(TrialState.COMPLETE) >= 2 and TrialState.RUNNING in states:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            if proc.poll() is not None:
                pytest.fail(f"worker exited early: {proc.communicate()[0][-2000:]}")
            time.sleep(0.05)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"worker did not reach the kill point: {proc.communicate()[0][-2000:]}")
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        assert [t.state for t in _trials(db)].count(TrialState.RUNNING) == 1  # left behind
        restart = _worker(db)
        out, _ = restart.communicate(timeout=120)
        assert restart.returncode == 0, out
    finally:
        for p in (proc, locals().get("restart")):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    trials = _trials(db)
    complete = [tuple(sorted(t.params.items())) for t in trials if t.state == TrialState.COMPLETE]
    expected = {tuple(sorted(p.items())) for p in gs.grid_points(SPACE)}
    assert sorted(complete) == sorted(expected)  # every point exactly once, no duplicates
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert len(failed) == 1  # the killed trial, marked stale, and retried under a new number
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == failed[0].number]
    assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE
    # the same grid point (the killed trial may not have suggested its params yet)
    assert retried[0].system_attrs["grid_id"] == failed[0].system_attrs["grid_id"]
    assert not any(t.state == TrialState.RUNNING for t in trials)


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


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
def test_a_trial_orphaned_before_its_first_heartbeat_is_retried(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    space = {"sampler": ["ddim", "unipc"], "steps": [2, 3], "guidance": [1.0]}
    study = gs.open_study(f"sqlite:///{tmp_path / 'o.db'}", "o", space, heartbeat=1, grace=2)
    orphan = study.ask()  # RUNNING with a grid point, no heartbeat: a worker killed right here
    assert gs.fail_orphaned_trials(study) == []  # younger than the grace period: left alone
    later = datetime.now() + timedelta(seconds=60)
    assert gs.fail_orphaned_trials(study, now=later) == [orphan.number]
    trials = study.get_trials(deepcopy=False)
    assert trials[orphan.number].state == TrialState.FAIL
    retry = [t for t in trials if t.state == TrialState.WAITING]
    assert len(retry) == 1
    assert retry[0].system_attrs["grid_id"] == trials[orphan.number].system_attrs["grid_id"]
    status = gs.run_worker(study, space, gs.toy_objective(0.0))
    assert (status.complete, status.total, status.duplicates) == (4, 4, 0)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"n": 1}, "--n must be >= 2, got 1"),
        ({"heartbeat": 5, "grace": 5}, "--grace must be > --heartbeat, got 5 and 5"),
        ({"space": "huge"}, "--space must be one of full, quick, got 'huge'"),
        ({"objective": "real"}, "--objective must be model or toy"),
        ({"repeats": 0}, "--repeats must be >= 1, got 0"),
    ],
)
def test_bad_options_fail_with_one_line_naming_the_option(change: dict, message: str) -> None:
    cfg = dataclasses.replace(FULL, **change)
    with pytest.raises(ValueError, match=re.escape(message)) as exc:
        cfg.validate()
    assert "\n" not in str(exc.value)


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
