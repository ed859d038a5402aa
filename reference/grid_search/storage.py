"""The shared storage of a grid search, and how each kind tells a live trial from a dead one.

``--storage`` is one of:

* an SQLAlchemy URL, opened as Optuna's ``RDBStorage`` with heartbeats: ``sqlite:///study.db``
  (one machine), ``postgresql+psycopg://user:pw@host/db`` (many machines; psycopg 3 is the
  driver installed with the ``reference`` extra);
* ``journal:///PATH``: Optuna's ``JournalStorage`` on a ``JournalFileBackend`` (an append-only
  log file on a shared file system, no database server), given heartbeats here. The slashes
  follow SQLite's URLs: ``journal:///study.log`` is relative, ``journal:////shared/study.log``
  absolute.

Liveness: heartbeats, never run time
====================================
A worker proves that its trial is alive by a heartbeat every ``heartbeat`` seconds; a RUNNING
trial is dead (stale) when its last sign of life is older than ``grace``:

    last(t)  = the newest heartbeat of t, or its start when it has none yet          (1)
    stale(t) = now - last(t) > grace                                                  (2)

A stale trial is failed and `optuna.storages.RetryHeartbeatStaleTrialCallback` queues a WAITING
copy of it with its ``grid_id``, so its grid point is run again, not lost. Failing is one atomic
state change (RUNNING → FAIL) in both storages, so of several workers that judge one trial
stale at once exactly one queues its retry.

* RDB: Optuna records the heartbeats (a ``trial_heartbeats`` row per trial) and judges (2) with
  the database's clock (``optuna.storages.fail_stale_trials``). It never judges a trial without a
  row: a worker killed between creating its trial and its first heartbeat (milliseconds, wider on
  a loaded machine) would leave the point RUNNING forever, so
  [`fail_orphaned_trials`][reference.grid_search.storage.fail_orphaned_trials] fails such a trial
  by (1)-(2) with its start.
* Journal: ``JournalStorage`` has no heartbeat in Optuna 5 (optuna/optuna#6615 asks for one).
  [`JournalHeartbeatStorage`][reference.grid_search.storage.JournalHeartbeatStorage] adds it
  through Optuna's own interface (``BaseHeartbeat``): ``study.optimize`` then runs its heartbeat
  thread beside every trial, which appends the time to the journal as the trial's system
  attribute ``heartbeat``, and ``fail_stale_trials`` applies (1)-(2) to the journal too. A slow
  trial that still beats is alive however long it runs (before this, a journal trial older than
  ``grace`` counted as dead, so ``grace`` bounded the run time of a live trial and a slow point
  was repeated). The heartbeat is the writing machine's clock, so the machines' clocks must agree
  (NTP) to well under ``grace``.

Pitfalls
========
* The journal is guarded by a lock file (``JournalFileSymlinkLock``, which works on NFS): a worker
  killed while it holds the lock stalls every other worker, heartbeats included, until the lock's
  grace period (30 s) has passed; with ``grace`` below that, the live trials of the stalled
  workers are then judged stale and run again (work repeated, never a second COMPLETE: a trial
  failed as stale can no longer store its result). A ``grace`` above 30 s avoids it.
* SQLite is for one machine; never on a network file system (its ``fcntl`` locks break there).
* ``BaseHeartbeat`` is Optuna's internal interface (``optuna.storages._heartbeat``, the one its
  ``RDBStorage`` implements; written against Optuna 5.1): a release that changes it breaks the
  journal's heartbeat, which the tests of a killed and of a slow journal worker would show.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.storages.journal import JournalFileBackend, JournalStorage
from optuna.trial import FrozenTrial, TrialState

JOURNAL = "journal:///"
"""Prefix of a journal-file storage; the file path follows it."""
HEARTBEAT = "heartbeat"
"""The system attribute of a journal trial that holds its newest heartbeat (ISO time, UTC)."""
StaleCallback = Callable[[optuna.Study, FrozenTrial], None]


def storage_kind(url: str) -> str:
    """``"journal"`` or the SQLAlchemy backend name (``"sqlite"``, ``"postgresql"``, ...).

    Raises ValueError (one line) for a string that is neither, and for an SQLAlchemy URL whose
    database driver is not installed, before any worker starts.
    """
    if url.startswith(JOURNAL):
        if not url[len(JOURNAL) :].strip():
            raise ValueError(f"names no file, got {url!r}: use journal:///PATH")
        return "journal"
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    usage = "an SQLAlchemy URL (sqlite:///study.db, postgresql+psycopg://user:pw@host/db) or "
    try:
        dialect = make_url(url).get_dialect()
    except ArgumentError:  # also NoSuchModuleError, an unknown scheme
        raise ValueError(f"must be {usage}journal:///PATH, got {url!r}") from None
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        scheme = url.split(":", 1)[0]  # not the whole URL: it may hold a password
        raise ValueError(f"needs the {scheme} driver, which is not installed ({exc})") from None
    return make_url(url).get_backend_name()


def _local(iso: str) -> datetime:
    """An ISO time with its zone as local naive time (how Optuna keeps ``datetime_start``)."""
    return datetime.fromisoformat(iso).astimezone().replace(tzinfo=None)


def last_sign_of_life(trial: FrozenTrial) -> datetime | None:
    """(1) for a journal trial: its newest heartbeat, else its start (local naive time)."""
    beat = trial.system_attrs.get(HEARTBEAT)
    return _local(beat) if isinstance(beat, str) else trial.datetime_start


class JournalHeartbeatStorage(JournalStorage, BaseHeartbeat):
    """A ``JournalStorage`` with Optuna's heartbeat interface: ``record_heartbeat`` appends the
    time to the journal, and a RUNNING trial is stale by (1)-(2)."""

    def __init__(
        self, path: str, heartbeat: int, grace: int, stale_trial_callback: StaleCallback | None
    ) -> None:
        super().__init__(JournalFileBackend(path))
        self.heartbeat_interval = heartbeat
        self.grace_period = grace
        self.stale_trial_callback = stale_trial_callback

    def record_heartbeat(self, trial_id: int) -> None:
        now = datetime.now(tz=UTC).isoformat(timespec="microseconds")
        with suppress(UpdateFinishedTrialError):  # another worker failed it as stale meanwhile
            self.set_trial_system_attr(trial_id, HEARTBEAT, now)

    def stale_trial_ids(self, study_id: int, now: datetime) -> list[int]:
        """The RUNNING trials of ``study_id`` whose last sign of life (1) is older than the
        grace period at ``now`` (local naive time), (2)."""
        out = []
        for t in self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            last = last_sign_of_life(t)
            if last is not None and (now - last).total_seconds() > self.grace_period:  # (2)
                out.append(t._trial_id)
        return out

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        return self.stale_trial_ids(study_id, datetime.now())

    def get_heartbeat_interval(self) -> int | None:
        return self.heartbeat_interval

    def get_heartbeat_stale_trial_callback(self) -> StaleCallback | None:
        return self.stale_trial_callback


def open_storage(url: str, *, heartbeat: int = 5, grace: int = 20, max_retry: int = 3) -> Any:
    """The storage named by ``url`` (see the module docstring), with heartbeats every
    ``heartbeat`` seconds, trials stale after ``grace`` seconds without one, retried up to
    ``max_retry`` times with their grid point."""
    storage_kind(url)
    retry = RetryHeartbeatStaleTrialCallback(max_retry=max_retry)
    if url.startswith(JOURNAL):
        return JournalHeartbeatStorage(url[len(JOURNAL) :], heartbeat, grace, retry)
    return RDBStorage(
        url,
        heartbeat_interval=heartbeat,
        grace_period=grace,
        heartbeat_stale_trial_callback=retry,
    )


@dataclass(frozen=True)
class _StaleRule:
    grace: float
    callback: StaleCallback | None
    judged_elsewhere: frozenset[int]
    """Trials whose heartbeat Optuna judges with the database's clock (RDB)."""


def _rdb(storage: BaseStorage) -> RDBStorage | None:
    backend = getattr(storage, "_backend", storage)  # RDBStorage sits behind a _CachedStorage
    return backend if isinstance(backend, RDBStorage) else None


def _stale_rule(study: optuna.Study) -> _StaleRule | None:
    storage = study._storage
    if isinstance(storage, JournalHeartbeatStorage):
        return _StaleRule(storage.grace_period, storage.stale_trial_callback, frozenset())
    rdb = _rdb(storage)
    if rdb is None or rdb.heartbeat_interval is None:
        return None
    import sqlalchemy

    with rdb.engine.connect() as conn:
        rows = conn.execute(sqlalchemy.text("SELECT trial_id FROM trial_heartbeats"))
        beating = frozenset(int(r[0]) for r in rows)
    grace = rdb.grace_period or 2 * rdb.heartbeat_interval
    return _StaleRule(grace, rdb.get_heartbeat_stale_trial_callback(), beating)


def fail_orphaned_trials(study: optuna.Study, now: datetime | None = None) -> list[int]:
    """Fail (and retry) the RUNNING trials that are stale by (1)-(2) at ``now`` and that Optuna's
    own check does not judge: on an RDB storage those without a heartbeat row (judged by their
    start), on a journal storage all of them (by their newest heartbeat, else their start).
    ``now`` (local time, as Optuna's ``datetime_start``) is for tests; returns the numbers of the
    trials failed here."""
    rule = _stale_rule(study)
    if rule is None:
        return []
    now = now or datetime.now()
    failed: list[int] = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        last = last_sign_of_life(t)
        if t._trial_id in rule.judged_elsewhere or last is None:
            continue
        if (now - last).total_seconds() <= rule.grace:  # (2)
            continue
        try:  # RUNNING -> FAIL is atomic: one worker wins, the others find it finished
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        except RuntimeError:  # finished meanwhile, or failed by another worker first
            continue
        failed.append(t.number)
        if rule.callback is not None:
            rule.callback(study, study._storage.get_trial(t._trial_id))
    return failed
