"""What the grid search reports: the single-axis control, held-out seeds, the choice's aims."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reference.grid_search.analysis import choose, single_axis_choice
from reference.grid_search.objective import DEFAULT_POINT

GRID = [
    {"sampler": s, "steps": k, "guidance": 1.0, "fd_digits": fd, "latency_ms": 10.0 * k}
    for s, k, fd in [
        ("ddim", 50, 10.0),
        ("ddim", 20, 10.8),
        ("ddim", 8, 14.0),
        ("dpmpp2m", 8, 10.5),
        ("dpmpp2m", 4, 12.0),
    ]
]


def test_the_single_axis_control_varies_the_steps_of_the_default_sampler_only() -> None:
    chosen = choose(GRID, DEFAULT_POINT, 1.1, 0.5)
    single = single_axis_choice(GRID, DEFAULT_POINT, 1.1, 0.5)
    assert (chosen["sampler"], chosen["steps"]) == ("dpmpp2m", 8)
    assert (single["sampler"], single["steps"]) == ("ddim", 20)  # DDIM-8 misses the tolerance


def test_held_out_seeds_must_not_overlap_the_selection_seeds() -> None:
    from reference.grid_search.bench import FULL, QUICK

    assert not set(FULL.select_seeds) & set(FULL.seeds)
    assert not set(QUICK.select_seeds) & set(QUICK.seeds)
    with pytest.raises(ValueError, match="disjoint from --seeds"):
        replace(FULL, select_seeds=(0, 100)).validate()
    with pytest.raises(ValueError, match="--seeds needs at least 2"):
        replace(FULL, seeds=(3,)).validate()


def test_the_choice_is_judged_on_held_out_intervals() -> None:
    from reference.grid_search.report import choice_aims
    from reference.harness.cost import LatencyComparison, _stats
    from reference.harness.seeds import SeedTable

    q = SeedTable((0, 1, 2))
    for base, fast in [(10.0, 10.4), (11.0, 11.3), (9.0, 9.5)]:
        q.add("default", {"fd_digits": base})
        q.add("chosen", {"fd_digits": fast})
    rounds = [1.0, 1.2, 0.9, 1.1]
    times = {"default": 10.0, "chosen": 2.0, "single": 2.1}
    stats = {k: _stats([t * r for r in rounds]) for k, t in times.items()}
    lat = LatencyComparison("default", stats, {k: 10.0 / t for k, t in times.items()}, 2, 4, 0)
    states = {a.id: a.state for a in choice_aims(q, lat)}
    assert states["held-out-quality"] == "met"  # ratios 1.03-1.06, all below 1.1
    assert states["speedup"] == "met"  # 5x in every round
    assert states["speedup-vs-single-axis"] == "met"  # 1.05x in every round
