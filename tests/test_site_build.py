"""The strict MkDocs build of the trilingual site and what its HTML contains.

One build per test process (``site_support.session_build``), shared with the link and browser
tests through the ``site`` xdist group.
"""

from __future__ import annotations

import html as html_module
import html.parser
import json
import re
import sys
from itertools import pairwise
from pathlib import Path

import pytest

try:
    from tests import site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import site_support  # type: ignore[no-redef]

from glossary.collation import sort_key
from glossary.loader import load_glossary
from glossary.mkdocs_hooks import PAGE_WEIGHT
from glossary.model import Glossary

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("site")]
LANGS = site_support.LANGS
BuiltSite = site_support.BuiltSite


@pytest.fixture(scope="session")
def glossary(built: BuiltSite) -> Glossary:
    sys.path.insert(0, str(site_support.FIXTURES))  # the fixture entry's reference module
    try:
        return load_glossary(built.root / "entries")
    finally:
        sys.path.remove(str(site_support.FIXTURES))


def test_strict_build_passes_without_warnings(built: BuiltSite) -> None:
    lines = [line for line in built.output.splitlines() if re.match(r"^\S*WARNING", line)]
    assert lines == []
    print(f"mkdocs build --strict took {built.seconds:.1f} s")


def test_every_entry_has_a_page_in_every_language(built: BuiltSite, glossary: Glossary) -> None:
    for lang in LANGS:
        for entry in glossary:
            assert built.page(lang, f"terms/{entry.slug}").is_file(), (lang, entry.slug)
        for path in ("", "index-a-z", "compare", "stacking", "categories"):
            assert built.page(lang, path).is_file(), (lang, path)


def test_generated_pages_stay_out_of_the_repository(built: BuiltSite) -> None:
    assert not (site_support.REPO / "site_src" / "en" / "terms" / "xss-probe.md").exists()
    assert (built.docs / "en" / "terms" / "xss-probe.md").is_file()


@pytest.mark.parametrize("lang", LANGS)
def test_terms_are_out_of_the_navigation_and_indexes_in_it(built: BuiltSite, lang: str) -> None:
    html = built.html(lang, "")
    nav = [h for h in re.findall(r'<a href="([^"]+)" class="md-nav__link', html) if "#" not in h]
    assert any(h.endswith("index-a-z/") for h in nav)
    assert any(h.endswith("compare/") for h in nav)
    assert any(h.endswith("categories/sampling/") for h in nav)
    assert not [h for h in nav if "terms/" in h]


@pytest.mark.parametrize("lang", LANGS)
def test_hreflang_alternates_point_to_the_same_term(built: BuiltSite, lang: str) -> None:
    page = built.page(lang, "terms/pruning")
    html = page.read_text(encoding="utf-8")
    links = dict(
        (hreflang, href)
        for href, hreflang in re.findall(
            r'<link rel="alternate" href="([^"]+)" hreflang="([^"]+)">', html
        )
    )
    assert set(links) == {"en", "es", "ru", "x-default"}
    for other in ("en", "es", "ru"):
        target = (page.parent / links[other] / "index.html").resolve()
        assert target == built.page(other, "terms/pruning").resolve()
    assert links["x-default"] == links["en"]


@pytest.mark.parametrize(
    ("lang", "search_placeholder"), [("en", "Search"), ("es", "Búsqueda"), ("ru", "Поиск")]
)
def test_theme_ui_speaks_the_page_language(
    built: BuiltSite, lang: str, search_placeholder: str
) -> None:
    html = built.html(lang, "terms/feature-caching")
    assert f'<html lang="{lang}"' in html
    assert f'placeholder="{search_placeholder}"' in html


def test_search_index_covers_three_languages(built: BuiltSite) -> None:
    index = json.loads((built.site / "search" / "search_index.json").read_text("utf-8"))
    assert index["config"]["lang"] == ["en", "es", "ru"]
    # Material appends '*' to every query term and lunr does not stem wildcard terms, so the
    # stemmer must stay out of the index pipeline or whole words stop matching.
    assert "stemmer" not in index["config"]["pipeline"]
    locations = {doc["location"] for doc in index["docs"]}
    assert {"terms/pruning/", "es/terms/pruning/", "ru/terms/feature-caching/"} <= locations
    worker_langs = built.site / "assets" / "javascripts" / "lunr" / "min"
    assert (worker_langs / "lunr.es.min.js").is_file() and (
        worker_langs / "lunr.ru.min.js"
    ).is_file()


SEARCH_INDEX_BUDGET = 1_000_000  # bytes a reader downloads on a first search


def test_search_index_is_small_and_holds_the_pages_as_they_read(built: BuiltSite) -> None:
    """Under 1 MB: the English API pages, the A-Z list and the tables of figures stay out, and no
    folded copy of any word is shipped (the reader's browser folds; glossary-search.js)."""
    from glossary.site.search import fold_text, index_report

    report = index_report(built.site)
    print(f"search index: {report.size} bytes, {report.documents} documents")
    assert report.size < SEARCH_INDEX_BUDGET
    assert not [loc for loc in report.locations if "api/" in loc or "#reference." in loc]
    assert not [loc for loc in report.locations if "index-a-z/" in loc]
    assert "es/terms/knowledge-distillation/" in report.locations
    docs = json.loads(report.path.read_text("utf-8"))["docs"]
    spanish = " ".join(d["text"] for d in docs if d["location"].startswith("es/"))
    words = set(re.findall(r"\w+", spanish.casefold()))
    folded_only = {fold_text(w) for w in words if fold_text(w) != w} - words
    # words the Spanish pages always write accented never appear folded in the index
    assert {"destilación", "aceleración", "características"} <= words
    assert {"destilacion", "aceleracion", "caracteristicas"} <= folded_only


def test_each_language_has_a_search_index_of_its_own(built: BuiltSite) -> None:
    """The file a page's browser loads first (glossary-search.js) holds that language's documents
    alone, in the whole index's order and with its config; the three files hold it whole."""
    from glossary.i18n import DEFAULT_LANG
    from glossary.site.search import index_report, language_file, language_of

    report = index_report(built.site)
    whole = json.loads(report.path.read_text("utf-8"))
    total = 0
    for lang in LANGS:
        part = json.loads(language_file(built.site, lang).read_text("utf-8"))
        locations = [doc["location"] for doc in part["docs"]]
        expected = [
            doc["location"]
            for doc in whole["docs"]
            if language_of(doc["location"], LANGS, DEFAULT_LANG) == lang
        ]
        assert part["config"] == whole["config"] and locations == expected, lang
        assert f"{site_support.LANG_PREFIX[lang]}terms/pruning/" in locations
        assert language_file(built.site, lang).stat().st_size < report.size / 2, lang
        total += len(locations)
    assert total == report.documents


def test_search_finds_each_definition_with_its_accuracy_note(
    built: BuiltSite, glossary: Glossary
) -> None:
    """A search result for a definition shows the note that corrects it: both are one section
    of the index."""
    from glossary.site.search import index_report

    docs = json.loads(index_report(built.site).path.read_text("utf-8"))["docs"]
    texts = {d["location"]: html_module.unescape(re.sub(r"<[^>]+>", "", d["text"])) for d in docs}
    noted = [(e, lang) for e in glossary for lang in LANGS if e.text(lang).note]
    assert noted
    for entry, lang in noted:
        section = " ".join(
            texts[f"{site_support.LANG_PREFIX[lang]}terms/{entry.slug}/#definition"].split()
        )
        assert " ".join(entry.text(lang).note.split())[:60] in section, (lang, entry.slug)


@pytest.mark.parametrize("lang", LANGS)
def test_headings_have_explicit_ids(built: BuiltSite, lang: str) -> None:
    html = built.html(lang, "terms/feature-caching")
    ids = re.findall(r'<h2[^>]* id="([^"]+)"', html)
    # the reader's part first: definition, explanation, what was measured; then the code
    assert ids[:3] == ["definition", "explanation", "benchmark"]
    assert ids.index("benchmark") < ids.index("run-it") < ids.index("api") < ids.index("sources")
    assert not [i for i in ids if re.search(r"_\d+$", i)]


@pytest.mark.parametrize(("lang", "number"), [("en", "1.71"), ("es", "1,71"), ("ru", "1,71")])
def test_benchmark_table_is_localized(built: BuiltSite, lang: str, number: str) -> None:
    html = built.html(lang, "terms/feature-caching")
    section = html.split('id="benchmark"')[1].split('id="sources"')[0]
    assert f"<strong>{number}×</strong>" in section
    # summary and full tables (header + 3 rows each), aims (header + 2 aims)
    assert section.count("<tr>") == 4 + 4 + 3
    config = {
        "en": "DDIM 19 steps (same FLOPs as N=3)",
        "es": "DDIM con 19 pasos (mismos FLOPs",
        "ru": "DDIM, 19 шагов (те же FLOPs",
    }[lang]
    assert config in section
    assert "✓" in section and "✗" in section
    prefix = "../../" if lang == "en" else "../../../"
    assert f'src="{prefix}assets/results/{lang}/feature-caching-chart-1.svg"' in section
    assert "feature-caching.png" not in section  # drawn from the rows in the page's language
    assert "0123456789ab" in section


def test_technique_without_results_shows_no_figures(built: BuiltSite, glossary: Glossary) -> None:
    fixture_results = {p.stem for p in (site_support.FIXTURES / "results").glob("*.json")}
    missing = [e for e in glossary.techniques() if e.slug not in fixture_results]
    assert missing
    for lang in LANGS:
        html = built.html(lang, f"terms/{missing[0].slug}")
        section = html.split('id="benchmark"')[1].split("<h2")[0]
        text = re.sub(r"<[^>]+>", "", section.split("</h2>", 1)[1])
        assert not re.search(r"\d", text), text
        assert "<table>" not in section and "<img" not in section


API_INTRO = {
    "en": "The code documentation of the reference implementation is in English",
    "es": "La documentación del código de la implementación de referencia está en inglés",
    "ru": "Документация кода эталонной реализации — на английском",
}


@pytest.mark.parametrize("lang", LANGS)
def test_run_command_and_api_of_an_implemented_module(built: BuiltSite, lang: str) -> None:
    """The term page says how to run the code and links to the API page; the API page (its own
    page) opens with one sentence in the reader's language and marks mkdocstrings' output as
    English."""
    markup = built.html(lang, "terms/xss-probe")
    assert ".venv/bin/python -m site_fixture_technique" in re.sub(r"<[^>]+>", "", markup)
    section = markup.split('id="api"')[1].split("<h2")[0]
    assert "doc-object" not in markup
    assert re.search(r'<a href="\.\./\.\./api/xss-probe/" hreflang="en">', section), section
    api = built.html(lang, "api/xss-probe")
    article = _article(api)
    intro = article.split('<div lang="en"' if lang != "en" else '<div class="doc', 1)[0]
    assert API_INTRO[lang] in html_module.unescape(re.sub(r"<[^>]+>", "", intro))
    assert 'class="doc doc-object doc-function"' in article and "double" in article
    if lang != "en":  # the English reference read with English phonetics
        english = article.split('<div lang="en" class="gl-code-docs">', 1)
        assert len(english) == 2 and "doc-object" not in english[0], lang
    assert 'href="../../terms/xss-probe/"' in article


def test_planned_module_has_no_api_section_rendered(built: BuiltSite, glossary: Glossary) -> None:
    planned = [e for e in glossary.techniques() if not e.reference.implemented]
    assert [e.slug for e in planned] == ["planned-probe"]  # the fixture; the project has none
    api = built.html("ru", f"terms/{planned[0].slug}").split('id="api"')[1]
    assert "doc-object" not in api
    assert planned[0].reference.module in api
    assert not built.page("ru", f"api/{planned[0].slug}").exists()


# The headings a technique page writes (glossary/site/terms.py, benchmark.py, stacking.py): its
# table of contents shows these, in the reader's language, and no docstring heading.
TERM_SECTIONS = {
    "definition",
    "explanation",
    "benchmark",
    "aims",
    "notes",
    "figures",
    "stacks",
    "run-it",
    "diffusers",
    "api",
    "sources",
    "libraries",
    "related",
}


def test_every_build_holds_a_term_page_to_its_weight(caplog: pytest.LogCaptureFixture) -> None:
    """The rule runs in the build itself (a warning: ``--strict`` fails), so the site built from
    the committed results is held to it too, not only this fixture."""
    from types import SimpleNamespace

    from glossary.mkdocs_hooks import on_post_page

    def page(uri: str) -> object:
        return SimpleNamespace(file=SimpleNamespace(src_uri=uri))

    heavy, light = "é" * (PAGE_WEIGHT // 2), "x" * (PAGE_WEIGHT - 1)  # é is two bytes
    with caplog.at_level("WARNING", logger="mkdocs.hooks.glossary"):
        for uri, html in [
            ("ru/terms/pruning.md", heavy),
            ("terms/pruning.md", light),
            ("es/api/pruning.md", heavy),  # the code documentation has its own page, no limit
        ]:
            assert on_post_page(html, page(uri), None) == html  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records] == [
        f"ru/terms/pruning.md: {PAGE_WEIGHT} bytes of HTML, over the {PAGE_WEIGHT} a term page"
        " may weigh"
    ]


@pytest.mark.parametrize("lang", LANGS)
def test_technique_pages_are_light_and_their_contents_are_the_readers(
    built: BuiltSite, glossary: Glossary, lang: str
) -> None:
    heavy, foreign = [], []
    for entry in glossary.techniques():
        page = built.page(lang, f"terms/{entry.slug}")
        markup = page.read_text(encoding="utf-8")
        if page.stat().st_size >= PAGE_WEIGHT:
            heavy.append(f"{entry.slug}: {page.stat().st_size} bytes")
        toc = markup.split('class="md-nav md-nav--secondary"', 1)[1].split("</nav>", 1)[0]
        anchors = set(re.findall(r'href="#([^"]+)"', toc))
        foreign += [f"{entry.slug}: #{a}" for a in sorted(anchors - TERM_SECTIONS)]
        assert "doc-object" not in markup and "Source code in" not in markup, entry.slug
    assert heavy == [] and foreign == []


_LITERAL_RULE = re.compile(r"(?:^|\s)(?:={3,}|-{3,})(?:\s|$)")
_LIST_IN_PARAGRAPH = re.compile(r"(?:^|\n)\s*(?:[*-]|\d+\.)(?:\s|$)")


def docstring_defects(markup: str) -> list[str]:
    """Paragraphs of mkdocstrings' output that show a setext underline or a run-in list."""
    docs = markup.split('class="doc doc-object', 1)
    if len(docs) < 2:
        return []
    found = []
    for paragraph in re.findall(r"<p>(.*?)</p>", docs[1], re.S):
        text = html_module.unescape(re.sub(r"<[^>]+>", "", paragraph))
        if _LITERAL_RULE.search(text):
            found.append(f"underline: {text[:80]!r}")
        if _LIST_IN_PARAGRAPH.search(text):
            found.append(f"list in a paragraph: {text[:80]!r}")
    return found


def test_the_docstring_check_sees_both_defects() -> None:
    page = '<div class="doc doc-object"><p>Pitfalls ======== * The cache</p><p>a\n* b</p></div>'
    assert [d.split(":")[0] for d in docstring_defects(page)] == [
        "underline",
        "list in a paragraph",
    ]


def test_docstrings_are_rewritten_for_python_markdown() -> None:
    """The shapes the reference docstrings use (glossary/site/docstrings.py), one by one."""
    from glossary.site.docstrings import readable

    # a title and its underline on one line, the next sentence after it
    assert readable("Timestep grids ============== The first") == "# Timestep grids\n\nThe first"
    # a two-line title under its underline; a "-" underline is a second-level heading
    assert readable("Production (on the zoo,\n[`x`][y])\n=====\n* a") == (
        "# Production (on the zoo, [`x`][y])\n\n* a"
    )
    assert readable("Idea\n----\ntext") == "## Idea\n\ntext"
    assert readable("a --- b\nc") == "a --- b\nc"  # a dash in prose stays a dash
    # a list after a sentence, two-space continuations, a marker alone on its line
    assert readable("Text:\n* one\n  more\n*\n  two") == "Text:\n\n* one\n    more\n* two"
    # a reST simple table becomes a Markdown table; a ragged one, a code block
    table = "==  ==\nab  cd\n==  ==\nx   y\n==  =="
    assert readable(table) == "| ab | cd |\n|---|---|\n| x | y |\n"
    assert readable("==  ==\na b  c  d\n==  ==").startswith("```text\n")


def test_docstrings_render_as_headings_lists_and_tables(
    built: BuiltSite, glossary: Glossary
) -> None:
    """The reference docstrings use setext headings, two-space list continuations and reST
    tables; on every API page they are headings, lists and tables, not literal underlines or a
    list run into one paragraph (glossary/site/docstrings.py)."""
    found = []
    pages = [built.page("es", f"api/{e.slug}") for e in glossary.techniques()]
    pages = [p for p in pages if p.is_file()]
    assert len(pages) >= 15
    for page in pages:
        markup = page.read_text(encoding="utf-8")
        found += [f"{page.parent.name}: {d}" for d in docstring_defects(markup)]
    assert found == []
    markup = built.html("es", "api/feature-caching")
    headings = [
        html_module.unescape(re.sub(r"<[^>]+>", "", h))
        for h in re.findall(r"<h[3-6][^>]*>(.*?)</h[3-6]>", markup, re.S)
    ]
    titles = {h.replace("¶", "").strip() for h in headings}
    assert {"Idea", "Pitfalls", "Conditioning caches (exact)"} <= titles


@pytest.mark.parametrize("lang", LANGS)
def test_category_pages_show_each_accuracy_note_with_its_definition(
    built: BuiltSite, glossary: Glossary, lang: str
) -> None:
    noted = [e for e in glossary if e.text(lang).note]
    assert noted
    for entry in noted:
        text = re.sub(r"<[^>]+>", "", _article(built.html(lang, f"categories/{entry.category}")))
        text = " ".join(html_module.unescape(text).split())
        item = text.split(entry.text(lang).term, 1)[1]
        definition = " ".join(entry.text(lang).definition.split())
        note = " ".join(entry.text(lang).note.split())
        assert definition[:60] in item and note[:60] in item, (lang, entry.slug)
        assert item.index(definition[:60]) < item.index(note[:60])


class _LiveMarkup(html.parser.HTMLParser):
    """Elements inside <article> that could run code: scripts, foreign images, handlers."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "article":
            self.depth += 1
        if not self.depth:
            return
        values = dict(attrs)
        if tag in ("script", "svg", "iframe", "object", "embed"):
            self.found.append(tag)
        if tag == "img" and "assets/results/" not in (values.get("src") or ""):
            self.found.append(f"img src={values.get('src')}")
        for key, value in attrs:
            if key.startswith("on") or "javascript:" in re.sub(r"\s", "", value or "").lower():
                self.found.append(f"{tag} {key}={value}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self.depth -= 1


def _live_markup(html: str) -> list[str]:
    parser = _LiveMarkup()
    parser.feed(html)
    return parser.found


@pytest.mark.parametrize("lang", LANGS)
def test_markup_in_entries_and_results_is_shown_not_executed(built: BuiltSite, lang: str) -> None:
    for path in ("terms/xss-probe", "index-a-z", "compare", "categories/evaluation", "terms/ddim"):
        html = built.html(lang, path)
        assert _live_markup(html) == [], path
        assert re.search(r"<title>[^<]*</title>", html), path
    html = built.html(lang, "terms/xss-probe")
    assert "&lt;script&gt;alert(" in html
    assert "&lt;img src=x onerror=alert(" in html


def _article(html: str) -> str:
    return html.split("<article", 1)[1].split("</article>", 1)[0]


def test_a_z_index_follows_each_language_collation(built: BuiltSite) -> None:
    for lang in LANGS:
        html = _article(built.html(lang, "index-a-z"))
        for section in html.split("<h2")[1:]:
            names = [
                re.sub(r"<[^>]+>", "", item).split(" → ")[0].strip()
                for item in re.findall(r"<li>(.*?)</li>", section, re.S)
            ]
            names = [html_module.unescape(n) for n in names]
            assert names == sorted(names, key=sort_key(lang)), (lang, names)


def test_comparison_page_lists_every_technique(built: BuiltSite, glossary: Glossary) -> None:
    for lang in LANGS:
        html = built.html(lang, "compare")
        for entry in glossary.techniques():
            assert f"terms/{entry.slug}/" in html


def test_home_pages_are_hand_written_per_language(built: BuiltSite) -> None:
    for lang, word in (("en", "command line"), ("es", "línea de órdenes"), ("ru", "командной")):
        text = re.sub(r"<[^>]+>", "", built.html(lang, ""))
        assert word in text
        assert "glossary lookup" in text and "python -m reference." in text


def test_figures_are_copied_and_linked_from_every_language(built: BuiltSite) -> None:
    fixture = (site_support.FIXTURES / "results" / "pruning-samples.png").read_bytes()
    for lang in LANGS:
        page = built.page(lang, "terms/pruning")
        srcs = re.findall(r'<img alt="[^"]+" src="([^"]+)"', page.read_text(encoding="utf-8"))
        names = ["pruning.svg", "pruning-chart-1.svg", "pruning-samples.png"]
        assert [Path(s).name for s in srcs] == names
        assert (page.parent / srcs[2]).resolve().read_bytes() == fixture
        for src in srcs[:2]:
            path = (page.parent / src).resolve()
            assert path == built.site / f"assets/results/{lang}/{Path(src).name}"
    assert not (built.site / "assets" / "results" / "pruning.png").exists()


@pytest.mark.parametrize(
    ("lang", "axis", "english"),
    [
        ("es", "Aceleración sobre la referencia base (×)", "Speedup over the baseline (×)"),
        ("ru", "Ускорение относительно базовой линии (×)", "Speedup over the baseline (×)"),
    ],
)
def test_drawn_charts_are_in_the_page_language(
    built: BuiltSite, lang: str, axis: str, english: str
) -> None:
    for name in ("feature-caching", "compare-quality", "compare-speedup"):
        svg = (built.site / "assets" / "results" / lang / f"{name}.svg").read_text("utf-8")
        texts = [html_module.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
        assert axis in " ".join(texts), name  # an axis title may be wrapped onto two lines
        assert english not in " ".join(texts), name
    english_svg = (built.site / "assets/results/en/feature-caching.svg").read_text("utf-8")
    assert english in english_svg and axis not in english_svg


@pytest.mark.parametrize("lang", LANGS)
def test_compare_page_has_charts_a_guide_and_a_sortable_table(built: BuiltSite, lang: str) -> None:
    html = built.html(lang, "compare")
    article = _article(html)
    # quality against speedup, speedups, memory savings (pruning states a memory ratio)
    assert article.count('<figure class="gl-figure">') == 3
    assert len(re.findall(r"<figcaption>[^<]{80,}</figcaption>", article)) == 3
    table = article.split("<table data-sortable>")[1].split("</table>")[0]
    assert len(re.findall(r"<th [^>]*data-sort-type=", table)) == 8
    # two techniques with results (feature-caching, pruning), eight sortable cells each (the
    # cards' labels are the browser's work, tables.js: no cell carries one in the HTML)
    assert len(re.findall(r'<td data-sort="', table)) == 16 and "data-label" not in table
    assert 'href="../terms/feature-caching/"' in table
    assert "tables.js" in html
    script = built.site / "assets" / "javascripts" / "tables.js"
    assert "aria-sort" in script.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("lang", "label"),
    [("en", "Table (scrolls sideways)"), ("es", "Tabla (se desplaza"), ("ru", "Таблица")],
)
def test_tables_are_named_keyboard_reachable_regions(
    built: BuiltSite, lang: str, label: str
) -> None:
    html = built.html(lang, "terms/feature-caching")
    tables = html.count("<table")
    regions = re.findall(
        r'<div class="gl-table" role="region" tabindex="0" aria-label="([^"]+)"[^>]*>', html
    )
    assert tables >= 3 and len(regions) == tables
    assert all(r.startswith(label) for r in regions)


def test_sitemap_and_downloads(built: BuiltSite) -> None:
    sitemap = (built.site / "sitemap.xml").read_text(encoding="utf-8")
    locs = re.findall(r"<loc>([^<]+)</loc>", sitemap)
    assert locs and all(loc.startswith("http://") or loc.startswith("https://") for loc in locs)
    assert not any("None" in loc for loc in locs)
    for lang in LANGS:
        html = built.html(lang, "downloads")
        assert "glossary.tbx" in html and "glossary.schema.json" in html
    assert (built.site / "assets" / "downloads" / "glossary.skos.jsonld").is_file()
    es = built.html("es", "")
    assert 'name="description" content="Técnicas que abaratan' in es


SPHINX_ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc):`")


def test_api_docs_have_no_sphinx_roles_and_ordered_headings(built: BuiltSite) -> None:
    """Docstrings are written the mkdocstrings way: a leftover reST role would be printed raw,
    and a docstring section must nest under its object's heading (no jump of two levels)."""
    leftovers, jumps = [], []
    for page in sorted(built.site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        leftovers += [f"{page}: {m.group(0)}" for m in SPHINX_ROLE.finditer(text)]
        # the API section: its heading (id "api") and the headings mkdocstrings writes
        api = r'<h([1-6])[^>]*id="(?:api|reference\.[^"]*)"'
        levels = [int(h) for h in re.findall(api, text)]
        jumps += [f"{page}: h{a} -> h{b}" for a, b in pairwise(levels) if b > a + 1]
    assert leftovers == []
    assert jumps == []


@pytest.mark.parametrize(
    ("lang", "title"), [("en", "What should I use?"), ("es", "¿Qué usar?"), ("ru", "Что выбрать?")]
)
def test_guide_page_in_every_language_from_home_and_navigation(
    built: BuiltSite, lang: str, title: str
) -> None:
    html = built.html(lang, "guide")
    assert "<h1" in html and title in _article(html)
    home = built.html(lang, "")
    assert 'href="guide/"' in _article(home)  # named on the home page
    nav = home.split('class="md-tabs"')[1].split("</nav>")[0]
    assert "guide/" in nav  # and in the navigation
    assert 'href="../terms/feature-caching/"' in _article(html)
    assert 'class="admonition warning"' in _article(html)  # every figure is at toy scale


@pytest.mark.parametrize("lang", LANGS)
def test_no_heading_id_loses_its_script(built: BuiltSite, lang: str) -> None:
    for path in ("", "guide", "compare", "stacking", "index-a-z"):
        ids = re.findall(r'<h[1-6] id="([^"]+)"', built.html(lang, path))
        assert ids and not [i for i in ids if re.fullmatch(r"_\d+", i)], (lang, path, ids)
        assert len(ids) == len(set(ids)), (lang, path)
