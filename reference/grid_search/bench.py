"""Benchmark and demo of [`reference.grid_search`][reference.grid_search] (the technique contract
of `reference.harness.entry`: it declares a comparison, the harness measures).

Two sides, kept apart
=====================
**Selection.** The whole grid runs on the zoo teacher in a temporary SQLite study
([`run_grid`][reference.grid_search.search.run_grid]): every point samples the clipped ODE
(`reference.harness.ode`) on the selection seeds (``select_seeds``, 100 and 101) and is scored by
its FDD against the **training digits**
([`selection_reference`][reference.grid_search.objective.selection_reference]) and one timed
run. The Pareto front and the choice rule read those values only. A second study in the same
storage searches training learning rates, scored the same way (selection seeds,
training digits), and grid, random and TPE search are replayed from the cached grid. The front
and the replayed curves are kept in the result's ``pareto-front`` and ``search-curves`` notes,
so that the site draws both figures in each language (`reference.grid_search.notes`, which
also writes every other note; the figures are `reference.grid_search.figures`).

**Reporting.** The declared comparison re-measures the default (DDIM-50 trailing on the clipped
ODE, the project's one baseline), the choice and two controls (the best single-axis setting
and DDIM at the choice's denoiser rows, `reference.grid_search.report`) on the reporting seeds
(``seeds``, 0-4, paired: every row starts from the same noise on each seed), against the
**reference half of the held-out digits** (`reference.harness.scores`, n_quality = 140 per
seed, with the held-out real row at the same n), all timed in one interleaved comparison. The
selection never sees these seeds or these digits, so the reported ratios carry none of the
optimism of choosing on the samples one reports.

Metrics
=======
The headline is the **FDD ratio** of the choice over the default (paired seeds, eq. (3) of
`reference.harness.compare`), with KID, class accuracy and within-class diversity beside it, and
the fidelity ``rms_to_solution`` (the per-sample distance to the converged unguided solution of
the same noise, eq. (6) there) reported beside, not as the primary metric: the grid's guidance
axis *changes the distribution* a sampler aims at (classifier-free guidance trades diversity
for class fidelity), so distance to the unguided solution cannot be the search's objective; it
would rank every guided point last whatever its samples look like. For the unguided rows it reads
as fidelity: how far the sampler moves each sample from where the exact ODE puts it.

The demo *is* the distributed worker: run the same command on each of any number of machines
with one ``--storage`` and ``--study`` name, and they share the grid (each point is stored
COMPLETE exactly once; the point of a killed worker is re-run by another):

    python -m reference.grid_search --study NAME --space full \\
        --storage postgresql+psycopg://user:pw@host/db

``--storage`` picks where the study lives ([`storage`][reference.grid_search.storage]):
``postgresql+psycopg://...`` for many machines, ``journal:///PATH`` for a shared file system
without a database server, and ``sqlite:///study.db`` (the default, in ``--out``) for one machine.

Pitfalls
========
* The latencies of the grid (the front rows, the Pareto figure) are one run per point; only the
  reported rows are interleaved medians.
* The selection FDD and the reported FDD differ in reference set, seeds and sample size; their
  ratio to the default is comparable, their levels are not.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference.harness import sizes
from reference.harness.declared import SAMPLED_COLUMNS, lower, sampled_outcome
from reference.harness.entry import Option, choice, integer, real, seeds

from .objective import SELECT_SEEDS, SPACES

CONTRACT = 2
SLUG = "grid-search"


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of the benchmark (`sizes`; the latency batch apart from the selection and the
    reporting seeds), and the worker's storage, study and objective (demo)."""

    batch_latency: int = 100
    n_select: int = 100
    select_seeds: tuple[int, ...] = SELECT_SEEDS
    space: str = "full"
    solution_steps: int = sizes.SOLUTION_STEPS
    """Steps of the converged solution (`reference.harness.ode.SOLUTION`); fewer only in QUICK."""
    train_steps: int = 200
    strategy_seeds: int = 8
    storage: str = ""
    study: str = "grid-search"
    objective: str = "model"
    sleep: float = 0.2
    heartbeat: int = 5
    grace: int = 20

    def validate(self) -> None:
        if set(self.select_seeds) & set(self.seeds):
            raise ValueError(
                f"--select-seeds must be disjoint from --seeds (reported), got "
                f"{self.select_seeds} and {self.seeds}"
            )
        if sizes.LATENCY_SEED in set(self.select_seeds) | set(self.seeds):
            raise ValueError(f"seed {sizes.LATENCY_SEED} is the latency batch's; choose another")
        super().validate()
        if not 1 <= self.solution_steps <= 1000:
            raise ValueError(f"solution_steps must be in 1..1000, got {self.solution_steps}")
        if self.grace <= self.heartbeat:
            raise ValueError(
                f"--grace must be > --heartbeat, got {self.grace} and {self.heartbeat}"
            )
        if self.storage:
            from .storage import storage_kind

            try:
                storage_kind(self.storage)
            except ValueError as exc:
                raise ValueError(f"--storage {exc}") from None


FULL = Config()
QUICK = Config(
    n_select=20, select_seeds=(100,), n_quality=20, seeds=(0, 1), space="quick", batch_latency=8,
    repeats=2, warmup=0, solution_steps=20, train_steps=5, strategy_seeds=2,
)  # fmt: skip
DEMO = Config(n_select=32, space="quick")


def _text(pattern: str, what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if not re.fullmatch(pattern, value):
            shown = value if len(value) <= 40 else value[:40] + "…"
            raise argparse.ArgumentTypeError(f"expected {what}, got {shown!r}")
        return value

    return parse


OPTIONS = (
    integer("n_select", low=sizes.MIN_QUALITY, high=1000),
    seeds("select_seeds", min_count=1),
    *sizes.SCORED_OPTIONS,
    choice("space", tuple(SPACES)),
    *sizes.TIMED_OPTIONS,
    integer("train_steps", low=1, high=100_000),
    integer("strategy_seeds", low=1, high=100),
    Option("storage", _text(r"\S{1,500}", "a storage URL"), "URL"),
    Option("study", _text(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", "a study name"), "NAME"),
    choice("objective", ("model", "toy")),
    real("sleep", low=0.0, high=60.0, metavar="S"),
    integer("heartbeat", low=1, high=3600),
    integer("grace", low=2, high=86_400),
)


def comparison(cfg: Config, sel: Any) -> Any:
    """The reported points on the reporting seeds, from the same noise per seed: the choice is
    the headline, judged against the default (baseline) and the two controls."""
    from reference.harness.builders import held_out_comparison
    from reference.harness.compare import HeadlineSpec, Variant
    from reference.harness.results import metrics

    from .objective import sample_point
    from .report import ROLES, choice_aims, row_config, selection_facts, solution_of

    variants = tuple(
        Variant(
            key,
            row_config(key, p),
            ROLES[key],  # type: ignore[arg-type]
            sample=lambda seed, p=p: sample_point(p, cfg.n_quality, seed),
            timed=lambda p=p: sample_point(p, cfg.batch_latency, sizes.LATENCY_SEED),
            facts=selection_facts(p, sel.grid),
        )
        for key, p in sel.points.items()
    )
    rows = {v.id: v.facts["rows_per_image"] for v in variants}
    return held_out_comparison(
        cfg,
        variants,
        metrics(
            *SAMPLED_COLUMNS, **lower("fd_select", "rows_per_image"), **lower("train_s", unit="s")
        ),
        choice_aims(list(sel.points)),
        # Denoiser rows per image predict the speedup; the samplers' own per-step work is not
        # in them, so the ratio is an estimate, not a bound.
        HeadlineSpec(
            "chosen",
            quality="fd_digits",
            limit=rows["default"] / rows["chosen"],
            limit_kind="estimate",
        ),
        solution=solution_of(cfg.n_quality, cfg.solution_steps),
    )


def measure(cfg: Config, staging: Path) -> Any:
    """Grid and training grid on the selection side, then the declared comparison of the
    reported points on the reporting side; writes the Pareto and strategies figures."""
    from reference.harness.compare import measure as measure_comparison

    from .figures import write_figures
    from .notes import result_notes
    from .objective import DEFAULT_POINT
    from .report import front_rows, lr_rows
    from .selection import select

    sel = select(
        cfg.space,
        cfg.n_select,
        cfg.select_seeds,
        cfg.train_steps,
        cfg.strategy_seeds,
        staging / f".{SLUG}-study.db",
    )
    m = measure_comparison(comparison(cfg, sel))
    return sampled_outcome(
        m,
        cfg,
        notes=result_notes(cfg, sel, m),
        figures=write_figures(sel, staging, SLUG),
        extra_rows=[*front_rows(sel.front, sel.points), *lr_rows(sel.train_grid, cfg.train_steps)],
        scheduler=None,
        samplers=list(sel.space["sampler"]),
        steps=list(sel.space["steps"]),
        guidance=list(sel.space["guidance"]),
        default_sampler=DEFAULT_POINT["sampler"],
        default_steps=DEFAULT_POINT["steps"],
        default_guidance=DEFAULT_POINT["guidance"],
        selection_reference="train-digits",
        storage="sqlite",
    )


def demo(cfg: Config, out: Path) -> None:
    """One worker of a (possibly distributed) grid search; prints the front when it is complete."""
    from .analysis import pareto_front
    from .figures import label
    from .objective import model_objective, toy_objective
    from .search import run_grid

    out.mkdir(parents=True, exist_ok=True)
    storage = cfg.storage or f"sqlite:///{out / 'study.db'}"
    objective = (
        toy_objective(cfg.sleep) if cfg.objective == "toy" else model_objective(cfg.n_select)
    )
    rows, status = run_grid(
        SPACES[cfg.space], objective, storage, cfg.study, heartbeat=cfg.heartbeat, grace=cfg.grace
    )
    print(f"grid complete: {status.complete}/{status.total} points, {status.duplicates} duplicates")
    print(f"{'Pareto front':40s} {'FDD':>8s} {'latency ms':>11s}")
    for r in pareto_front(rows, ["fd_digits", "latency_ms"]):
        print(f"{label(r):40s} {r['fd_digits']:8.2f} {r['latency_ms']:11.1f}")
