"""The grid search's chosen configuration, applied to a pipeline as a scheduler swap.

Idea
====
The grid search picks one point ``(sampler, steps, guidance)`` of ``S x N x G`` by its choice
rule (the best FDD among points within the quality tolerance and the cost target of the default,
[`choose`][reference.grid_search.analysis.choose]) and commits it as the row ``chosen`` of
``reference/results/grid-search.json``. ``apply_grid_choice`` reads that row and applies it with
[`apply_scheduler`][reference.scheduler_tradeoff.production.apply_scheduler]: the pipeline's
scheduler becomes the chosen sampler, pinned to the chosen steps, so its cost per sample is

    NFE = steps x (2 if guidance != 1 else 1) rows                                      (1)

The guidance scale is a call argument of a pipeline, not a scheduler setting: it is returned in
``applied.state["guidance_scale"]`` for the caller to pass (1.0, the committed choice, means no
guidance).

Usage
=====
.. code-block:: python

    with apply_grid_choice(pipe) as handle:   # UniPC at 4 steps, the committed choice
        images = pipe(..., guidance_scale=handle.state["guidance_scale"]).images

Pitfalls
========
* The choice was made for the zoo's teacher on the digits; on another model it is a starting
  point to re-measure, not a result.
* The result file is read and checked as ``glossary bench --check`` checks it
  (`reference.harness.integrity.read_checked`: its schema, its digest and every derived figure),
  so a hand-edited result is refused; a missing or invalid file, a missing ``chosen`` row or an
  unknown sampler is refused in one line, before the pipeline is touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference.harness.production import Applied
from reference.registry import REFERENCE_DIR
from reference.scheduler_tradeoff.production import SchedulerConfig, apply_scheduler

from .objective import check_point

RESULT_PATH = REFERENCE_DIR / "results" / "grid-search.json"
"""The committed grid-search result."""
CHOSEN_ROW = "chosen"


def grid_choice(result_path: Path | str = RESULT_PATH) -> dict[str, Any]:
    """``{"sampler", "steps", "guidance"}`` of the result's ``chosen`` row (one-line errors)."""
    from reference.harness.integrity import read_checked

    path = Path(result_path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no grid-search result; run python -m reference.grid_search --bench"
        )
    data, problems = read_checked(path, str(path))  # schema 3 or 4, every figure recomputed
    if data is None or problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValueError(problems[0] + more)
    if data.get("slug") != "grid-search":
        raise ValueError(f"{path}: not a grid-search result (slug {data.get('slug')!r})")
    row = next((r for r in data["rows"] if r.get("id") == CHOSEN_ROW), None)
    if row is None:
        raise ValueError(f"{path}: no row {CHOSEN_ROW!r}")
    config = row.get("config", {})
    point = {
        "sampler": config.get("method"),
        "steps": config.get("steps"),
        "guidance": config.get("guidance", 1.0),
    }
    try:
        check_point(point)
        point = {"sampler": str(point["sampler"]), "steps": int(point["steps"])} | {
            "guidance": float(point["guidance"])
        }
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: row {CHOSEN_ROW!r}: {exc}") from None
    return point


def apply_grid_choice(pipe: Any, result_path: Path | str = RESULT_PATH) -> Applied:
    """Swap ``pipe.scheduler`` for the grid search's chosen sampler at its chosen steps.

    ``applied.state["guidance_scale"]`` is the chosen guidance scale (a call argument (1)).
    """
    point = grid_choice(result_path)
    applied = apply_scheduler(pipe, SchedulerConfig(point["sampler"], point["steps"]))
    applied.technique = "grid search choice"
    applied.state["guidance_scale"] = point["guidance"]
    applied.state["point"] = point
    return applied
