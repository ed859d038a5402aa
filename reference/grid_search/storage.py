"""The shared storage of a grid search, and how each kind finds a trial whose worker died.

``--storage`` is one of:

* an SQLAlchemy URL, opened as Optuna's ``RDBStorage`` with heartbeats: ``sqlite:///study.db``
  (one machine), ``postgresql+psycopg://user:pw@host/db`` (many machines; psycopg 3 is the
  driver installed with the ``reference`` extra);
* ``journal:///PATH``: Optuna's ``JournalStorage`` on a ``JournalFileBackend`` (an append-only
  log file on a shared file system, no database server). The slashes follow SQLite's URLs:
  ``journal:///study.log`` is relative, ``journal:////shared/study.log`` absolute.

Stale trials. An RDB storage records a heartbeat per running trial, and
``optuna.storages.fail_stale_trials`` fails the trials whose heartbeat is older than ``grace``. Two
gaps are closed here by
[`fail_orphaned_trials`][reference.grid_search.storage.fail_orphaned_trials], with the same retry
callback (``RetryHeartbeatStaleTrialCallback``):

* RDB: a worker killed between creating its trial and recording the first heartbeat leaves a
  trial without a heartbeat row, which Optuna never judges; it is failed once older than
  ``grace``;
* journal: ``JournalStorage`` has no heartbeat in Optuna 5.0 (it is not a ``BaseHeartbeat``;
  optuna/optuna#6615 asks for it), so a RUNNING trial counts as stale once it started more
  than ``grace`` seconds ago. ``--grace`` is then the longest a trial may run, not a heartbeat
  timeout: set it above the slowest grid point. A live trial that outgrows it is failed and
  retried by another worker (work repeated, never a duplicate COMPLETE: its own result can no
  longer be stored). Its start time is the creating machine's clock, so the machines' clocks
  must agree (NTP) to well under ``grace``. The log is guarded by a lock file
  (``JournalFileSymlinkLock``, which works on NFS): a worker killed while it holds the lock
  stalls the others until the lock's grace period (30 s) has passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import optuna
from optuna.storages import BaseStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend, JournalStorage
from optuna.trial import FrozenTrial, TrialState

JOURNAL = "journal:///"
"""Prefix of a journal-file storage; the file path follows it."""
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


class JournalStorageWithGrace(JournalStorage):
    """A ``JournalStorage`` that carries the grace period and stale-trial callback which
    [`fail_orphaned_trials`][reference.grid_search.storage.fail_orphaned_trials] applies (the
    journal has no heartbeat to carry them)."""

    def __init__(
        self, path: str, grace_period: int, stale_trial_callback: StaleCallback | None
    ) -> None:
        super().__init__(JournalFileBackend(path))
        self.grace_period = grace_period
        self.stale_trial_callback = stale_trial_callback


def open_storage(url: str, *, heartbeat: int = 5, grace: int = 20, max_retry: int = 3) -> Any:
    """The storage named by ``url`` (see the module docstring), retrying stale trials up to
    ``max_retry`` times with their grid point."""
    storage_kind(url)
    retry = RetryHeartbeatStaleTrialCallback(max_retry=max_retry)
    if url.startswith(JOURNAL):
        return JournalStorageWithGrace(url[len(JOURNAL) :], grace, retry)
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
    judged_by_heartbeat: frozenset[int]


def _rdb(storage: BaseStorage) -> RDBStorage | None:
    backend = getattr(storage, "_backend", storage)  # RDBStorage sits behind a _CachedStorage
    return backend if isinstance(backend, RDBStorage) else None


def _stale_rule(study: optuna.Study) -> _StaleRule | None:
    storage = study._storage
    if isinstance(storage, JournalStorageWithGrace):
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
    """Fail (and retry) the RUNNING trials no heartbeat judges, once older than ``grace``: on an
    RDB storage those without a heartbeat row, on a journal storage all (see the module
    docstring). ``now`` (local time, as Optuna's ``datetime_start``) is for tests. Returns the
    numbers of the trials failed here."""
    rule = _stale_rule(study)
    if rule is None:
        return []
    now = now or datetime.now()
    failed: list[int] = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t._trial_id in rule.judged_by_heartbeat or t.datetime_start is None:
            continue
        if (now - t.datetime_start).total_seconds() <= rule.grace:
            continue
        try:
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        except RuntimeError:  # finished meanwhile, or failed by another worker first
            continue
        failed.append(t.number)
        if rule.callback is not None:
            rule.callback(study, study._storage.get_trial(t._trial_id))
    return failed
