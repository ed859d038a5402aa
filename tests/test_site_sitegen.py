"""Unit tests of the page generator (glossary.site) on fixture entries, without MkDocs."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from glossary.collation import sort_key
from glossary.loader import load_glossary
from glossary.resulttext import ResultText
from glossary.schema import CATEGORIES, LANGS
from glossary.site import (
    compare,
    context,
    downloads,
    generate,
    indexes,
    markdown,
    plotdata,
    plots,
    results,
    terms,
    urls,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "site"
ENTRIES = FIXTURES / "entries"
RESULTS = FIXTURES / "results"


@pytest.fixture
def fixture_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the fixture reference module importable (the loader checks implemented modules)."""
    monkeypatch.syspath_prepend(str(FIXTURES))


@pytest.fixture
def ctx(fixture_path: None) -> context.Context:
    return context.Context(
        glossary=load_glossary(ENTRIES),
        results=results.load_results(RESULTS),
        module_exists=lambda module: module == "site_fixture_technique",
    )


@pytest.fixture
def docs(tmp_path: Path, fixture_path: None) -> Path:
    out = tmp_path / "docs"
    generate.generate(out, entries_dir=ENTRIES, results=RESULTS)
    return out


# ------------------------------------------------------------------------------- escaping


@given(st.text(max_size=80))
def test_escape_text_never_leaves_markup(text: str) -> None:
    escaped = markdown.escape_text(text)
    assert "<" not in escaped and ">" not in escaped
    assert "\n" not in escaped
    assert not re.search(r"&(?!amp;|lt;|gt;)", escaped)


@given(st.text(alphabet=st.sampled_from("<>&{}[]()`*_ abc/\n:jJ\tscript="), max_size=60))
def test_escape_markdown_leaves_no_tag_start_outside_code(text: str) -> None:
    escaped = markdown.escape_markdown(text)
    outside = re.sub(r"(`+)(?!`).+?(?<!`)\1(?!`)", "", escaped)  # drop code spans
    fenced = re.sub(r"^(```|~~~).*?^\1", "", outside, flags=re.S | re.M)
    assert "<" not in fenced.replace("<https://", "")
    assert "{" not in fenced


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a <b>bold</b>", "a &lt;b&gt;bold&lt;/b&gt;"),
        ("keep `x < y` code", "keep `x < y` code"),
        ("> quoted <i>", "> quoted &lt;i&gt;"),
        ("[ok](https://example.org)", "[ok](https://example.org)"),
        ("[bad](javascript:alert(1))", "[bad]&#40;javascript:alert(1))"),
        ("[bad](java\tscript:alert(1))", "[bad]&#40;java\tscript:alert(1))"),
        ("[rel](other.md#x)", "[rel](other.md#x)"),
        ("para{: onclick=x }", "para&#123;: onclick=x }"),
        ("&lt;script&gt;", "&amp;lt;script&amp;gt;"),
        ("AT&T", "AT&T"),
        ("<https://example.org/a>", "<https://example.org/a>"),
        ("```python {onclick=x}\n<b>\n```", "```python\n<b>\n```"),
    ],
)
def test_escape_markdown_cases(source: str, expected: str) -> None:
    assert markdown.escape_markdown(source) == expected


def test_unsafe_reference_definition_is_neutralised() -> None:
    out = markdown.escape_markdown("[ref]: javascript:alert(1)\n[ok]: https://example.org")
    assert out.splitlines() == ["&#91;ref]: javascript:alert(1)", "[ok]: https://example.org"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.org/a b", "https://example.org/a%20b"),
        ('https://x.org/")<script>', "https://x.org/%22%29%3Cscript%3E"),
        ("javascript:alert(1)", None),
        ("ftp://example.org", None),
    ],
)
def test_safe_url(url: str, expected: str | None) -> None:
    assert markdown.safe_url(url) == expected


# ---------------------------------------------------------------------------------- links


def test_cross_language_href_is_relative_to_the_page() -> None:
    assert urls.cross_language_href("terms/x", "en", "es", True) == "../../es/terms/x/"
    assert urls.cross_language_href("terms/x", "es", "en", True) == "../../../terms/x/"
    assert urls.cross_language_href("terms/x", "es", "ru", True) == "../../../ru/terms/x/"
    assert urls.cross_language_href("terms/x", "ru", "es", False) == "../../es/terms/x.html"


# ---------------------------------------------------------------------------------- pages


def test_generate_writes_every_page_in_every_language(docs: Path) -> None:
    glossary = load_glossary(ENTRIES)
    for lang in LANGS:
        for entry in glossary:
            assert (docs / lang / "terms" / f"{entry.slug}.md").is_file()
        for category in CATEGORIES:
            assert (docs / lang / "categories" / f"{category}.md").is_file()
        for name in ("index-a-z.md", "compare.md", "stacking.md", "categories/index.md"):
            assert (docs / lang / name).is_file()
    assert (docs / "assets" / "results" / "feature-caching.png").is_file()


def test_generate_rewrites_nothing_when_nothing_changed(docs: Path) -> None:
    page = docs / "es" / "terms" / "pruning.md"
    before = page.stat().st_mtime_ns
    report = generate.generate(docs, entries_dir=ENTRIES, results=RESULTS)
    assert report.written == [] and report.removed == []
    assert report.unchanged > 0
    assert page.stat().st_mtime_ns == before


def test_generate_removes_pages_of_deleted_entries(docs: Path, tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(ENTRIES, entries)
    (entries / "xss-probe.yaml").unlink()
    text = (entries / "ddim.yaml").read_text(encoding="utf-8")
    (entries / "ddim.yaml").write_text(text, encoding="utf-8")
    fc = (entries / "feature-caching.yaml").read_text(encoding="utf-8")
    (entries / "feature-caching.yaml").write_text(
        fc.replace("related: [ddim, xss-probe]", "related: [ddim]").replace(
            "one_way: [xss-probe]\n", ""
        ),
        encoding="utf-8",
    )
    folder = tmp_path / "results"
    folder.mkdir()
    shutil.copy2(RESULTS / "feature-caching.json", folder)
    shutil.copy2(RESULTS / "feature-caching.png", folder)
    report = generate.generate(docs, entries_dir=entries, results=folder)
    assert docs / "en" / "terms" / "xss-probe.md" in report.removed
    assert not (docs / "ru" / "terms" / "xss-probe.md").exists()


def test_term_page_has_every_section_with_explicit_ids(ctx: context.Context) -> None:
    page = terms.term_page(ctx.glossary["feature-caching"], "ru", ctx)
    for anchor in ("definition", "explanation", "run-it", "benchmark", "sources", "related"):
        assert re.search(rf"^## .+ \{{#{anchor}( data-search-exclude)?\}}$", page, re.M), anchor
    assert "```sh\n.venv/bin/python -m reference.feature_caching\n```" in page
    assert "arXiv: [2312.00858](https://arxiv.org/abs/2312.00858)" in page
    assert "[`diffusers.hooks.apply_first_block_cache`](https://" in page
    assert "(ddim.md)" in page and "../../../terms/feature-caching/" in page


def test_benchmark_section_uses_locale_numbers_units_and_roles(ctx: context.Context) -> None:
    es = terms.term_page(ctx.glossary["feature-caching"], "es", ctx)
    assert "Latencia (ms)" in es and "Latency" not in es
    assert "DeepCache N=3 (rama 1), 50 pasos" in es and "referencia base" in es
    assert "1,71" in es and "2,14" in es and "812,4 ± 12" in es and "[1,62–1,79]" in es
    assert "cota analítica" in es and "no cumplido" in es
    assert "../../assets/results/feature-caching.png" in es
    assert "0123456789ab" in es and ".venv/bin/glossary bench feature-caching" in es
    ru = terms.term_page(ctx.glossary["feature-caching"], "ru", ctx)
    assert "Задержка (мс)" in ru and "базовая линия" in ru and "812,4 ± 12" in ru
    en = terms.term_page(ctx.glossary["feature-caching"], "en", ctx)
    assert "1.71" in en and "1,71" not in en and "Latency (ms)" in en


def test_technique_without_results_says_so_and_invents_nothing(ctx: context.Context) -> None:
    page = terms.term_page(ctx.glossary["xss-probe"], "en", ctx)  # implemented, no result file
    benchmark = page.split("{#benchmark}")[1].split("\n## ")[0]
    assert "No results yet" in benchmark
    assert not re.search(r"\d", benchmark)


def test_api_only_for_implemented_existing_modules(ctx: context.Context) -> None:
    """The API reference is a page of its own, linked from the term page; a planned module has
    neither."""
    page = terms.term_page(ctx.glossary["xss-probe"], "en", ctx)
    assert ":::" not in page and "(../api/xss-probe.md)" in page
    assert "::: site_fixture_technique" in (
        terms.api_page(ctx.glossary["xss-probe"], "es", ctx) or ""
    )
    planned = terms.term_page(ctx.glossary["pruning"], "es", ctx)
    assert ":::" not in planned and "../api/" not in planned
    assert "`reference.pruning`" in planned
    assert terms.api_page(ctx.glossary["pruning"], "es", ctx) is None


def test_concept_page_has_no_run_or_benchmark(ctx: context.Context) -> None:
    page = terms.term_page(ctx.glossary["ddim"], "en", ctx)
    assert "{#run-it}" not in page and "{#benchmark}" not in page and ":::" not in page


@pytest.mark.parametrize("lang", LANGS)
def test_a_z_index_buckets_and_collation(ctx: context.Context, lang: str) -> None:
    page = indexes.az_page(lang, ctx)
    letters = re.findall(r"^## (\S+) \{#", page, re.M)
    assert len(letters) == len(set(letters))
    for section in page.split("\n## ")[1:]:
        names = re.findall(r"^- \*?\[?([^\]*]+)", section, re.M)
        assert names == sorted(names, key=sort_key(lang))
    if lang == "es":  # Ñ is a letter of its own, after N
        assert letters.index("Ñ") == letters.index("M") + 1
    if lang == "ru":  # Ё files under Е
        assert "Ё" not in letters and "Ёмкий DDIM" in page.split("## Е ")[1].split("\n## ")[0]


def _compare_row(page: str, slug: str) -> list[str]:
    row = next(line for line in page.splitlines() if f'href="../terms/{slug}/"' in line)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    return [
        " ".join(re.sub(r"<br>", " · ", re.sub(r"<(?!br>)[^>]+>", " ", c)).split()) for c in cells
    ]


def test_compare_page_lists_results_and_missing_techniques(ctx: context.Context) -> None:
    page = compare.compare_page("ru", ctx)
    cells = _compare_row(page, "feature-caching")
    assert cells[2] == "1,71× · [1,62–1,79]" and cells[3] == "2,14× · аналитическая граница"
    assert cells[4] == "1,08" and cells[5] == "1 достигнута · 1 не достигнута"
    assert "контроль измерен" in cells[6]  # a control row, but no aim compares with it
    assert "terms/pruning.md" not in page.split("\n\n")[-1]  # pruning has a result file
    assert "terms/xss-probe.md" in page.split("\n\n")[-1]


def test_compare_table_has_its_columns_and_sort_keys(ctx: context.Context) -> None:
    page = compare.compare_page("es", ctx)
    head = re.search(r"<thead>(.*?)</thead>", page).group(1)
    columns = re.findall(r'<th scope="col" data-sort-type="(\w+)"[^>]*>([^<]+)</th>', head)
    assert [label for _kind, label in columns] == [
        "Técnica",
        "Categoría",
        "Aceleración [intervalo del 95 %]",
        "Límite",
        "Cociente de calidad",
        "Objetivos",
        "Supera a su control de coste igualado",
        "Aviso",
    ]
    assert [kind for kind, _label in columns] == ["text", "text"] + ["number"] * 6
    assert head.count('aria-sort="ascending"') == 1  # the initial order: by technique
    row = next(line for line in page.splitlines() if 'href="../terms/feature-caching/"' in line)
    sort_keys = re.findall(r'<td data-sort="([^"]*)"', row)
    assert sort_keys[:5] == ["Caché de Características", "Muestreo", "1.71", "2.14", "1.08"]
    assert "<table data-sortable>" in page and "Cómo leerla" in page


def test_category_page_links_its_entries(ctx: context.Context) -> None:
    page = indexes.category_page("sampling", "es", ctx)
    assert page.startswith("# Muestreo")
    assert "(../terms/feature-caching.md)" in page and "(../terms/ddim.md)" in page
    assert "pruning" not in page


def test_invalid_result_stops_generation_with_the_file_name(tmp_path: Path) -> None:
    bad = tmp_path / "feature-caching.json"
    bad.write_text('{"schema_version": 1', encoding="utf-8")
    with pytest.raises(results.SiteGenError, match=r"feature-caching\.json"):
        results.load_results(tmp_path)
    data = json.loads((RESULTS / "feature-caching.json").read_text(encoding="utf-8"))
    data["figures"] = [{"file": "../../etc/passwd.png", "caption": "speed-and-quality"}]
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(results.SiteGenError, match="figures"):
        results.load_results(tmp_path)


def test_missing_results_directory_means_no_results(tmp_path: Path) -> None:
    assert results.load_results(tmp_path / "absent").by_slug == {}


def test_results_dir_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(results.RESULTS_ENV, str(tmp_path))
    assert results.results_dir() == tmp_path.resolve()
    monkeypatch.delenv(results.RESULTS_ENV)
    assert results.results_dir() == results.DEFAULT_RESULTS_DIR


def test_labels_are_visible_to_the_message_extractor() -> None:
    # Babel's Python extractor does not look inside f-strings: a _() there is never translated.
    for path in sorted(Path(generate.__file__).parent.glob("*.py")):
        assert "{_(" not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize("lang", ["es", "ru"])
def test_generated_headings_are_translated(ctx: context.Context, lang: str) -> None:
    entry = ctx.glossary["xss-probe"]
    english = re.findall(r"^#+ (.+) \{#", terms.term_page(entry, "en", ctx), re.M)
    local = re.findall(r"^#+ (.+) \{#", terms.term_page(entry, lang, ctx), re.M)
    assert len(english) == len(local) >= 8
    assert [pair for pair in zip(english, local, strict=True) if pair[0] == pair[1]] == []
    assert "Accuracy note" not in terms.term_page(entry, lang, ctx)


def test_result_without_headline_and_zero_target(ctx: context.Context) -> None:
    result = json.loads((RESULTS / "feature-caching.json").read_text(encoding="utf-8"))
    result["headline"] = None
    result["anomalies"] = []
    result["aims"] = [
        {
            "id": "quality",
            "params": {"interval_n": 3},
            "comparison": "<=",
            "target": 0,
            "measured": 0,
            "interval": None,
            "state": "met",
        }
    ]
    ctx.results.by_slug["feature-caching"] = result
    page = terms.term_page(ctx.glossary["feature-caching"], "en", ctx)
    assert (
        "DeepCache N=3 keeps FDD within 0.00× of plain DDIM (paired ratio over seeds)"
        " | 0 | ≤ 0 | ✓ met |" in page
    )
    cells = _compare_row(compare.compare_page("en", ctx), "feature-caching")
    assert cells[2:5] == ["—", "—", "—"] and cells[5] == "1 met" and cells[7] == "—"


def test_downloads_are_built_with_the_site_in_every_language(docs: Path) -> None:
    import jsonschema

    folder = docs / downloads.DOWNLOADS_DIR
    assert sorted(p.name for p in folder.iterdir()) == sorted(d.file for d in downloads.DOWNLOADS)
    schema = json.loads((folder / "glossary.schema.json").read_text(encoding="utf-8"))
    export = json.loads((folder / "glossary.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(export)
    pages = {lang: (docs / lang / "downloads.md").read_text(encoding="utf-8") for lang in LANGS}
    for page in pages.values():
        for d in downloads.DOWNLOADS:
            assert f"(../assets/downloads/{d.file})" in page
    assert pages["es"].startswith("# Descargas") and "KiB" in pages["es"]
    assert pages["ru"].startswith("# Загрузки") and "глоссарий" in pages["ru"]
    assert "--format tbx2 -o glossary-tbx2.tbx" in pages["en"]


def test_the_json_export_of_the_real_glossary_follows_its_schema() -> None:
    import jsonschema

    from glossary.export import export_text

    schema = json.loads(downloads.SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(
        json.loads(export_text(load_glossary(), "json"))
    )


# ------------------------------------------------------------------------ compare verdicts


def _result(rows: list[tuple[str, str]], aims: list[tuple[str, str, str]]) -> dict[str, Any]:
    """A result reduced to what the verdicts read: rows (id, role) and aims (id, state, the row
    it compares with)."""
    fixture = json.loads((RESULTS / "feature-caching.json").read_text(encoding="utf-8"))
    fixture["rows"] = [
        {"id": i, "role": r, "config": {"method": "x"}, "values": {}} for i, r in rows
    ]
    fixture["aims"] = [{"id": i, "state": s, "row": "fast", "against": a} for i, s, a in aims]
    return fixture


@pytest.mark.parametrize(
    ("aims", "verdict"),
    [
        ([("quality-vs-control", "met", "cheap")], "yes"),
        ([("beats-scratch", "missed", "cheap")], "no"),
        ([("any-name", "inconclusive", "cheap")], "inconclusive"),
        ([("q", "met", "cheap"), ("speed", "missed", "cheap")], "inconclusive"),
        ([("speedup", "met", "base"), ("quality", "missed", "base")], "unjudged"),
        ([("beats-control", "met", None)], "unjudged"),  # the id alone says nothing
    ],
)
def test_beats_control_follows_the_aims_against_a_control_row(
    aims: list[tuple[str, str, str]], verdict: str
) -> None:
    rows = [("base", "baseline"), ("fast", "technique"), ("cheap", "control")]
    assert compare.beats_control(_result(rows, aims)) == verdict


def test_beats_control_says_no_control_when_none_was_measured() -> None:
    rows = [("base", "baseline"), ("fast", "technique"), ("other", "reference")]
    assert compare.beats_control(_result(rows, [("beats-control", "met", "other")])) == "none"


def test_flags_tell_an_anomaly_from_a_speedup_above_an_estimate() -> None:
    result = json.loads((RESULTS / "feature-caching.json").read_text(encoding="utf-8"))
    assert compare.flag(result) is None  # 1.71 under its bound of 2.14
    result["anomalies"] = [{"id": "speedup-above-limit", "params": {}}]
    assert compare.flag(result) == "anomaly"
    result["anomalies"] = []
    result["headline"] |= {"speedup_limit": 1.5, "limit_kind": "estimate"}
    assert compare.flag(result) == "above-estimate"


# ---------------------------------------------------------------------------------- charts


@pytest.fixture(scope="module")
def fixture_result() -> dict[str, Any]:
    return json.loads((RESULTS / "feature-caching.json").read_text(encoding="utf-8"))


def test_chart_points_are_ratios_to_the_baseline(fixture_result: dict[str, Any]) -> None:
    points = plotdata.row_points(fixture_result, {"base": "B", "dc3": "T", "ddim19": "C"})
    by_key = {p.key: p for p in points}
    assert by_key["base"].quality == 1.0 and by_key["dc3"].headline
    assert by_key["dc3"].quality == pytest.approx(3.467 / 3.21)
    assert by_key["dc3"].speedup_interval == (1.62, 1.79)
    assert by_key["ddim19"].quality_interval is None  # not measured: not drawn
    assert plotdata.chart_kind(points) == "scatter"
    assert plotdata.result_limit(fixture_result) == plotdata.Limit(2.14, "bound")


@pytest.mark.parametrize(
    ("lang", "axis", "other", "tick"),
    [
        ("es", "Aceleración sobre la referencia base (×)", "Speedup over the baseline", "1,5×"),
        ("ru", "Ускорение относительно базовой линии (×)", "Speedup over the baseline", "1,5×"),
        ("en", "Speedup over the baseline (×)", "Aceleración", "1.5×"),
    ],
)
def test_chart_speaks_the_page_language(
    fixture_result: dict[str, Any], lang: str, axis: str, other: str, tick: str
) -> None:
    chart = plots.result_chart(fixture_result, lang)
    assert chart is not None
    svg = chart.rendered().svg.decode("utf-8")
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    words = " ".join(texts)
    assert axis in texts and other not in words
    assert tick in texts
    assert ResultText("feature-caching", lang).role("control") in texts  # the legend
    assert chart.caption.startswith(
        ResultText("results", lang).message("plot.caption-scatter", {"metric": "", "better": ""})[
            :12
        ]
    )
    assert ("2.14" if lang == "en" else "2,14") in chart.caption


PHONE_WIDTH_PX = 358  # a 390 px phone less Material's 16 px margins


@pytest.mark.parametrize("lang", ["en", "es", "ru"])
def test_chart_text_is_legible_on_a_phone(fixture_result: dict[str, Any], lang: str) -> None:
    """Shown 358 px wide (a 390 px phone), every text of the chart is at least 10 px tall: the
    SVG's font sizes are in its viewBox units, scaled by 358 / the viewBox width."""
    chart = plots.result_chart(fixture_result, lang)
    assert chart is not None
    svg = chart.rendered().svg.decode("utf-8")
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg)[1])
    view_width = float(re.search(r'viewBox="0 0 ([\d.]+) [\d.]+"', svg)[1])
    assert view_width == pytest.approx(width_pt)
    assert width_pt * 4 / 3 <= 720  # never wider than the content column
    sizes = [float(s) for s in re.findall(r"font-size: ([\d.]+)px", svg)]
    assert len(sizes) >= 10
    smallest = min(sizes) * PHONE_WIDTH_PX / view_width
    assert smallest >= 10, f"{min(sizes)} units in a {view_width} wide viewBox: {smallest:.1f} px"


def test_chart_is_deterministic_and_reused_when_unchanged(fixture_result: dict[str, Any]) -> None:
    chart = plots.result_chart(fixture_result, "es")
    assert chart is not None
    first, second = chart.rendered().svg, chart.rendered().svg
    assert first == second
    assert b"<dc:date>" not in first and first.startswith(b"<?xml")
    assert chart.rendered(first).svg is first  # the same inputs: not drawn again
    changed = json.loads(json.dumps(fixture_result))
    changed["rows"][1]["values"]["speedup"] = 1.75
    other = plots.result_chart(changed, "es")
    assert other is not None and other.key != chart.key
    assert other.rendered(first).svg != first


def test_generated_pages_embed_a_chart_per_language(docs: Path) -> None:
    for lang in LANGS:
        folder = docs / "assets" / "results" / lang
        assert sorted(p.name for p in folder.iterdir()) == [
            "compare-quality.svg",
            "compare-speedup.svg",
            "feature-caching.svg",
            "pruning.svg",
            "stacking-interaction.svg",
            "stacking-pareto.svg",
        ]
        page = (docs / lang / "terms" / "feature-caching.md").read_text(encoding="utf-8")
        prefix = "../../" if lang == "en" else "../../../"
        src = f'src="{prefix}assets/results/{lang}/feature-caching.svg"'
        figure = page.split('<figure class="gl-figure">')[1].split("</figure>")[0]
        assert src in figure and 'width="' in figure and "<figcaption>" in figure
        alt = re.search(r'alt="([^"]+)"', figure).group(1)
        assert (
            str(ResultText("results", lang).message("plot.alt-scatter", {"n": 3, "metric": ""}))[
                :10
            ]
            in alt
        )
        compare_page = (docs / lang / "compare.md").read_text(encoding="utf-8")
        assert f"assets/results/{lang}/compare-quality.svg" in compare_page
        assert f"assets/results/{lang}/compare-speedup.svg" in compare_page


def test_committed_figures_get_their_caption_and_a_descriptive_alt(docs: Path) -> None:
    page = (docs / "ru" / "terms" / "feature-caching.md").read_text(encoding="utf-8")
    figure = page.split('src="../../../assets/results/feature-caching.png"')[0].rsplit(
        "<figure", 1
    )[1]
    text = ResultText("feature-caching", "ru")
    assert f'alt="{text.message("site.alt-chart")}"' in figure
    caption = page.split('feature-caching.png"')[1].split("</figcaption>")[0]
    assert text.caption({"caption": "speed-and-quality"})[:30] in html.unescape(caption)
