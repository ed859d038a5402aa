"""The stacking page (glossary.site.stacking), its charts (stackplots) and the links technique
pages make to it, on the hand-made fixture ``tests/fixtures/site/results/stacking.json``.

The fixture is a valid, standard schema-3 result of four elements (solver, forecast, compile,
student): five pairs, one three-technique stack, a variant, six DDIM controls and the real
digits. Its words come from the study's own catalog when that exists; where a message is
missing the page shows its id, so these tests check structure, numbers and links, not wording.
"""

from __future__ import annotations

import copy
import html
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from glossary.loader import load_glossary, module_exists
from glossary.resulttext import ResultText
from glossary.schema import LANGS
from glossary.site import context, generate, plots, results, stackdata, stacking, stackplots, terms
from reference.harness.schema import validate_result

try:
    from tests import site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import site_support  # type: ignore[no-redef]

RESULTS = Path(__file__).resolve().parent / "fixtures" / "site" / "results"
FIXTURE = RESULTS / "stacking.json"
STACKS = (
    "student.forecast",
    "student.compile",
    "compile.forecast.solver",
    "forecast.solver",
    "compile.solver",
    "compile.forecast",
)
PHONE_WIDTH_PX = 358  # a 390 px phone less Material's 16 px margins


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def glossary() -> Any:
    """The project's entries: the elements' term pages exist there (not in the fixtures)."""
    return load_glossary()


@pytest.fixture
def fixture_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the fixture entries' reference module importable (the loader checks it)."""
    monkeypatch.syspath_prepend(str(site_support.FIXTURES))


def _context(glossary: Any, folder: Path) -> context.Context:
    return context.Context(
        glossary=glossary, results=results.load_results(folder), module_exists=module_exists
    )


@pytest.fixture
def ctx(glossary: Any) -> context.Context:
    return _context(glossary, RESULTS)


@pytest.fixture
def absent(glossary: Any, tmp_path: Path) -> context.Context:
    """The fixture results without the stacking study."""
    folder = tmp_path / "results"
    folder.mkdir()
    for path in RESULTS.glob("feature-caching*"):
        shutil.copy2(path, folder)
    return _context(glossary, folder)


def _section(page: str, anchor: str) -> str:
    # a section kept out of the search index carries data-search-exclude after its anchor
    return re.split(rf"\{{#{anchor}(?: data-search-exclude)?\}}", page)[1].split("\n## ")[0]


def _names(lang: str, ids: list[str], ctx: context.Context | None = None) -> str:
    """The study's names of ``ids``: each element's entry term first when ``ctx`` gives the
    glossary (as the pages write them), the study's own names alone otherwise (a chart drawn
    without terms)."""
    if ctx is None:
        return stackdata.names(ResultText("stacking", lang), ids)
    return stackdata.names(stacking.study_text(lang, ctx), ids)


def span(lo: str, hi: str) -> str:
    """An interval as the site writes it: unbreakable (no-break space, word joiners)."""
    return f"\u00a0[{lo}\u2060–\u2060{hi}]"


# ------------------------------------------------------------------------- the result file


def test_fixture_is_a_valid_composite_result(result: dict[str, Any]) -> None:
    assert validate_result(result) == []
    assert result["standard"] and not result["quick"] and result["slug"] == "stacking"
    loaded = results.load_results(RESULTS)
    assert "stacking" in loaded.composites and "stacking" not in loaded.by_slug
    assert set(loaded.all()) == {"feature-caching", "pruning", "stacking"}
    assert sorted(r["id"] for r in stackdata.stack_rows(result)) == sorted(STACKS)


def test_a_broken_composite_stops_generation_like_any_result(tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data["rows"] = [r for r in data["rows"] if r["role"] != "baseline"]
    (tmp_path / "stacking.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(results.SiteGenError, match=r"stacking\.json.*baseline"):
        results.load_results(tmp_path)


def test_rows_are_read_by_origin(result: dict[str, Any]) -> None:
    origins = {row["id"]: stackdata.origin(row) for row in result["rows"]}
    assert origins["base"] == "baseline" and origins["solver"] == "single"
    assert origins["student2"] == "variant" and origins["forecast.solver"] == "pair"
    assert origins["compile.forecast.solver"] == "stack" and origins["ddim-8"] == "control"
    assert stackdata.anchor("compile.forecast.solver") == "stack-compile-forecast-solver"
    assert stackdata.element_of(result, "torch-compile") == "compile"
    best = stackdata.fastest_within(result, 1.1)
    assert best is not None and best["id"] == result["headline"]["row"]


# ---------------------------------------------------------------------------- generation


def test_generation_keeps_the_study_apart_from_the_techniques(
    tmp_path: Path, fixture_path: None
) -> None:
    docs = tmp_path / "docs"
    report = generate.generate(docs, entries_dir=site_support.FIXTURES / "entries", results=RESULTS)
    assert report.problems == []  # no "no technique 'stacking'"
    for lang in LANGS:
        assert (docs / lang / "stacking.md").is_file()
        assert not (docs / lang / "terms" / "stacking.md").exists()
        charts = {p.name for p in (docs / "assets" / "results" / lang).iterdir()}
        assert {"stacking-pareto.svg", "stacking-interaction.svg"} <= charts
        assert "stacking.svg" not in charts
        page = (docs / lang / "stacking.md").read_text(encoding="utf-8")
        prefix = "../" if lang == "en" else "../../"
        for name in ("stacking-pareto", "stacking-interaction"):
            assert f'src="{prefix}assets/results/{lang}/{name}.svg"' in page


@pytest.mark.parametrize("lang", LANGS)
def test_page_has_its_sections_in_order(ctx: context.Context, lang: str) -> None:
    page = stacking.stacking_page(lang, ctx)
    text = ResultText("stacking", lang)
    assert page.startswith("# " + text.message("stacking.title") + "\n")
    anchors = re.findall(r"^## .+ \{#([a-z-]+)\}$", page, re.M)
    assert anchors == ["answer", "stacks", "compatibility", "measurement"]  # no charts drawn
    levels = " → ".join(text.message(f"level.{level}") for level in stacking.LEVELS)
    assert levels in page


SHORT_ANSWER = {  # the fixture's two budgets, 1.1 and 1.25; ratios to three figures
    "en": ("10%", "9.10×" + span("8.60", "9.70"), "0.800" + span("0.740", "0.870"), "25%"),
    "es": ("10 %", "9,10×" + span("8,60", "9,70"), "0,800" + span("0,740", "0,870"), "25 %"),
    "ru": ("10 %", "9,10×" + span("8,60", "9,70"), "0,800" + span("0,740", "0,870"), "25 %"),
}
FASTER = {"en": "14.0×" + span("13.1", "14.9"), "es": "14,0×" + span("13,1", "14,9")}


@pytest.mark.parametrize("lang", LANGS)
def test_short_answer_names_the_fastest_stack_within_each_budget(
    ctx: context.Context, lang: str
) -> None:
    answer = _section(stacking.stacking_page(lang, ctx), "answer")
    first, second = [line for line in answer.splitlines() if line.startswith("- ")]
    tight, speed, ratio, loose = SHORT_ANSWER[lang]
    faster = FASTER.get(lang, FASTER["es"])
    best = _names(lang, ["compile", "forecast", "solver"], ctx)
    assert tight in first and f"[{best}](#stack-compile-forecast-solver)" in first
    assert speed in first and ratio in first
    student = _names(lang, ["student", "compile"], ctx)
    assert loose in second and f"[{student}](#stack-student-compile)" in second
    assert faster in second
    if lang != "en":
        assert "9.1" not in answer and "0.8" not in answer


def test_short_answer_says_when_no_stack_is_within_the_budget(
    ctx: context.Context, result: dict[str, Any]
) -> None:
    tight = copy.deepcopy(result)
    tight["settings"]["budgets"] = [0.5]
    ctx.results.composites["stacking"] = tight
    answer = _section(stacking.stacking_page("ru", ctx), "answer")
    expected = ResultText("stacking", "ru").message(
        "stacking.answer-none", {"budget": 0.5, "percent": -50.0}
    )
    assert f"- {expected}" in answer and "#stack-" not in answer


@pytest.mark.parametrize("lang", LANGS)
def test_table_has_an_anchored_row_per_stack_fastest_first(ctx: context.Context, lang: str) -> None:
    table = _section(stacking.stacking_page(lang, ctx), "stacks")
    ids = re.findall(r'<tr id="([^"]+)">', table)
    assert ids == [stackdata.anchor(s) for s in STACKS]
    head = re.findall(r'<th scope="col" data-sort-type="(\w+)"', table)
    assert head == ["text", "number", "number", "number", "text", "number"]
    row = next(r for r in table.splitlines() if 'id="stack-compile-forecast"' in r)
    assert 'data-verdict="inconclusive"' in row  # its beats-control aim is inconclusive
    assert table.count('data-verdict="yes"') == 5
    decimal = "," if lang != "en" else "."
    assert f"1{decimal}03" in row  # interaction 1.026, two decimals


def test_members_link_to_their_term_pages_except_torch_compile(ctx: context.Context) -> None:
    table = _section(stacking.stacking_page("en", ctx), "stacks")
    row = next(r for r in table.splitlines() if 'id="stack-compile-forecast-solver"' in r)
    first = row.split("</td>")[0]
    assert '<a href="../terms/accelerate-method/">' in first
    assert '<a href="../terms/scheduler-tradeoff/">' in first
    compile_name = html.escape(
        stackdata.name(stacking.study_text("en", ctx), "compile"), quote=True
    )
    assert compile_name in first and "torch-compile" not in first
    assert "terms/torch-compile" not in stacking.stacking_page("es", ctx)


@pytest.mark.parametrize("lang", LANGS)
def test_compatibility_matrix_marks_each_incompatible_pair(ctx: context.Context, lang: str) -> None:
    matrix = _section(stacking.stacking_page(lang, ctx), "compatibility")
    assert "<table data-matrix>" in matrix
    rows = [line for line in matrix.splitlines() if line.startswith('<tr><th scope="row">')]
    assert len(rows) == 4 and rows[2].startswith(
        f'<tr><th scope="row">3 {_names(lang, ["compile"])}'
    )
    cells = [re.findall(r"<td>([^<]*)</td>", line) for line in rows]
    assert cells[0] == ["—", "✓", "✓", "✗ a"] and cells[3][0] == "✗ a"
    assert sum(c.count("✓") for c in cells) == 10
    reason = ResultText("stacking", lang).message("reason.own-grid")
    assert f"- **a**: {reason}" in matrix.replace("\\", "")


def test_details_show_provenance_aims_and_notes(ctx: context.Context) -> None:
    details = _section(stacking.stacking_page("es", ctx), "measurement")
    assert "`0123456789ab`" in details and "Fixture CPU" in details
    assert "`.venv/bin/glossary bench stacking`" in details
    assert "interaction=" not in details  # matrices are shown as charts, not as settings
    assert details.count("| ✓ ") == 2  # within-budget and beats-best-single, not per stack


def test_compare_page_links_the_stacking_page(ctx: context.Context) -> None:
    from glossary.site.compare import compare_page

    page = compare_page("ru", ctx)
    title = ResultText("results", "ru").message("stacking.title")
    assert f"[{title}](stacking.md)" in page


# --------------------------------------------------------------------------- term pages


@pytest.mark.parametrize("lang", LANGS)
def test_term_pages_list_their_stacks_and_link_to_existing_anchors(
    ctx: context.Context, result: dict[str, Any], lang: str
) -> None:
    anchors = set(re.findall(r'<tr id="([^"]+)">', stacking.stacking_page(lang, ctx)))
    title = ResultText("stacking", lang).message("site.stacks-title")
    linked = 0
    for slug in result["settings"]["element_slugs"]:
        entry = ctx.glossary.get(slug)
        if entry is None:
            assert slug in stackdata.NO_TERM_PAGE
            continue
        page = terms.term_page(entry, lang, ctx)
        assert f"## {title} {{#stacks data-search-exclude}}" in page
        section = _section(page, "stacks")
        targets = re.findall(r"\]\(\.\./stacking\.md#([a-z0-9-]+)\)", section)
        assert targets and set(targets) - {"stacks"} <= anchors
        element = stackdata.element_of(result, slug)
        mine = {stackdata.anchor(s) for s in STACKS if element in s.split(".")}
        assert set(targets) - {"stacks"} == mine
        linked += 1
    assert linked == 3
    other = terms.term_page(ctx.glossary["feature-caching"], lang, ctx)
    assert "{#stacks" not in other  # not an element of the fixture study


def test_term_page_stacks_are_fastest_first_in_the_page_digits(ctx: context.Context) -> None:
    section = _section(terms.term_page(ctx.glossary["accelerate-method"], "ru", ctx), "stacks")
    speeds = re.findall(r"\): ([\d,]+)×", section)
    assert speeds == ["16,0", "9,10", "7,30", "2,40"]  # three significant figures


# ------------------------------------------------------------------------------ absent


@pytest.mark.parametrize("lang", LANGS)
def test_without_a_result_the_page_says_not_measured(absent: context.Context, lang: str) -> None:
    page = stacking.stacking_page(lang, absent)
    message = ResultText("stacking", lang).message(
        "stacking.not-measured", {"command": stacking.COMMAND}
    )
    assert message in page and "<table" not in page and "{#answer}" not in page
    entry = absent.glossary["accelerate-method"]
    assert "{#stacks" not in terms.term_page(entry, lang, absent)


def test_without_a_result_generation_writes_the_page_and_no_chart(
    tmp_path: Path, fixture_path: None
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    for path in RESULTS.glob("feature-caching*"):
        shutil.copy2(path, folder)
    docs = tmp_path / "docs"
    report = generate.generate(docs, entries_dir=site_support.FIXTURES / "entries", results=folder)
    assert report.problems == []
    for lang in LANGS:
        assert (docs / lang / "stacking.md").is_file()
        assert not list((docs / "assets" / "results" / lang).glob("stacking-*.svg"))


# ------------------------------------------------------------------------------- charts


def _svg(chart: plots.Chart) -> str:
    return chart.rendered().svg.decode("utf-8")


def _texts(svg: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("which", ["pareto", "interaction"])
def test_charts_are_valid_svg_legible_on_a_phone(
    result: dict[str, Any], lang: str, which: str
) -> None:
    chart = getattr(stackplots, f"{which}_chart")(result, lang)
    assert chart is not None
    svg = _svg(chart)
    root = ET.fromstring(svg.split("\n", 1)[1] if svg.startswith("<?xml") else svg)
    assert root.tag.endswith("svg")
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg)[1])
    view_width = float(re.search(r'viewBox="0 0 ([\d.]+) [\d.]+"', svg)[1])
    assert width_pt == pytest.approx(4.3 * 72) and view_width == pytest.approx(width_pt)
    sizes = [float(s) for s in re.findall(r"font-size: ([\d.]+)px", svg)]
    assert len(sizes) >= 10 and min(sizes) >= 9
    assert min(sizes) * PHONE_WIDTH_PX / view_width >= 10
    assert chart.caption and chart.alt and chart.caption != chart.alt


@pytest.mark.parametrize(("lang", "tick", "cell"), [("en", "1.1)", "0.77"), ("es", "1,1)", "0,77")])
def test_charts_use_the_page_digits(
    result: dict[str, Any], lang: str, tick: str, cell: str
) -> None:
    pareto = _texts(_svg(stackplots.pareto_chart(result, lang)))  # type: ignore[arg-type]
    assert any(t.endswith(tick) for t in pareto)  # the budget in the legend, in the page's digits
    assert {"4", "6", "7"} <= set(pareto)  # the frontier's numbers
    assert {"1×", "10×"} <= set(pareto)  # the speedup axis: right is faster
    heat = _texts(_svg(stackplots.interaction_chart(result, lang)))  # type: ignore[arg-type]
    assert cell in heat and heat.count("✗") == 2  # the two incompatible cells
    assert any(t.startswith("✗ ") for t in heat)  # and the key
    own = "4,8×" if lang == "es" else "4.8×"
    assert own in heat  # the diagonal: the technique's own speedup


def test_pareto_caption_names_the_numbered_frontier(result: dict[str, Any]) -> None:
    chart = stackplots.pareto_chart(result, "en")
    assert chart is not None
    front = stackplots.frontier(result, stackplots.pareto_points(result))
    assert [p.key for p in front] == result["settings"]["pareto"]
    assert f"7: {_names('en', ['solver'])}" in chart.caption


def test_chart_keys_follow_the_stacking_code_and_data(result: dict[str, Any]) -> None:
    assert {"stackplots.py", "stackdata.py"} <= set(plots._CODE)
    chart = stackplots.interaction_chart(result, "es")
    changed = copy.deepcopy(result)
    changed["settings"]["interaction"][0][1] = 0.5
    other = stackplots.interaction_chart(changed, "es")
    assert chart is not None and other is not None and chart.key != other.key
    assert chart.rendered().svg == chart.rendered().svg  # deterministic


def test_levels_are_the_compatibility_modules_order() -> None:
    compatibility = pytest.importorskip("reference.compatibility")
    assert tuple(lv for lv in compatibility.LEVELS if lv != "runtime") == stacking.LEVELS


# ------------------------------------------------------------------------ the built site


@pytest.mark.site
@pytest.mark.xdist_group("site")
@pytest.mark.parametrize("lang", site_support.LANGS)
def test_built_stacking_page_has_charts_table_and_navigation(
    built: site_support.BuiltSite, lang: str
) -> None:
    page = built.html(lang, "stacking")
    assert page.count('<figure class="gl-figure">') == 2
    assert len(re.findall(r'<tr id="stack-[a-z0-9-]+">', page)) == len(STACKS)
    assert 'href="#stack-compile-forecast-solver"' in page
    home = built.html(lang, "")
    assert re.search(r'href="[^"]*stacking/"', home)
    term = built.html(lang, "terms/accelerate-method")
    assert 'href="../../stacking/#stack-forecast-solver"' in term


@pytest.mark.parametrize("lang", LANGS)
def test_a_row_with_inherited_quality_names_the_row_it_inherits_from(
    ctx: context.Context, lang: str
) -> None:
    table = _section(stacking.stacking_page(lang, ctx), "stacks")
    rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr id="([^"]+)">.*', table)}
    text = ResultText("stacking", lang)
    said = text.message("stacking.inherited", {"parent": _names(lang, ["solver"], ctx)})
    assert html.escape(said, quote=True) in rows["stack-compile-solver"]
    prefix = text.message("stacking.inherited", {"parent": "\x00"}).split("\x00")[0]
    assert html.escape(prefix, quote=True) not in rows["stack-forecast-solver"]


# ----------------------------------------------------------------------- one name each


def _allowed(entry: Any, lang: str) -> set[str]:
    text = entry.text(lang)
    return {text.term, *text.aliases}


def _named(shown: str, entry: Any, lang: str) -> bool:
    """Whether ``shown`` names ``entry`` by its term or an alias, with at most the specific
    method after it in parentheses ("Método del Acelerador (predicción de pasos)")."""
    shown = html.unescape(re.sub(r"<[^>]+>", "", shown)).replace("\\", "").strip()
    term = entry.term(lang)
    return shown in _allowed(entry, lang) or (shown.startswith(f"{term} (") and shown[-1] == ")")


@pytest.fixture(params=["fixture", "committed"])
def any_results(request: pytest.FixtureRequest, glossary: Any) -> context.Context:
    """The pages over the fixture results, then over the committed ones (reference/results):
    the names must hold for what the site really shows, not only for the fixtures."""
    folder = RESULTS if request.param == "fixture" else site_support.REPO / "reference" / "results"
    return _context(glossary, folder)


@pytest.mark.parametrize("lang", LANGS)
def test_every_technique_is_named_by_its_entry_on_the_generated_pages(
    any_results: context.Context, lang: str
) -> None:
    from glossary.site import compare, guide

    ctx = any_results

    pages = {
        "compare": compare.compare_page(lang, ctx),
        "stacking": stacking.stacking_page(lang, ctx),
        "guide": guide.guide_page(lang, ctx),
    }
    checked = 0
    for name, page in pages.items():
        links = re.findall(r"\[([^\]]+)\]\((?:\.\./)?terms/([a-z0-9-]+)\.md\)", page)
        links += [
            (shown, slug)
            for slug, shown in re.findall(r'<a href="[./]*terms/([a-z0-9-]+)/">(.*?)</a>', page)
        ]
        for shown, slug in links:
            entry = ctx.glossary[slug]
            if entry.is_technique:
                assert _named(shown, entry, lang), (name, slug, shown)
                checked += 1
    assert checked >= 10
    result = stacking.composite(ctx)
    assert result is not None
    words = stacking.study_text(lang, ctx)
    for element in stackdata.elements(result):
        slug = stackdata.element_slug(result, element)
        entry = ctx.glossary.get(slug) if slug else None
        shown = stackdata.name(words, element)
        if entry is not None:  # the charts' keys and captions use the same names
            assert shown.startswith(entry.term(lang)) and _named(shown, entry, lang), shown
    for point in compare.chart_points(lang, ctx):
        assert point.label == ctx.glossary[point.key].term(lang)


def test_a_name_that_is_not_the_entry_s_fails_the_check(ctx: context.Context) -> None:
    entry = ctx.glossary["accelerate-method"]
    assert _named("Método del Acelerador (predicción de pasos)", entry, "es")
    assert not _named("predicción de pasos (Método del Acelerador)", entry, "es")
    assert not _named("Acelerador", entry, "es")
