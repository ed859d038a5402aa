"""The baseline sanity study: its quick run, its aims and its refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference.baseline_sanity import bench
from reference.harness.study import STUDIES
from reference.harness.study import main as study_main

STUDY = next(s for s in STUDIES if s.slug == "baseline-sanity")


def test_bad_options_are_refused_before_any_work(capsys: pytest.CaptureFixture) -> None:
    assert study_main(STUDY, ["--bench", "--steps", "5,10"]) == 2
    assert "steps must include the baseline's 50" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--steps", "50,10"]) == 2
    assert "ascending" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--solution-steps", "0"]) == 2
    assert "--solution-steps: expected a whole number from 1 to 1000, got '0'" in (
        capsys.readouterr().err
    )
    # bounds the code needs, a typo, a seed no generator takes: one line each, exit 2
    for bad in (
        ["--n", "100000"],
        ["--seeds", "0,99999999999"],
        ["--sed", "1"],
        ["--threads", "0"],
    ):
        assert study_main(STUDY, ["--bench", *bad]) == 2, bad
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("python -m reference.baseline_sanity: error:")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory, quick_study: Any) -> dict[str, Any]:
    result, _ = quick_study(STUDY.package, tmp_path_factory.mktemp("sanity"))
    assert result["schema_version"] == 4 and result["digest"].startswith("sha256:")
    return result


@pytest.mark.slow
def test_quick_run_shows_the_new_ddim_converging_and_the_old_one_further_away(
    quick: dict[str, Any],
) -> None:
    rows = {r["id"]: r for r in quick["rows"]}
    assert rows["ddim-50"]["role"] == "baseline" and rows["solution"]["role"] == "reference"
    rms = {s: rows[f"ddim-{s}"]["values"]["rms_to_solution"] for s in bench.QUICK.steps}
    assert rms[5] > rms[10] > rms[50]
    old = rows["diffusers-ddim-10"]["values"]["rms_to_solution"]
    assert old > rms[10]  # the same steps, another equation: further from the solution
    converges = [a for a in quick["aims"] if a["id"] == "converges"]
    assert [a["row"] for a in converges] == ["ddim-10", "ddim-50"]
    assert all(a["state"] == "met" for a in converges)
    fdd = [a for a in quick["aims"] if a["id"] == "fdd-does-not-rise"]
    assert all(a["target"] > 1 for a in fdd)  # the top of the fewer-step row's interval


@pytest.mark.slow
def test_every_message_of_the_quick_result_exists_in_three_languages(
    quick: dict[str, Any],
) -> None:
    from glossary.resulttext import missing_messages

    for lang in ("es", "ru", "en"):
        assert missing_messages(quick, lang) == [], lang


@pytest.mark.slow
def test_the_result_records_the_code_it_ran(quick: dict[str, Any]) -> None:
    # that nothing else is recorded is tested in a fresh interpreter (test_harness_results):
    # this process may have imported other techniques for earlier tests
    files = quick["provenance"]["files"]
    assert "reference/harness/ode.py" in files and "reference/baseline_sanity/bench.py" in files
    assert "reference/harness/sampling.py" in files and "reference/zoo/__init__.py" in files


@pytest.mark.slow
def test_the_page_shows_the_result_in_three_languages_and_the_comparison_links_it(
    quick: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from glossary.loader import load_glossary
    from glossary.site import context, results
    from glossary.site.compare import compare_page
    from glossary.site.studies import study_page

    fixtures = Path(__file__).parent / "fixtures" / "site"
    monkeypatch.syspath_prepend(str(fixtures))  # the fixture entries' reference module
    (tmp_path / "baseline-sanity.json").write_text(json.dumps(quick), encoding="utf-8")
    ctx = context.Context(
        glossary=load_glossary(fixtures / "entries"),
        results=results.load_results(tmp_path, allow_nonstandard=True),
        module_exists=lambda module: False,
    )
    assert "baseline-sanity" in ctx.results.composites and not ctx.results.by_slug
    titles = {"es": "¿Es sólida la referencia base?", "ru": "Надёжна ли базовая линия?"}
    for lang, title in {**titles, "en": "Is the baseline sound?"}.items():
        page = study_page("baseline-sanity", lang, ctx)
        assert page.startswith("# " + title)
        assert "glossary bench baseline-sanity" in page
        assert "page.intro" not in page and "config.ddim" not in page  # every id translated
        assert "(baseline.md)" in compare_page(lang, ctx)
    empty = context.Context(
        glossary=ctx.glossary, results=results.load_results(tmp_path / "none"), module_exists=bool
    )
    assert "glossary bench baseline-sanity" not in study_page(
        "baseline-sanity", "en", empty
    )  # nothing measured
