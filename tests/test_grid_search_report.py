"""What the grid search reports: the controls it re-measures, the aims it declares, the selection
kept apart from the reporting seeds and digits, the learning-rate rows scored on the selection
seeds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reference.grid_search.analysis import choose, single_axis_choice
from reference.grid_search.objective import DEFAULT_POINT, SELECT_SEEDS

GRID = [
    {"sampler": s, "steps": k, "guidance": g, "fd_digits": fd, "latency_ms": 10.0 * k}
    for s, k, g, fd in [
        ("ddim", 50, 1.0, 10.0),
        ("ddim", 20, 1.0, 10.8),
        ("ddim", 8, 1.0, 14.0),
        ("dpmpp2m", 8, 1.0, 10.5),
        ("dpmpp2m", 4, 1.0, 12.0),
        ("unipc", 4, 2.5, 10.9),  # guided: twice the rows, within the tolerance, not the best
    ]
]


def test_the_single_axis_control_varies_the_steps_of_the_default_sampler_only() -> None:
    chosen = choose(GRID, DEFAULT_POINT, 1.1, 0.5)
    single = single_axis_choice(GRID, DEFAULT_POINT, 1.1, 0.5)
    assert (chosen["sampler"], chosen["steps"]) == ("dpmpp2m", 8)
    assert (single["sampler"], single["steps"]) == ("ddim", 20)  # DDIM-8 misses the tolerance


def test_reported_points_and_their_declared_aims() -> None:
    from reference.grid_search.report import choice_aims, reported_points, selection_facts

    points, omitted = reported_points(GRID)
    assert omitted == []
    assert {k: (p["sampler"], p["steps"]) for k, p in points.items()} == {
        "default": ("ddim", 50),
        "chosen": ("dpmpp2m", 8),
        "single": ("ddim", 20),
        "matched": ("ddim", 8),  # DDIM at the choice's 8 denoiser rows per image
    }
    # the matched point is in the grid: its selection FDD comes along; facts are exact copies
    assert selection_facts(points["matched"], GRID) == {"rows_per_image": 8.0, "fd_select": 14.0}
    assert selection_facts({"sampler": "unipc", "steps": 4, "guidance": 2.5}, GRID) == {
        "rows_per_image": 8.0,
        "fd_select": 10.9,
    }
    aims = {a.id: (a.row, a.against) for a in choice_aims(list(points))}
    assert aims == {
        "held-out-quality": ("chosen", "default"),
        "speedup": ("chosen", "default"),
        "speedup-vs-single-axis": ("chosen", "single"),
        "quality-vs-matched": ("chosen", "matched"),
    }


def test_a_control_that_is_the_choice_is_left_out_with_its_aim() -> None:
    from reference.grid_search.report import choice_aims, reported_points

    ddim_only = [r for r in GRID if r["sampler"] == "ddim"]
    points, omitted = reported_points(ddim_only)
    assert (points["chosen"]["sampler"], points["chosen"]["steps"]) == ("ddim", 20)
    assert omitted == ["single", "matched"]  # both controls would repeat the choice
    assert set(points) == {"default", "chosen"}
    assert {a.id for a in choice_aims(list(points))} == {"held-out-quality", "speedup"}


def test_selection_never_uses_a_reporting_seed() -> None:
    from reference.grid_search.bench import DEMO, FULL, QUICK

    for cfg in (FULL, QUICK, DEMO):
        assert not set(cfg.select_seeds) & set(cfg.seeds)
    assert FULL.select_seeds == SELECT_SEEDS and FULL.n_quality == 140
    with pytest.raises(ValueError, match="disjoint from --seeds"):
        replace(FULL, select_seeds=(0, 100)).validate()


def test_the_selection_reference_is_the_training_digits_not_the_held_out_ones() -> None:
    import numpy as np

    from reference.data import load_digits_tensors
    from reference.grid_search.objective import selection_reference
    from reference.harness.scores import dataset_indices

    train, test = dataset_indices("train"), dataset_indices("test")
    assert not set(train) & set(test)  # the reporting reference is a half of ``test``
    labels = selection_reference().labels
    assert np.array_equal(labels, load_digits_tensors("train")[1].numpy()) and len(labels) == 1497


@pytest.mark.slow
def test_learning_rate_rows_are_scored_on_the_selection_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The learning-rate rows are a selection like the grid: their samples come from the
    selection seeds (before the fix they used seed 0, a reporting seed) and training leaves the
    process's random state untouched."""
    import torch

    from reference.grid_search import objective
    from reference.grid_search.bench import FULL

    seeds: list[int] = []
    sample = objective.sample_point

    def spy(point, n, seed, eps_fn=None):  # type: ignore[no-untyped-def]
        seeds.append(seed)
        return sample(point, n, seed, eps_fn)

    monkeypatch.setattr(objective, "sample_point", spy)
    before = torch.random.get_rng_state()
    out = objective.train_objective(steps=1, n_eval=20)({"lr": 1e-3})
    assert seeds == list(SELECT_SEEDS) and not set(seeds) & set(FULL.seeds)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert out["fd_digits"] > 0 and out["latency_ms"] > 0


def test_the_chart_notes_keep_the_pareto_front_and_the_strategy_curves() -> None:
    """The site draws both figures from these notes: the front in order of latency with the
    default and the choice as one point each, and one best-so-far value per trial count."""
    import numpy as np

    from reference.grid_search.analysis import pareto_front, same_point
    from reference.grid_search.notes import curves_note, pareto_note

    front = pareto_front(GRID, ["fd_digits", "latency_ms"])
    base = next(r for r in GRID if same_point(r, DEFAULT_POINT))
    chosen = choose(GRID, DEFAULT_POINT, 1.1, 0.5)
    params = pareto_note(front, base, chosen).params
    assert params["series"] == ["front", "default", "chosen"] and params["points"] == len(front)
    assert params["latency_ms"] == [[r["latency_ms"] for r in front], [500.0], [80.0]]
    assert params["fd_select"] == [[r["fd_digits"] for r in front], [10.0], [10.5]]
    assert params["latency_ms"][0] == sorted(params["latency_ms"][0])

    curves = {"grid": np.array([9.0, 7.0, 7.0]), "random": np.array([8.0, 8.0, 6.0])}
    curves["tpe"] = np.array([9.0, 6.0, 5.0])
    kept = curves_note(curves, orders=2).params
    assert kept["trials"] == [1, 2, 3] and kept["orders"] == 2
    assert kept["series"] == ["grid", "random", "tpe"]
    assert kept["best"] == [[9.0, 7.0, 7.0], [8.0, 8.0, 6.0], [9.0, 6.0, 5.0]]
    assert all(type(v) is float for line in kept["best"] for v in line)  # JSON, not numpy


def test_the_solution_of_the_reporting_seeds_is_solved_once_and_shared(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The converged solution goes through the shared cache: the first call of a seed solves
    and keeps one file, the second reads it back, bitwise the same tensor, and another
    benchmark asking for the same teacher, noise, labels and steps gets that file."""
    import torch

    from reference import zoo
    from reference.grid_search.report import solution_of
    from reference.harness import solutions
    from reference.harness.sampling import class_labels, make_noise

    monkeypatch.setenv(solutions.CACHE_ENV, str(tmp_path))
    solve = solution_of(20, 2)
    first = solve(0)
    assert len(list(tmp_path.glob("*.pt"))) == 1
    assert torch.equal(solve(0), first) and len(list(tmp_path.glob("*.pt"))) == 1
    shared = solutions.solution(
        zoo.load_teacher(), make_noise(20, 0), labels=class_labels(20), steps=2
    )
    assert torch.equal(shared, first) and len(list(tmp_path.glob("*.pt"))) == 1


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_the_single_axis_row_names_its_sampler_in_the_readers_language(lang: str) -> None:
    from glossary.resulttext import ResultText
    from reference.grid_search.objective import SAMPLERS
    from reference.grid_search.report import row_config

    text = ResultText("grid-search", lang)
    for sampler in SAMPLERS:
        config = row_config("single", {"sampler": sampler, "steps": 12, "guidance": 1.0})
        name = text.word("sampler", sampler)
        assert name != sampler  # every sampler of the grid has a name in each catalog
        shown = text.config(config)
        assert name in shown and f" {sampler}" not in shown
    assert text.word("sampler", "no-such-sampler") == "no-such-sampler"
    assert text.word("steps", 12) == 12
