"""What the grid search reports: the held-out rows of the default, the choice and the controls,
and the aims that judge the choice on the held-out seeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference.harness.results import Row, aim

from .analysis import same_point

QUALITY_TOLERANCE = 1.1
"""A configuration "matches" the default when its FDD is at most this factor above it."""
COST_TARGET = 0.5
"""The choice should cost at most this fraction of the default's latency."""


def point_config(p: Mapping[str, Any]) -> dict[str, Any]:
    """The language-neutral configuration of a grid point."""
    return {"method": p["sampler"], "steps": int(p["steps"]), "guidance": float(p["guidance"])}


def reported_rows(points: Mapping[str, Any], q: Any, lat: Any, grid: Sequence[Any]) -> list[Row]:
    """The reported points: held-out quality (mean, interval, seeds), latency, selection FDD."""
    roles = {
        "default": "baseline",
        "chosen": "technique",
        "single": "control",
        "matched": "control",
    }
    out = []
    for k, p in points.items():
        values, intervals, seeds = q.row_fields(k)
        selected = next((r["fd_digits"] for r in grid if same_point(r, p)), None)
        config = (
            {"method": "ddim-matched", "steps": p["steps"]} if k == "matched" else point_config(p)
        )
        if k == "single":
            config = {**config, "method": "single-axis", "sampler": p["sampler"]}
        if k != "default":
            intervals = {"speedup": lat.speedup_interval(k), **intervals}
        values = {"latency_ms": lat.median_ms(k), "speedup": lat.speedup[k], **values}
        out.append(
            Row(
                k,
                config,
                roles[k],  # type: ignore[arg-type]
                {**values, "fd_select": selected},
                intervals=intervals,
                spread={"latency_ms": lat.iqr_ms(k)},
                seeds=seeds,
            )
        )
    return out


def choice_aims(q: Any, lat: Any) -> list:
    """The choice on held-out seeds: as good as the default (within the tolerance), at least
    ``1 / COST_TARGET`` as fast, and faster than what tuning the steps alone finds."""
    vs_default = q.ratio("chosen", "default", "fd_digits")
    aims = [
        aim(
            "held-out-quality",
            vs_default.value,
            QUALITY_TOLERANCE,
            "<=",
            interval=vs_default.interval,
            row="chosen",
            against="default",
        ),
        aim(
            "speedup",
            lat.speedup["chosen"],
            1 / COST_TARGET,
            ">=",
            interval=lat.speedup_interval("chosen"),
            row="chosen",
            against="default",
            cost_target=COST_TARGET,
        ),
    ]
    if "single" in lat.stats:
        aims.append(
            aim(
                "speedup-vs-single-axis",
                lat.speedup_over("chosen", "single"),
                1.0,
                ">",
                interval=lat.speedup_interval("chosen", against="single"),
                row="chosen",
                against="single",
            )
        )
    return aims
