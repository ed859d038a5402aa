"""What the grid search reports: which points it re-measures on the reporting seeds (the
default, the choice and two controls), how they are scored there (FDD and class-weighted KID
against the reference half of the held-out digits, `reference.harness.scores.held_out_score`;
the converged solution for the fidelity beside them), the aims that judge the choice, and the
rows of the selection side (the Pareto front, the learning-rate grid) that are not re-measured.

The controls
============
* **single**: the choice rule applied to the points that differ from the default in the number
  of steps alone (`single_axis_choice`): what tuning one knob finds; the search is credited only
  with what it adds to that.
* **matched**: DDIM without guidance at the choice's denoiser rows per image (matched cost,
  ``rows(matched) = rows(chosen)``, eq. (1) of `reference.grid_search.objective`): whether the
  choice's sampler is better than the default sampler at the same cost, or only cheaper.

A control that is the choice itself is left out (a note says so): it would be a second copy of
one configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reference.harness.compare import AnyAim, QualityAim, SpeedupAim
from reference.harness.results import Row

from .analysis import choose, same_point, single_axis_choice
from .objective import DEFAULT_POINT, rows_per_image, teacher

QUALITY_TOLERANCE = 1.1
"""A configuration "matches" the default when its FDD is at most this factor above it."""
COST_TARGET = 0.5
"""The choice should cost at most this fraction of the default's latency."""
ROLES = {"default": "baseline", "chosen": "technique", "single": "control", "matched": "control"}


def point_config(p: Mapping[str, Any]) -> dict[str, Any]:
    """The language-neutral configuration of a grid point (``method`` is the sampler)."""
    return {"method": p["sampler"], "steps": int(p["steps"]), "guidance": float(p["guidance"])}


def row_config(key: str, p: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration of a reported row: a control names what it controls for."""
    if key == "matched":
        return {"method": "ddim-matched", "steps": int(p["steps"])}
    if key == "single":
        return {**point_config(p), "method": "single-axis", "sampler": p["sampler"]}
    return point_config(p)


def reported_points(
    grid: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
    """``({row id: grid point}, [ids left out because they are the choice])`` from the
    completed grid's selection values."""
    chosen = choose(grid, DEFAULT_POINT, QUALITY_TOLERANCE, COST_TARGET)
    single = single_axis_choice(grid, DEFAULT_POINT, QUALITY_TOLERANCE, COST_TARGET)
    matched = {"sampler": "ddim", "steps": rows_per_image(chosen), "guidance": 1.0}
    points: dict[str, Mapping[str, Any]] = {"default": DEFAULT_POINT, "chosen": chosen}
    omitted = []
    for key, p in (("single", single), ("matched", matched)):
        if same_point(p, chosen):
            omitted.append(key)
        else:
            points[key] = p
    return points, omitted


def selection_facts(p: Mapping[str, Any], grid: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Values of a reported point that do not vary with the reporting seed: its denoiser rows
    per image (1) and, when the grid holds it, its selection FDD."""
    facts = {"rows_per_image": float(rows_per_image(p))}
    hit = next((r for r in grid if same_point(r, p)), None)
    if hit is not None:
        facts["fd_select"] = float(hit["fd_digits"])
    return facts


def solution_of(n: int, steps: int) -> Callable[[int], Any]:
    """The converged unguided solution (`reference.harness.ode.solution`, ``steps`` steps) of
    the noise of each seed, read from the shared cache (`reference.harness.solutions`) when
    another run solved the same tensors before."""
    from reference.harness.sampling import class_labels, make_noise
    from reference.harness.solutions import solution

    model, labels = teacher(), class_labels(n)
    return lambda seed: solution(model, make_noise(n, seed), labels=labels, steps=steps)


def choice_aims(ids: Sequence[str]) -> tuple[AnyAim, ...]:
    """The choice on the reporting seeds: as good as the default within the tolerance, at least
    ``1 / COST_TARGET`` as fast, faster than what tuning the steps alone finds, and better than
    the default sampler at the same cost (the last two only where that control is a row)."""
    aims: list[AnyAim] = [
        QualityAim("held-out-quality", "chosen", "default", "fd_digits", "<=", QUALITY_TOLERANCE),
        SpeedupAim("speedup", "chosen", "default", ">=", 1 / COST_TARGET),
    ]
    if "single" in ids:
        aims.append(SpeedupAim("speedup-vs-single-axis", "chosen", "single", ">", 1.0))
    if "matched" in ids:
        aims.append(QualityAim("quality-vs-matched", "chosen", "matched", "fd_digits", "<", 1.0))
    return tuple(aims)


def _point_id(p: Mapping[str, Any]) -> str:
    return f"{p['sampler']}-{p['steps']}-{p['guidance']:g}"


def front_rows(
    front: Sequence[Mapping[str, Any]], reported: Mapping[str, Mapping[str, Any]]
) -> list[Row]:
    """The Pareto-front points that are not reported rows: their one grid latency and their
    selection FDD (measured once, on the selection seeds; no interval)."""
    return [
        Row(
            f"front-{_point_id(r)}",
            point_config(r),
            "reference",
            {"latency_ms": float(r["latency_ms"]), "fd_select": float(r["fd_digits"])},
        )
        for r in front
        if not any(same_point(r, p) for p in reported.values())
    ]


def lr_rows(train_grid: Sequence[Mapping[str, Any]], steps: int) -> list[Row]:
    """One row per learning rate of the training grid: training time and selection FDD."""
    return [
        Row(
            f"lr-{r['lr']:g}",
            {"method": "train-lr", "lr": float(r["lr"]), "steps": steps},
            "reference",
            {"train_s": float(r["latency_ms"]) / 1000, "fd_select": float(r["fd_digits"])},
        )
        for r in sorted(train_grid, key=lambda r: r["lr"])
    ]
