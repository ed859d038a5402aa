"""Unit tests of the page generator (glossary.site) on fixture entries, without MkDocs."""

from __future__ import annotations

import html
import html.parser
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


_SAFE_TAGS = {"p", "code", "pre", "em", "strong", "a", "blockquote", "ul", "ol", "li", "hr", "br"}
_SAFE_TAGS |= {"h1", "h2", "h3", "h4", "h5", "h6", "div", "span"}
_SAFE_ATTRS = {"a": {"href"}, "div": {"class"}, "span": {"class"}, "code": {"class"}}
_SAFE_ATTRS["pre"] = {"class"}
"""Classes only where the highlighter puts them (code and its token spans); an attribute list
could only add one to a paragraph, a heading or a list item, which may carry none."""


class _Markup(html.parser.HTMLParser):
    """Every element and attribute a rendering holds."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


@given(st.text(alphabet=st.sampled_from("<>&{}[]()`*_ abc/\n:jJ\tscript=\\."), max_size=60))
def test_escaped_markdown_renders_no_markup_of_its_own(text: str) -> None:
    """Rendered as the site renders it (Python-Markdown with the site's extensions), escaped entry
    text holds no element the text wrote and no attribute an attribute list added: the
    escaper's notion of a code span must be the renderer's (a mismatch once let ``<b>`` and
    ``{: .cls }`` through after two backticks)."""
    import markdown as python_markdown

    escaped = markdown.escape_markdown(text)
    extensions = ["attr_list", "admonition", "pymdownx.inlinehilite", "pymdownx.superfences"]
    parser = _Markup()
    parser.feed(python_markdown.markdown(escaped, extensions=extensions))
    for tag, attrs in parser.found:
        assert tag in _SAFE_TAGS, (text, escaped, tag)
        for name, value in attrs:
            assert name in _SAFE_ATTRS.get(tag, set()), (text, escaped, tag, name)
            if name == "href":
                assert not str(value).lower().lstrip().startswith(("javascript", "data")), value


@pytest.mark.parametrize(
    "source",
    ["``a`{`", "x ``a`<b>`", "``a`{: .cls }` b", "`a\n`<b>`", "\\`<i>`"],
)
def test_a_backtick_run_without_its_partner_keeps_no_markup(source: str) -> None:
    """The shapes hypothesis found: a run the renderer pairs differently from a naive scan."""
    escaped = markdown.escape_markdown(source)
    assert "<b>" not in escaped and "<i>" not in escaped and "{" not in escaped


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
    assert (docs / "assets" / "results" / "pruning-samples.png").is_file()
    assert not (docs / "assets" / "results" / "feature-caching.png").exists()  # redrawn


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
    assert "1,71" in es and "2,14" in es and "812,4 ± 12" in es and span("1,62", "1,79") in es
    assert "cota analítica" in es and "no cumplido" in es
    assert "feature-caching.png" not in es  # redrawn from the rows (not drawn in this ctx)
    assert "0123456789ab" in es and ".venv/bin/glossary bench feature-caching" in es
    ru = terms.term_page(ctx.glossary["feature-caching"], "ru", ctx)
    assert "Задержка (мс)" in ru and "базовая линия" in ru and "812,4 ± 12" in ru
    en = terms.term_page(ctx.glossary["feature-caching"], "en", ctx)
    assert "1.71" in en and "1,71" not in en and "Latency (ms)" in en


def test_technique_without_results_says_so_and_invents_nothing(ctx: context.Context) -> None:
    page = terms.term_page(ctx.glossary["xss-probe"], "en", ctx)  # implemented, no result file
    benchmark = page.split("{#benchmark data-search-exclude}")[1].split("\n## ")[0]
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
    assert "{#run-it}" not in page and "{#benchmark" not in page and ":::" not in page


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


def span(lo: str, hi: str) -> str:
    """An interval as the site writes it: unbreakable (no-break space, word joiners)."""
    return f"\u00a0[{lo}\u2060–\u2060{hi}]"


def _compare_row(page: str, slug: str) -> list[str]:
    row = next(line for line in page.splitlines() if f'href="../terms/{slug}/"' in line)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    return [
        " ".join(re.sub(r"<br>", " · ", re.sub(r"<(?!br>)[^>]+>", " ", c)).split()) for c in cells
    ]


def test_compare_page_lists_results_and_missing_techniques(ctx: context.Context) -> None:
    page = compare.compare_page("ru", ctx)
    cells = _compare_row(page, "feature-caching")
    joined = span("1,62", "1,79").strip()
    assert cells[1] == f"1,71× · {joined}" and cells[3] == "2,14× · аналитическая граница"
    assert cells[2] == "—"  # the fixtures have no real-shape result
    metric = ResultText("feature-caching", "ru").metric("fd_digits")
    assert cells[4] == f"1,08 · {metric}" and cells[5] == "—"  # no memory ratio measured
    assert cells[6] == "1 достигнута · 1 не достигнута"
    assert "контроль измерен" in cells[7]  # a control row, but no aim compares with it
    assert "Сэмплирование" in cells[0] or "DeepCache N=3" in cells[0]  # category, setting
    assert "terms/pruning.md" not in page.split("\n\n")[-1]  # pruning has a result file
    assert "terms/xss-probe.md" in page.split("\n\n")[-1]


def test_compare_page_names_the_machines_only_when_results_come_from_several(
    ctx: context.Context,
) -> None:
    import copy

    marker = {"en": "more than one machine", "es": "más de una máquina", "ru": "нескольких машинах"}
    by_slug = ctx.results.by_slug
    for slug, result in list(by_slug.items()):  # every result on one machine: no note
        by_slug[slug] = copy.deepcopy(result)
        by_slug[slug]["provenance"]["cpu"] = "Fixture CPU"
    assert all(marker[lang] not in compare.compare_page(lang, ctx) for lang in marker)
    by_slug["pruning"]["provenance"]["cpu"] = "Other <CPU>"
    for lang, words in marker.items():
        page = compare.compare_page(lang, ctx)
        note = next(line for line in page.splitlines() if words in line)
        assert "Other &lt;CPU&gt;" in note and "Fixture CPU" in note  # both named, escaped


def test_compare_table_has_its_columns_and_sort_keys(ctx: context.Context) -> None:
    page = compare.compare_page("es", ctx)
    head = re.search(r"<thead>(.*?)</thead>", page).group(1)
    columns = re.findall(r'<th scope="col" data-sort-type="(\w+)"[^>]*>([^<]+)</th>', head)
    assert [label for _kind, label in columns] == [
        "Técnica",
        "Aceleración [intervalo del 95 %]",
        "A escala real (aceleración)",
        "Límite",
        "Cociente de calidad",
        "Ahorro de memoria",
        "Objetivos",
        "Supera a su control de coste igualado",
    ]
    assert [kind for kind, _label in columns] == ["text"] + ["number"] * 7
    assert head.count('aria-sort="ascending"') == 1  # the initial order: by technique
    row = next(line for line in page.splitlines() if 'href="../terms/feature-caching/"' in line)
    sort_keys = re.findall(r'<td data-sort="([^"]*)"', row)
    assert sort_keys[:5] == ["Caché de Características", "1.71", "", "2.14", "1.08"]
    assert "Muestreo · DeepCache N=3" in row  # the category and the picked setting
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
    assert cells[1:6] == ["—"] * 5 and cells[6] == "1 met" and len(cells) == 8


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
    points = plotdata.row_points(fixture_result, {"ddim50": "B", "dc3": "T", "ddim-dc3": "C"})
    by_key = {p.key: p for p in points}
    assert by_key["ddim50"].quality == 1.0 and by_key["dc3"].headline
    assert by_key["dc3"].quality == pytest.approx(3.467 / 3.21)
    assert by_key["dc3"].speedup_interval == (1.62, 1.79)
    assert by_key["ddim-dc3"].quality_interval is None  # not measured: not drawn
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
            "compare-memory.svg",
            "compare-quality.svg",
            "compare-speedup.svg",
            "feature-caching-chart-1.svg",
            "feature-caching-chart-2.svg",
            "feature-caching-chart-3.svg",
            "feature-caching.svg",
            "pruning-chart-1.svg",
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
    page = (docs / "ru" / "terms" / "pruning.md").read_text(encoding="utf-8")
    figure = page.split('src="../../../assets/results/pruning-samples.png"')[0].rsplit(
        "<figure", 1
    )[1]
    text = ResultText("pruning", "ru")
    assert f'alt="{text.message("site.alt-samples")}"' in figure
    caption = page.split('pruning-samples.png"')[1].split("</figcaption>")[0]
    assert text.caption({"caption": "samples"})[:30] in html.unescape(caption)
    rows = page.split('<ol class="gl-sample-rows">')[1].split("</ol>")[0]
    assert rows.count("<li>") == 3 and "U-Net учителя (плотная)" in rows


def test_redrawn_charts_replace_the_png_with_a_caption_and_alt(docs: Path) -> None:
    page = (docs / "es" / "terms" / "pruning.md").read_text(encoding="utf-8")
    figure = page.split('src="../../../assets/results/es/pruning-chart-1.svg"')[0]
    figure = figure.rsplit("<figure", 1)[1]
    assert 'alt="Gráfico de líneas: ' in figure
    assert "pruning.png" not in page


def _fixture_text(slug: str) -> str:
    return (RESULTS / f"{slug}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("literal", "field"),
    [
        ("NaN", "rows[0].values.latency_ms"),
        ("Infinity", "rows[0].values.latency_ms"),
        ("-Infinity", "rows[0].values.latency_ms"),
        ("1e308", "rows[0].values.latency_ms"),
        ("1e999", "rows[0].values.latency_ms"),
        ("1" * 40, "rows[0].values.latency_ms"),
    ],
)
def test_a_result_value_that_is_not_finite_or_in_range_is_one_line(
    tmp_path: Path, literal: str, field: str
) -> None:
    text = _fixture_text("feature-caching").replace(
        '"latency_ms": 812.4', f'"latency_ms": {literal}'
    )
    assert literal in text
    (tmp_path / "feature-caching.json").write_text(text, encoding="utf-8")
    with pytest.raises(results.SiteGenError) as caught:
        results.load_results(tmp_path, allow_nonstandard=True)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'feature-caching.json'}: {field}: ")


@pytest.mark.parametrize("depth", [40, 100_000])
def test_a_deeply_nested_result_is_one_line_naming_the_file(tmp_path: Path, depth: int) -> None:
    data = json.loads(_fixture_text("pruning"))
    path = tmp_path / "pruning.json"
    nested = "[" * depth + "]" * depth
    path.write_text(json.dumps(data)[:-1] + f', "extra": {nested}}}', encoding="utf-8")
    with pytest.raises(results.SiteGenError) as caught:
        results.load_results(tmp_path, allow_nonstandard=True)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert "nested" in message


def test_a_body_copied_from_another_technique_is_one_line_naming_the_file(
    tmp_path: Path, fixture_path: None
) -> None:
    # pruning's body under feature-caching's name: the schema holds, but the body no longer
    # matches its digest (pruning's result is schema 4) and its messages are not
    # feature-caching's, so the check refuses it before any page is rendered
    folder = tmp_path / "results"
    folder.mkdir()
    data = json.loads(_fixture_text("pruning"))
    own = json.loads(_fixture_text("feature-caching"))
    data.update({k: own[k] for k in ("slug", "module", "provenance")})
    (folder / "feature-caching.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(results.SiteGenError) as caught:
        generate.generate(tmp_path / "docs", entries_dir=ENTRIES, results=folder)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{folder / 'feature-caching.json'}: digest: recorded ")
    assert "; catalog: message " in message


def test_the_mkdocs_hook_reports_a_result_problem_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mkdocs.exceptions import PluginError

    from glossary import mkdocs_hooks

    def broken(*args: Any, **kwargs: Any) -> None:
        raise results.SiteGenError(f"{tmp_path}/a\nb.json: rows[0].values.speedup: nan")

    monkeypatch.setattr(mkdocs_hooks, "generate", broken)
    monkeypatch.setattr(mkdocs_hooks, "_last_fingerprint", None)
    config = type(
        "Config", (), {"docs_dir": str(tmp_path), "use_directory_urls": True, "mdx_configs": {}}
    )()
    with pytest.raises(PluginError) as caught:
        mkdocs_hooks.on_config(config)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"glossary pages: {tmp_path}/a\\nb.json: rows[0].values.speedup: nan"
    )


# ------------------------------------------------------------------ ratios and the guide


def test_ratios_have_one_precision_rule_and_never_break() -> None:
    from glossary.site.formatting import GROUP, JOIN, NBSP, interval, ratio, ratio_interval, times

    assert [ratio(v, "es") for v in (1.7468, 1.6036, 0.77751, 17.85, 9.9996)] == [
        "1,75",
        "1,60",
        "0,778",
        "17,9",
        "10,0",
    ]
    assert ratio(12517.3, "es") == f"12{GROUP}500"  # not "12.517", which reads as 12.5
    assert "." not in ratio(12517.3, "es") and "," not in ratio(12517.3, "en")
    assert ratio_interval([1.0, 1.0], "es") == "" and ratio_interval([0.9996, 1.0004], "ru") == ""
    assert interval([1, 1], "es") == ""  # a baseline against itself: no "[1–1]"
    shown = times(1.7468, [1.6036, 1.8513], "es")
    assert shown == f"1,75×{NBSP}[1,60{JOIN}–{JOIN}1,85]"
    assert not re.search(r"\s", shown.replace(NBSP, ""))  # no place to break the line


def _study_result(better: str = "lower") -> dict[str, Any]:
    """A result with three settings of one method (speedups 26×, 18×, 10×; quality ratios 11,
    4 and 1 to the baseline) and a matched-cost control of the 10× setting."""
    metric = "psnr_vs_baseline" if better == "higher" else "fd_digits"

    def row(rid: str, role: str, method: str, speedup: float, factor: float) -> dict[str, Any]:
        values = [10.0, 11.0, 9.0, 10.5, 9.5]
        seeds = [v * factor if better == "lower" else v / factor for v in values]
        return {
            "id": rid,
            "config": {"method": method, "steps": 1},
            "role": role,
            "values": {"speedup": speedup, metric: sum(seeds) / 5},
            "intervals": {"speedup": [speedup * 0.9, speedup * 1.1]},
            "seeds": {metric: seeds},
        }

    return {
        "slug": "consistency-latent-diffusion",
        "metrics": {
            "speedup": {"unit": "x", "better": "higher"},
            metric: {"unit": "", "better": better},
        },
        "rows": [
            row("base", "baseline", "ddim", 1.0, 1.0),
            row("cm1", "technique", "consistency", 26.0, 11.0),
            row("cm2", "technique", "consistency", 18.0, 4.0),
            row("cm4", "technique", "consistency", 10.0, 1.0),
            row("dpm4", "control", "dpm", 10.0, 2.0),
        ],
        "headline": {
            "row": "cm2",
            "speedup": 18.0,
            "speedup_interval": [16.2, 19.8],
            "speedup_limit": 25.0,
            "limit_kind": "estimate",
            "memory_ratio": None,
            "quality_metric": metric,
            "quality_ratio": 4.0,
            "quality_interval": [3.5, 4.5],
        },
        "aims": [
            {
                "id": "beats-control",
                "params": {"steps": 4},
                "row": "cm4",
                "against": "dpm4",
                "comparison": "<",
                "target": 1.0,
                "measured": 0.5,
                "interval": [0.4, 0.6],
                "state": "met",
            }
        ],
        "anomalies": [],
    }


@pytest.mark.parametrize("better", ["lower", "higher"])
def test_the_stated_rule_picks_the_fastest_setting_within_the_budget(better: str) -> None:
    from glossary.site import picks

    result = _study_result(better)
    p = picks.pick("consistency-latent-diffusion", result, 1.10)
    assert p is not None and p.row["id"] == "cm4" and p.rule == "budget"  # not the 2-step one
    assert p.speedup == 10.0 and p.speedup_interval == (9.0, 11.0)
    assert p.quality is not None and p.quality.metric == result["headline"]["quality_metric"]
    assert p.quality.ratio == pytest.approx(1.0) and p.quality.within(1.10)
    assert p.limit is None  # the limit was stated for another setting (the headline's)
    assert [c.row["id"] for c in p.controls] == ["dpm4"] and picks.control_verdict(p) == "yes"
    assert picks.verdict(p, "fewer-steps") == ("use", [])
    loose = picks.pick("consistency-latent-diffusion", result, 5.0)
    assert loose is not None and loose.row["id"] == "cm2" and loose.limit is not None
    none = picks.pick("consistency-latent-diffusion", result, 0.5)  # nothing within: headline
    assert none is not None and none.row["id"] == "cm2" and none.rule == "headline"
    call, why = picks.verdict(none, "fewer-steps", (0.5, 0.6))
    assert call == "avoid" and why == ["quality"]


def test_verdict_says_why_a_setting_is_not_recommended() -> None:
    from dataclasses import replace

    from glossary.site import picks

    p = picks.pick("consistency-latent-diffusion", _study_result(), 1.10)
    assert p is not None
    slower = replace(p, speedup=0.8, speedup_interval=(0.7, 0.9))
    assert picks.verdict(slower, "fewer-steps") == ("avoid", ["slower"])
    unsure = replace(p, speedup_interval=(0.95, 1.3))
    assert picks.verdict(unsure, "fewer-steps") == ("unsettled", ["no-faster"])
    assert picks.verdict(replace(p, memory_ratio=3.9), "less-memory") == ("avoid", ["memory"])
    assert picks.verdict(replace(p, memory_ratio=0.25), "less-memory") == ("use", [])
    worse = replace(
        p, memory_ratio=0.25, quality=replace(p.quality, ratio=1.8, interval=(1.7, 1.9))
    )
    assert picks.verdict(worse, "less-memory") == ("avoid", ["quality"])  # a saving that costs


@pytest.mark.parametrize("lang", LANGS)
def test_guide_page_is_generated_from_the_results(ctx: context.Context, lang: str) -> None:
    from glossary.site import guide, picks
    from glossary.site.formatting import ratio_with, times

    page = guide.guide_page(lang, ctx)
    text = ResultText("guide", lang)
    assert page.startswith("# " + text.message("guide.title") + "\n")
    anchors = re.findall(r"\{#([a-z0-9-]+)\}", page)
    assert anchors[:3] == ["rule", "goals", "goal-fewer-steps"] and "budgets" in anchors
    assert text.message("guide.toy-title") in page  # every fixture result is at toy scale
    for slug in ("feature-caching", "pruning"):
        entry, result = ctx.glossary[slug], ctx.results.by_slug[slug]
        p = picks.pick(slug, result, guide.budgets(ctx)[0])
        assert p is not None
        assert f"[{markdown.escape_text(entry.term(lang))}](terms/{slug}.md)" in page
        assert times(p.speedup, p.speedup_interval, lang) in page
        if p.quality is not None:
            assert ratio_with(p.quality.ratio, p.quality.interval, lang) in page
            assert ResultText(slug, lang).metric(p.quality.metric) in page
    study = ctx.results.composites.get("stacking")
    if study is not None:
        assert "stacking.md#stack-" in page  # the study's answer links to its row


def test_guide_page_follows_the_result_files(ctx: context.Context) -> None:
    from glossary.site import guide

    before = guide.guide_page("en", ctx)
    result = ctx.results.by_slug["feature-caching"]
    result["headline"]["speedup"] = 3.21  # a regenerated result: the page changes with it
    result["headline"]["quality_metric"] = "full_steps"  # a newly declared quality metric
    after = guide.guide_page("en", ctx)
    assert "3.21×" in after and "3.21×" not in before
    assert ResultText("feature-caching", "en").metric("full_steps") in after


def test_a_z_anchors_are_unique_and_the_russian_bar_puts_cyrillic_first(
    ctx: context.Context,
) -> None:
    for lang in LANGS:
        page = indexes.az_page(lang, ctx)
        ids = re.findall(r"\{#([^}]+)\}", page)
        assert len(ids) == len(set(ids)), lang
        assert page.count("](#letter-u2026") <= 1  # one "…" bucket at most
    page = indexes.az_page("ru", ctx)
    bar = page.split("\n## ")[0]
    lines = [line for line in bar.splitlines() if "](#letter-" in line]
    scripts = [indexes.script(re.findall(r"\[([^\]]+)\]", line)[0]) for line in lines]
    assert scripts[:2] == ["cyrillic", "latin"]  # each on its own line, Cyrillic first
    for line, found in zip(lines, scripts, strict=True):
        labels = re.findall(r"\[([^\]]+)\]\(#", line)
        assert {indexes.script(label) for label in labels} == {found}


@pytest.mark.parametrize("lang", LANGS)
def test_comparison_charts_key_every_point_and_rank_memory_apart(
    ctx: context.Context, lang: str
) -> None:
    from glossary.site.compareplots import compare_charts

    points = compare.chart_points(lang, ctx)
    assert [p.label for p in points] == [ctx.glossary[p.key].term(lang) for p in points]
    charts = {c.name: c for c in compare_charts(points, lang, {"pruning"})}
    assert sorted(charts) == ["compare-memory", "compare-quality", "compare-speedup"]
    quality = charts["compare-quality"]
    shown = [p for p in points if p.key != "pruning"]  # a memory technique: not ranked by speed
    for i, point in enumerate(shown, 1):
        assert f"{i} {point.label}" in quality.caption  # the caption keys each number
    svg = quality.rendered().svg.decode("utf-8")
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert {str(i) for i in range(1, len(shown) + 1)} <= set(texts)  # every point numbered
    assert ctx.glossary["pruning"].term(lang) in charts["compare-speedup"].caption  # said where
    memory = charts["compare-memory"].rendered().svg.decode("utf-8")
    assert "×" in memory and charts["compare-memory"].caption


def test_a_docstring_section_two_levels_down_is_raised_under_its_object() -> None:
    """A docstring whose sections are underlined with ``-`` lands two levels under its object's
    heading; the code documentation page raises that run by one, tags and all, until the next
    object at the jump's level, and leaves pages without a jump as they are."""
    from glossary.mkdocs_hooks import nest_headings

    jumped = (
        '<h2 id="api">A</h2><h3 id="m">mod</h3><h5 id="m--math">Math</h5><p>x</p>'
        '<h5 id="m--pit">Pitfalls</h5><h6>deeper</h6><h3 id="n">next</h3><h4>ok</h4>'
    )
    assert nest_headings(jumped) == (
        '<h2 id="api">A</h2><h3 id="m">mod</h3><h4 id="m--math">Math</h4><p>x</p>'
        '<h4 id="m--pit">Pitfalls</h4><h5>deeper</h5><h3 id="n">next</h3><h4>ok</h4>'
    )
    nested = '<h2 id="api">A</h2><h3>b</h3><h4>c</h4><h2>d</h2><h3>e</h3>'
    assert nest_headings(nested) == nested
