"""The notes of the grid search's result: what the rows mean, in numbers the catalogs quote, and
the data of its two charts, so that the site draws them again in each reader's language.

Every note is a message id of this package's catalogs (``locale/``) and the numbers it quotes.
Two notes also keep the data of a figure (one run each, no interval):

* ``pareto-front``: the Pareto front of the selection, grid latency ``latency_ms`` against
  selection FDD ``fd_select``, one list per series of ``series`` (the front in order of
  latency, then the default and the choice as one point each);
* ``search-curves``: the best selection FDD found after ``k = 1..K`` trials (``trials``), one
  list per strategy of ``series`` in ``best``, each the mean over the replayed orders:

      best_s(k) = (1/R) Σ_r min_{j ≤ k} FDD(point_{s,r}(j))                              (1)

  where ``point_{s,r}(j)`` is the ``j``-th point strategy ``s`` visits in its ``r``-th seeded
  order (`reference.grid_search.analysis.best_so_far_curves`).

Pitfall: both charts show selection values (the selection seeds, the training digits, one timed
run per point); the reported rows are re-measured on other seeds and digits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference.harness.compare import Measured
from reference.harness.cost import latency_note
from reference.harness.results import Note, note
from reference.harness.seeds import quality_note

from .report import COST_TARGET, QUALITY_TOLERANCE

BUDGETS = (5, 10, 20)
"""Trial counts at which grid, random and TPE search are compared in the notes."""
PARETO_SERIES = ("front", "default", "chosen")
"""The series of the Pareto chart, in drawing order."""
STRATEGIES = ("grid", "random", "tpe")
"""The replayed search strategies, in drawing order."""


def pareto_note(front: Sequence[Mapping[str, Any]], base: Mapping[str, Any], chosen: Any) -> Note:
    """The front (sorted by latency) and the default and the choice, as the chart's series."""
    points = (front, [base], [chosen])
    return note(
        "pareto-front",
        points=len(front),
        series=list(PARETO_SERIES),
        latency_ms=[[float(r["latency_ms"]) for r in p] for p in points],
        fd_select=[[float(r["fd_digits"]) for r in p] for p in points],
    )


def curves_note(curves: Mapping[str, Sequence[float]], orders: int) -> Note:
    """The best-so-far curves (1) of every strategy, one value per trial count."""
    k = len(curves[STRATEGIES[0]])
    return note(
        "search-curves",
        trials=list(range(1, k + 1)),
        orders=orders,
        series=list(STRATEGIES),
        best=[[float(v) for v in curves[s]] for s in STRATEGIES],  # (1)
    )


def _selection_notes(cfg: Any, sel: Any, m: Measured) -> list[Note]:
    space, ratio = sel.space, m.table.ratio("chosen", "default", "fd_digits")
    return [
        note(
            "grid",
            points=len(sel.grid),
            samplers=len(space["sampler"]),
            steps=list(space["steps"]),
            guidance=list(space["guidance"]),
            n=cfg.n_select,
            select_seeds=len(cfg.select_seeds),
            duplicates=sel.status.duplicates,
        ),
        note("choice-rule", tolerance=QUALITY_TOLERANCE, cost_target=COST_TARGET),
        note("selection-reference"),
        note(
            "selection-vs-held-out",
            selected=sel.row_of("chosen")["fd_digits"] / sel.base["fd_digits"],
            held_out=ratio.value,
            n=cfg.n_select,
            n_quality=cfg.n_quality,
        ),
        *[note(f"{key}-is-the-choice") for key in sel.omitted],
    ]


def _search_notes(cfg: Any, sel: Any) -> list[Note]:
    best_lr = min(sel.train_grid, key=lambda r: r["fd_digits"])
    return [
        *[
            note("strategies", k=b, **{name: c[b - 1] for name, c in sel.curves.items()})
            for b in BUDGETS
            if b <= len(sel.grid)
        ],
        curves_note(sel.curves, cfg.strategy_seeds),
        pareto_note(sel.front, sel.base, sel.row_of("chosen")),
        note(
            "train-grid",
            steps=cfg.train_steps,
            lrs=list(sel.train_space["lr"]),
            n=cfg.n_select,
            best_lr=best_lr["lr"],
            best_fdd=best_lr["fd_digits"],
        ),
        note("grid-latency"),
    ]


def result_notes(cfg: Any, sel: Any, m: Measured) -> list[Note]:
    """Every note of the result: the selection, the reported comparison ``m``, the search."""
    assert m.headline is not None  # the comparison declares one
    return [
        *_selection_notes(cfg, sel, m),
        note("rows-limit", limit=m.headline.speedup_limit),
        note("clipped-ode"),
        note("fidelity-beside"),
        quality_note(cfg.n_quality, cfg.seeds),
        latency_note(cfg.repeats, cfg.batch_latency),
        *_search_notes(cfg, sel),
    ]
