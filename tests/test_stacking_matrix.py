"""The compatibility matrix (reference/compatibility.py): complete, consistent with the elements'
pipeline slots, its reasons one line each and translated. Torch-free."""

from __future__ import annotations

from itertools import combinations

import pytest
from babel.messages.pofile import read_po

from glossary.resulttext import LANGS, ResultText, catalog_path
from reference import compatibility as cm
from reference.registry import slugs
from reference.stacking.elements import BY_SLUG, ELEMENTS, row_id


def test_every_registered_technique_has_a_role() -> None:
    assert set(cm.ROLES) == {*slugs(), cm.COMPILE}
    for role in cm.ROLES.values():
        assert (role.level is None) == (role.not_inference_time is not None)
        assert role.level is None or role.level in cm.LEVELS


def test_the_matrix_classifies_every_pair_once() -> None:
    pairs = cm.all_pairs()
    n = len(cm.inference_time())
    assert n == 12 and len(pairs) == n * (n - 1) // 2 == 66
    assert sum(v.compatible for *_, v in pairs) == 35
    assert all(len(p) == 2 and p <= set(cm.inference_time()) for p in cm.INCOMPATIBLE)
    assert len(cm.INCOMPATIBLE) == 31
    for a, b, v in pairs:
        assert cm.verdict(b, a) == v  # symmetric


def test_reasons_are_one_short_line_and_each_is_used() -> None:
    for reason, line in cm.REASONS.items():
        assert "\n" not in line and len(line) < 130, reason
    assert set(cm.INCOMPATIBLE.values()) == set(cm.REASONS)


@pytest.mark.parametrize("slug", [s for s, r in cm.ROLES.items() if r.level is None])
def test_a_technique_that_is_not_inference_time_is_in_no_pair(slug: str) -> None:
    with pytest.raises(KeyError, match="not an inference-time technique"):
        cm.verdict(slug, "pruning")


def test_unknown_slugs_and_self_pairs_are_refused() -> None:
    with pytest.raises(KeyError, match="unknown technique 'nope'"):
        cm.verdict("nope", "pruning")
    with pytest.raises(KeyError, match="two different"):
        cm.verdict("pruning", "pruning")


def test_every_inference_time_slug_is_an_element() -> None:
    assert set(BY_SLUG) == set(cm.inference_time())


@pytest.mark.parametrize(("a", "b"), list(combinations(sorted(ELEMENTS), 2)))
def test_elements_writing_the_same_slot_are_marked_incompatible(a: str, b: str) -> None:
    ea, eb = ELEMENTS[a], ELEMENTS[b]
    if ea.writes & eb.writes:
        assert not cm.verdict(ea.slug, eb.slug).compatible


def test_row_ids_follow_the_composition_order() -> None:
    assert row_id(["solver", "deepcache", "pruned", "compile"]) == "pruned.compile.deepcache.solver"
    assert row_id(["guidance", "forecast"]) == "guidance.forecast"
    assert row_id([]) == "base"


def test_the_english_catalog_repeats_the_matrix_lines() -> None:
    en = ResultText("stacking", "en")
    for reason, line in cm.REASONS.items():
        assert en.message(f"reason.{reason}") == line


@pytest.mark.parametrize("lang", LANGS)
def test_every_name_and_reason_is_translated(lang: str) -> None:
    with catalog_path("stacking", lang).open("rb") as fh:
        ids = {m.id for m in read_po(fh) if m.id}
    needed = {f"reason.{r}" for r in cm.REASONS}
    needed |= {f"element.{e}" for e in ELEMENTS} | {f"level.{lv}" for lv in cm.LEVELS}
    assert needed <= ids
    with catalog_path("stacking", "en").open("rb") as fh:
        assert ids == {m.id for m in read_po(fh) if m.id}


@pytest.mark.parametrize(
    ("rest", "kept", "selected"),
    [
        ([], [], True),
        (["--check"], ["--check"], True),
        (["stacking"], [], True),
        (["pruning", "--quick"], ["pruning", "--quick"], False),
        (["stacking", "pruning"], ["pruning"], True),
        (["--out", "stacking"], ["--out", "stacking"], True),  # a folder, not the study
    ],
)
def test_glossary_bench_finds_the_study_among_its_arguments(
    rest: list[str], kept: list[str], selected: bool
) -> None:
    from glossary.cli import split_stacking

    assert split_stacking(rest) == (kept, selected)


def test_glossary_bench_runs_the_sanity_study_the_fifteen_then_the_other_studies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import glossary.cli
    import reference.harness.runner as runner
    import reference.harness.study as study
    import reference.stacking.cli as stacking_cli
    from glossary.cli import cmd_bench

    calls: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(runner, "check", lambda slugs: calls.append(("runner", ["--check"])) or 0)
    monkeypatch.setattr(stacking_cli, "main", lambda argv: calls.append(("stacking", argv)) or 0)
    monkeypatch.setattr(study, "main", lambda s, argv: calls.append((s.slug, argv)) or 0)
    monkeypatch.setattr(glossary.cli, "UNMEASURED", ())
    from reference.harness import entry
    from reference.registry import REFERENCE_DIR, slugs

    def ran(plans: list[entry.Plan], show_traceback: bool) -> int:
        calls.extend(("entry", [p.target.slug, str(p.out)]) for p in plans)
        return 0

    monkeypatch.setattr(runner, "_run_plans", ran)  # each technique on its own command line
    assert cmd_bench(["--check"]) == 0
    assert calls == [
        ("baseline-sanity", ["--check"]),
        ("runner", ["--check"]),
        ("stacking", ["--check"]),
        ("realshape", ["--check"]),
        ("realshape-gpu", ["--check"]),  # its result is checked on any machine
    ]
    calls.clear()
    assert cmd_bench(["stacking", "--quick", "--threads", "1"]) == 0
    assert calls == [("stacking", ["--bench", "--quick", "--threads", "1"])]
    calls.clear()
    results = str(REFERENCE_DIR / "results")  # pruning's standard run, by entry
    assert cmd_bench(["pruning", "realshape"]) == 0
    assert calls == [("entry", ["pruning", results]), ("realshape", ["--bench"])]
    calls.clear()
    assert cmd_bench(["pruning"]) == 0
    assert calls == [("entry", ["pruning", results])]
    calls.clear()
    assert cmd_bench(["--out", "stacking"]) == 0  # a folder named stacking, not the study alone
    assert calls == [
        ("baseline-sanity", ["--bench", "--out", "stacking"]),
        *[("entry", [slug, "stacking"]) for slug in slugs()],
        ("stacking", ["--bench", "--out", "stacking"]),
        ("realshape", ["--bench", "--out", "stacking"]),
        # realshape-gpu needs a CUDA device: left out here unless the machine has one
        *([("realshape-gpu", ["--bench", "--out", "stacking"])] if _cuda() else []),
    ]


def test_a_pending_study_is_said_to_be_pending_and_has_no_result() -> None:
    from glossary.cli import STUDY_NAMES, UNMEASURED
    from reference.harness.provenance import RESULTS_DIR

    assert set(UNMEASURED) <= set(STUDY_NAMES)
    for slug in UNMEASURED:  # measured: remove it from UNMEASURED so that --check checks it
        assert not (RESULTS_DIR / f"{slug}.json").exists(), slug


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
