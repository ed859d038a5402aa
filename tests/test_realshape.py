"""The real-shape study: every technique through its public shape, timed against the plain
model; the quick configuration runs it on tiny production classes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference.harness.study import main as study_main
from reference.realshape import bench
from reference.realshape.__main__ import STUDY


def test_bad_options_are_refused_before_any_model_is_built(capsys: pytest.CaptureFixture) -> None:
    assert study_main(STUDY, ["--bench", "--models", "sd15,nope"]) == 2
    assert "unknown model 'nope'; known: sd15, dit-xl-2" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--techniques", "magic"]) == 2
    assert "unknown technique 'magic'" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--steps", "1"]) == 2


def test_the_flop_estimate_counts_what_a_loop_computes() -> None:
    from reference.zoo import shapes

    model = shapes.tiny("dit")
    inputs = shapes.example_inputs(model)
    one = bench.loop_gflops(bench.denoising_loop(model, inputs, 1))
    three = bench.loop_gflops(bench.denoising_loop(model, inputs, 3))
    assert one > 0 and three == pytest.approx(3 * one, rel=1e-9)


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    from reference.harness.cli import plan, run_benchmark

    out = tmp_path_factory.mktemp("realshape")
    p = plan(STUDY, bench, run_bench=True, quick=True, threads=None, out=out, overrides={})
    result, path = run_benchmark(p)
    return result.to_dict(), path


@pytest.mark.slow
def test_quick_study_times_every_technique_on_every_model_it_applies_to(
    quick: tuple[dict[str, Any], Path],
) -> None:
    data, path = quick
    ids = {r["id"] for r in data["rows"]}
    expected = {f"{m}.baseline" for m in bench.QUICK.models} | {
        f"{m}.{t}"
        for m in bench.QUICK.models
        for t in bench.QUICK.techniques
        if bench.MODELS[m] in bench.VARIANTS[t][0]
    }
    assert ids == expected and path.is_file()
    for row in data["rows"]:
        v = row["values"]
        if row["role"] == "baseline":
            assert v["latency_ms"] > 0 and v["gflops"] > 0
            continue
        lo, hi = row["intervals"]["speedup"]
        assert lo <= v["speedup"] <= hi and v["latency_ms"] > 0
        if row["config"]["method"] == "deepcache" or row["config"]["method"] == "forecasting":
            assert v["flop_speedup"] > 1  # skipped calls count no FLOPs
        if row["config"]["method"] == "cfg":
            assert v["flop_speedup"] == pytest.approx(0.5, rel=0.05)  # two rows per call
    assert not data["standard"] and data["provenance"]["files"]


@pytest.mark.slow
def test_the_study_page_and_the_technique_pages_show_it_in_three_languages(
    quick: tuple[dict[str, Any], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from glossary.loader import load_glossary
    from glossary.site import context, results
    from glossary.site.compare import compare_page
    from glossary.site.studies import TECHNIQUE_OF, realshape_lines, study_page

    assert set(TECHNIQUE_OF) == set(bench.VARIANTS)  # every timed technique has its entry
    fixtures = Path(__file__).parent / "fixtures" / "site"
    monkeypatch.syspath_prepend(str(fixtures))
    ctx = context.Context(
        glossary=load_glossary(fixtures / "entries"),
        results=results.load_results(quick[1].parent, allow_nonstandard=True),
        module_exists=lambda module: False,
    )
    assert "realshape" in ctx.results.composites
    for lang in ("es", "ru", "en"):
        page = study_page("realshape", lang, ctx)
        assert "glossary bench realshape" in page and "(realshape.md)" in compare_page(lang, ctx)
        assert "page.intro" not in page and "model.sd15" not in page
        shown = [line for line in page.splitlines() if "`models=" not in line]  # settings: code
        assert not any("sd15" in line for line in shown)  # the model is named in words
        lines = realshape_lines("feature-caching", lang, ctx)
        rows = [line for line in lines if line.startswith("- ")]
        assert "../realshape.md" in lines[0] and len(rows) == 1  # DeepCache: the U-Net only
        assert "page.technique-row" not in rows[0] and "×" in rows[0]
        two = realshape_lines("conv-fusion", lang, ctx)  # timed on both models
        assert len([line for line in two if line.startswith("- ")]) == 2
    assert realshape_lines("gradient-checkpointing", "en", ctx) == []  # not timed there
