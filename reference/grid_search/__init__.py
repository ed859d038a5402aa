"""Grid search of sampler x steps x guidance scale for the best quality per cost.

The idea ======== A diffusion model's inference cost and quality are set less by its weights than by
a handful of *inference hyperparameters*: the sampler (DDIM, DPM-Solver++, UniPC), the number of
steps and the classifier-free guidance scale (which doubles the rows the denoiser evaluates). Grid
search evaluates every combination of a few values per axis and keeps the configurations on the
**Pareto front** of quality versus latency: those that no other configuration beats on both. With
two objectives there is no single "best"; the front shows the trade-off, and a deployment picks the
cheapest point whose quality is acceptable. The same machinery searches *training* hyperparameters:
a second study in the same storage trains a throw-away tiny U-Net for a short schedule per learning
rate ([`train_objective`][reference.grid_search.objective.train_objective]), the usual way to pick a
learning rate before a long run.

Math: the grid is the Cartesian product ``S x N x G``; a point ``p`` is dominated when some ``q``
has ``FDD(q) <= FDD(p)`` and ``latency(q) <= latency(p)`` with one inequality strict. The cost
of the search is ``|S| |N| |G|`` evaluations, exponential in the number of axes: Bergstra &
Bengio (2012, JMLR 13:281-305) showed that random search finds equally good points with far
fewer trials when only a few axes matter, and TPE (Bergstra et al. 2011, NeurIPS) models good
regions adaptively. The benchmark replays both against the full grid from cached values.

Running it on many machines
===========================
Every worker runs the same command against one shared storage and study name; each asks the
storage for a grid point nobody has claimed, so machines can join, leave or crash at any time:

    python -m reference.grid_search --study NAME --space full \\
        --storage postgresql+psycopg://user:pw@host/db

Which storage (``--storage``, checked before any work; [`storage`][reference.grid_search.storage]):

* **PostgreSQL** (``postgresql+psycopg://user:pw@host/db``, Optuna's ``RDBStorage``): many
  machines, any number of workers. Row locks make popping a queued trial atomic, and heartbeats
  find dead workers. The choice for a team (for thousands of nodes Optuna puts a
  ``GrpcStorageProxy`` in front of one database).
* **Journal file** (``journal:///PATH``, ``JournalStorage`` on a ``JournalFileBackend``): a shared
  file system and no database server. Optuna offers it for exactly this case (its tutorial
  "Easy Parallelization"; the backend's docstring: NFS breaks SQLite's ``fcntl`` locks, so the
  journal takes its own lock file, ``JournalFileSymlinkLock`` by default, for NFSv2 and later,
  or ``JournalFileOpenLock`` for NFSv3 and later). Optuna 5 gives a journal no heartbeat
  (optuna/optuna#6615); [`storage`][reference.grid_search.storage] adds one through Optuna's
  own heartbeat interface, so a slow trial that still beats is never taken for a dead one. The
  machines' clocks must agree (NTP); a worker killed while it holds the lock file stalls the
  others for the lock's 30 s grace period.
* **SQLite** (``sqlite:///study.db``, the default in the output folder): one machine, one or a
  few workers. Optuna's ``RDBStorage`` documentation advises against SQLite for parallel
  optimization: a writer locks the whole file, and a busy study gets "database is locked".
  Never on a network file system.

Killed workers are handled with **heartbeats** (the choice made here), on every storage: a
RUNNING trial whose worker stopped sending heartbeats for ``--grace`` seconds is marked FAIL by
``optuna.storages.fail_stale_trials`` and re-queued with its grid point by
``RetryHeartbeatStaleTrialCallback``; the worker loop of [`search`][reference.grid_search.search]
additionally waits instead of duplicating a point that another worker is still running, and of
several trials that claim one grid point (two workers that re-queue the same failed point at
once, or two that draw it at once) only the one the storage numbered first evaluates it. Each
point ends COMPLETE exactly once, tested with three workers killed and restarted on each
storage, PostgreSQL included.

Pitfalls
========
* FDD is biased by the number of samples: every point uses the same ``n`` and the same noise.
* Choosing and reporting on the same samples is optimistic (the winner's curse): the grid is
  scored on selection seeds against the training digits, and the choice is reported on other
  seeds against held-out digits, beside the best single-axis setting, so that the search is
  credited only with what it adds.
* A sampler is only as good as the problem it solves: every point samples the one clipped ODE
  of the project (`reference.harness.ode`), so the grid compares solvers of one equation, not
  differently clipped ones.
* Latency of one run on a shared CPU is noisy: the chosen point is re-measured interleaved
  against the default before any speedup is claimed; latencies measured on different machines
  of one study are not comparable (each trial records its ``worker``, ``host:pid``).
* ``GridSampler`` numbers points after a seeded shuffle: all workers must use the same seed.
* Several workers that share a ``GridSampler`` can draw the same point at the same instant
  (optuna/optuna#2039, documented as expected), and two workers can re-queue one failed point
  at once; the unique claim of [`search`][reference.grid_search.search] (the lowest trial
  number holds the point) gives every later claim up, so the point runs once.
* SQLite over a network file system is not safe for concurrent writers; use a server database
  for many machines.

In production: ``optuna.samplers.GridSampler`` + ``optuna.storages.RDBStorage`` (this module),
Ray Tune's ``tune.grid_search``, or W&B sweeps ``method: grid``.

Package ``reference/grid_search/``: [`reference.grid_search.search`][reference.grid_search.search]
(the crash-safe worker on a shared storage, [`run_grid`][reference.grid_search.search.run_grid]),
[`reference.grid_search.storage`][reference.grid_search.storage] (which storage, and how it finds
trials whose worker died), [`reference.grid_search.objective`][reference.grid_search.objective]
(what a grid point costs and how good it is; the training-hyperparameter objective),
[`reference.grid_search.analysis`][reference.grid_search.analysis] (Pareto front, choice rule, grid
vs random vs TPE), [`reference.grid_search.selection`][reference.grid_search.selection] (the
benchmark's selection side), [`reference.grid_search.report`][reference.grid_search.report] (the
reported points, controls and aims) and [`reference.grid_search.bench`][reference.grid_search.bench]
(configuration, the declared comparison, and the worker as the demo). One worker:
``python -m reference.grid_search --storage URL --study NAME --space full`` (the same command on
every machine); the benchmark: ``--bench`` (see ``--help``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .analysis import best_so_far_curves, choose, pareto_front, same_point, single_axis_choice
    from .objective import (
        DEFAULT_POINT,
        FULL_SPACE,
        QUICK_SPACE,
        SAMPLERS,
        SPACES,
        TRAIN_SPACE,
        model_objective,
        toy_objective,
        train_objective,
    )
    from .search import (
        GridStatus,
        completed_table,
        grid_points,
        grid_status,
        open_study,
        requeue_failed,
        run_grid,
        run_worker,
    )
    from .storage import JOURNAL, fail_orphaned_trials, open_storage, storage_kind

__all__ = [
    "DEFAULT_POINT",
    "FULL_SPACE",
    "JOURNAL",
    "QUICK_SPACE",
    "SAMPLERS",
    "SPACES",
    "TRAIN_SPACE",
    "GridStatus",
    "best_so_far_curves",
    "choose",
    "completed_table",
    "fail_orphaned_trials",
    "grid_points",
    "grid_status",
    "model_objective",
    "open_storage",
    "open_study",
    "pareto_front",
    "requeue_failed",
    "run_grid",
    "run_worker",
    "same_point",
    "single_axis_choice",
    "storage_kind",
    "toy_objective",
    "train_objective",
]

__getattr__ = attributes(__name__)
