"""A Spanish or Russian reader meets no untranslated English in the measured part of a page.

Every text node of the benchmark section (from ``<h2 id="benchmark">`` to the next ``<h2>``) and of
the stacks section (``<h2 id="stacks">``) of each es and ru technique page, of the compare,
stacking and guide pages and of every drawn chart (SVG ``<text>``) is read, outside ``<code>``,
``<pre>`` and elements marked ``lang="en"``. A node fails when it equals the English text of a
catalog message (``results.po``, ``guide.po`` and each technique's catalog) that has no
placeholders, or contains a static fragment (over 12 characters) of one that has placeholders.

Two sources are read: the test build (the fixture results) and, rendered without MkDocs, the
benchmark section and the charts (the page's own and the benchmark's, redrawn) of every committed
result in ``reference/results/`` (read only), so that a new technique's catalog is checked
too; the committed stacking study, when there is one, is rendered the same way (its page and
its two charts), and so are the guide and comparison pages with the comparison charts.

A technique's display name in the stacking study's catalog (``element.<id>``) that its
translation keeps as it is ("DeepCache", "torch.compile") is a proper name, not English.
"""

from __future__ import annotations

import functools
import html.parser
import re

import markdown
import pytest
from babel.messages.pofile import read_po

try:
    from tests import site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import site_support  # type: ignore[no-redef]

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("site")]
REPO = site_support.REPO
READER_LANGS = ("es", "ru")
FRAGMENT_MIN = 12

# Messages whose English text is also their translation in that language: the word is the
# same (Spanish "control"), or the text is a proper name a reader meets as it is.
SAME_IN_TRANSLATION = {
    ("es", "role.control"),  # Spanish "control" (el control), the same word as the English
    ("es", "site.control-no"),  # Spanish "no", the verdict "does not beat its control"
}
# Messages whose whole text is a published name, the same in every language (the samplers,
# a line each in the scheduler trade-off's redrawn sweep): the text is not English prose.
PROPER_NAMES = frozenset(
    f"chart.sampler-{name}" for name in ("ddpm", "ddim", "dpmpp2m", "unipc", "euler")
)
# Messages with placeholders whose long static fragments are names, not English prose.
NAME_FRAGMENTS = {
    "config.dpmpp2m",  # "DPM-Solver++(2M)": the solver's published name
    "config.classifier-eager",  # "Conv-BN-ReLU (eager)": layer names and PyTorch's eager mode
    "config.denoiser-eager",  # the same, for the toy BN denoiser
}
_PLACEHOLDER = re.compile(r"%\([^)]*\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]|\{[a-z_]*\}")


@functools.cache
def english_messages() -> tuple[dict[str, str], dict[str, str]]:
    """(whole texts, fragments): English text -> message id, over every result catalog."""
    site = REPO / "glossary" / "locale" / "en" / "LC_MESSAGES"
    paths = [site / "results.po", site / "guide.po"]
    paths += sorted(REPO.glob("reference/*/locale/en/LC_MESSAGES/*.po"))
    whole: dict[str, str] = {}
    fragments: dict[str, str] = {}
    for path in paths:
        with path.open("rb") as handle:
            catalog = read_po(handle)
        for message in catalog:
            if not message.id:
                continue
            msgid = message.id if isinstance(message.id, str) else message.id[0]
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            for text in strings:
                text = " ".join(text.split())
                if not text:
                    continue
                if not _PLACEHOLDER.search(text):
                    whole.setdefault(text, msgid)
                    continue
                for piece in _PLACEHOLDER.split(text):
                    piece = piece.strip(" ,.;:()·")
                    if len(piece) > FRAGMENT_MIN and msgid not in NAME_FRAGMENTS:
                        fragments.setdefault(piece, msgid)
    return whole, fragments


class _Texts(html.parser.HTMLParser):
    """Text nodes outside code, pre and lang="en"; with ``section``, only those from
    ``<h2 id=section>`` to the next ``<h2>``."""

    VOID = frozenset({"br", "img", "hr", "input", "meta", "link", "wbr", "source", "col"})

    def __init__(self, section: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.section = section
        self.inside = section is None
        self.stack: list[tuple[str, bool]] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "h2" and self.section is not None:
            self.inside = values.get("id") == self.section
        if tag in self.VOID:
            return
        skip = tag in ("code", "pre", "script", "style") or values.get("lang") == "en"
        self.stack.append((tag, skip))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h2" and self.section is not None:
            self.inside = dict(attrs).get("id") == self.section

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if self.inside and text and not any(skip for _, skip in self.stack):
            self.texts.append(text)


def text_nodes(markup: str, section: str | None) -> list[str]:
    parser = _Texts(section)
    parser.feed(markup)
    return parser.texts


@functools.cache
def kept_names(lang: str) -> frozenset[str]:
    """The ``element.*`` messages whose ``lang`` translation is the English text itself."""
    kept = set()
    for path in sorted(REPO.glob(f"reference/*/locale/{lang}/LC_MESSAGES/*.po")):
        english = path.parents[2] / "en" / "LC_MESSAGES" / path.name
        if not english.is_file():
            continue
        with path.open("rb") as handle, english.open("rb") as original:
            theirs, ours = read_po(original), read_po(handle)
        for message in ours:
            msgid = message.id if isinstance(message.id, str) else None
            if msgid and msgid.startswith("element.") and message.string:
                source = theirs.get(msgid)
                if source is not None and source.string == message.string:
                    kept.add(msgid)
    return frozenset(kept)


@functools.cache
def proper_names() -> frozenset[str]:
    """The texts of :data:`PROPER_NAMES`, from the technique catalogs."""
    texts = set()
    for path in sorted(REPO.glob("reference/*/locale/en/LC_MESSAGES/*.po")):
        with path.open("rb") as handle:
            texts |= {m.string for m in read_po(handle) if m.id in PROPER_NAMES}
    return frozenset(texts)


def english_in(lang: str, texts: list[str]) -> list[str]:
    """Each text that is, or contains, the English of a catalog message, with the message."""
    whole, fragments = english_messages()
    found = []
    for text in texts:
        if text in proper_names():
            continue
        for candidate in (text, text.strip(" .:;·")):
            msgid = whole.get(candidate)
            if msgid and (lang, msgid) not in SAME_IN_TRANSLATION and msgid not in kept_names(lang):
                found.append(f"{text!r} (English of {msgid})")
                break
        else:
            for piece, msgid in fragments.items():
                if piece in text:
                    found.append(f"{text!r} contains {piece!r} (English of {msgid})")
                    break
    return found


def test_the_check_sees_english() -> None:
    """The checker finds a whole message, a fragment, and skips code and lang="en"."""
    markup = (
        '<h2 id="benchmark">B</h2><p>Configuration</p><p>x <code>Configuration</code></p>'
        '<p lang="en">Configuration</p><h2 id="sources">S</h2><p>Configuration</p>'
    )
    whole, fragments = english_messages()
    assert whole["Configuration"] == "site.configuration"
    assert text_nodes(markup, "benchmark") == ["B", "Configuration", "x"]
    assert english_in("es", ["Configuration"]) and not english_in("es", ["control"])
    assert english_in("ru", ["control"])
    piece = next(p for p, m in fragments.items() if m == "site.threads" or len(p) > 20)
    assert english_in("es", [f"1 {piece} 2"])


@pytest.mark.parametrize("lang", READER_LANGS)
def test_no_english_in_the_built_benchmark_sections_and_charts(
    built: site_support.BuiltSite, lang: str
) -> None:
    found = []
    pages = sorted((built.site / lang / "terms").glob("*/index.html"))
    assert any('id="benchmark"' in p.read_text(encoding="utf-8") for p in pages)
    for page in pages:
        markup = page.read_text(encoding="utf-8")
        texts = text_nodes(markup, "benchmark") + text_nodes(markup, "stacks")
        found += [f"{page.relative_to(built.site)}: {t}" for t in english_in(lang, texts)]
    assert any('id="stacks"' in p.read_text(encoding="utf-8") for p in pages)
    for name in ("compare", "stacking", "guide"):
        texts = text_nodes(built.page(lang, name).read_text(encoding="utf-8"), None)
        found += [f"{lang}/{name}/: {t}" for t in english_in(lang, texts)]
    charts = sorted((built.site / "assets" / "results" / lang).glob("*.svg"))
    assert charts
    for chart in charts:
        texts = text_nodes(chart.read_text(encoding="utf-8"), None)
        found += [f"{chart.relative_to(built.site)}: {t}" for t in english_in(lang, texts)]
    assert not found, "\n".join(found)


def _committed_results() -> list[str]:
    from glossary.site.results import COMPOSITES

    paths = (REPO / "reference" / "results").glob("*.json")
    return sorted(p.stem for p in paths if p.stem not in COMPOSITES)


@functools.cache
def _results() -> dict[str, dict]:
    from glossary.site.results import load_results

    return load_results(REPO / "reference" / "results", allow_nonstandard=True).by_slug


@pytest.mark.parametrize("lang", READER_LANGS)
@pytest.mark.parametrize("slug", _committed_results())
def test_no_english_in_the_benchmark_of_each_committed_result(slug: str, lang: str) -> None:
    from glossary.site.benchfigures import figure_charts
    from glossary.site.benchmark import benchmark_section
    from glossary.site.plots import result_chart

    result = _results()[slug]
    source = "\n".join(benchmark_section(slug, result, lang, "glossary bench x", []))
    extensions = ["attr_list", "admonition", "tables", "pymdownx.superfences"]
    configs = {"pymdownx.tabbed": {"alternate_style": True}}
    markup = markdown.markdown(
        source, extensions=[*extensions, "pymdownx.tabbed"], extension_configs=configs
    )
    found = [f"{lang}/terms/{slug}/: {t}" for t in english_in(lang, text_nodes(markup, None))]
    chart = result_chart(result, lang)
    if chart is not None:
        found += [f"{lang}/{slug}.svg: {t}" for t in english_in(lang, _svg_texts(chart))]
        found += [f"{lang}/{slug} caption: {t}" for t in english_in(lang, [chart.caption])]
    for figure in result["figures"]:  # the benchmark's own charts, redrawn from the result
        for drawn in figure_charts(result, figure, lang):
            texts = [*_svg_texts(drawn), drawn.caption, drawn.alt]
            found += [f"{lang}/{drawn.name}.svg: {t}" for t in english_in(lang, texts)]
    assert not found, "\n".join(found)


def _markup(source: str) -> str:
    """Markdown rendered with the site's extensions (no MkDocs)."""
    extensions = ["attr_list", "admonition", "tables", "pymdownx.superfences", "pymdownx.tabbed"]
    configs = {"pymdownx.tabbed": {"alternate_style": True}}
    return markdown.markdown(source, extensions=extensions, extension_configs=configs)


@pytest.mark.parametrize("lang", READER_LANGS)
def test_no_english_on_the_committed_stacking_page(lang: str) -> None:
    from glossary.loader import load_glossary, module_exists
    from glossary.site.context import Context
    from glossary.site.results import load_results
    from glossary.site.stacking import stacking_page
    from glossary.site.stackplots import stacking_charts

    loaded = load_results(REPO / "reference" / "results", allow_nonstandard=True)
    study = loaded.composites.get("stacking")
    if study is None:
        pytest.skip("the stacking study has no committed result yet")
    ctx = Context(glossary=load_glossary(), results=loaded, module_exists=module_exists)
    markup = _markup(stacking_page(lang, ctx))
    found = [f"{lang}/stacking/: {t}" for t in english_in(lang, text_nodes(markup, None))]
    for chart in stacking_charts(study, lang):
        found += [f"{lang}/{chart.name}.svg: {t}" for t in english_in(lang, _svg_texts(chart))]
        found += [f"{lang}/{chart.name} caption: {t}" for t in english_in(lang, [chart.caption])]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("lang", READER_LANGS)
def test_no_english_on_the_committed_guide_and_comparison_pages(lang: str) -> None:
    from glossary.loader import load_glossary, module_exists
    from glossary.site.compare import chart_points, compare_page, memory_first
    from glossary.site.compareplots import compare_charts
    from glossary.site.context import Context
    from glossary.site.guide import guide_page
    from glossary.site.results import load_results

    loaded = load_results(REPO / "reference" / "results", allow_nonstandard=True)
    ctx = Context(glossary=load_glossary(), results=loaded, module_exists=module_exists)
    found = []
    for name, page in (("guide", guide_page(lang, ctx)), ("compare", compare_page(lang, ctx))):
        texts = text_nodes(_markup(page), None)
        found += [f"{lang}/{name}/: {t}" for t in english_in(lang, texts)]
    for chart in compare_charts(chart_points(lang, ctx), lang, memory_first(ctx)):
        found += [f"{lang}/{chart.name}.svg: {t}" for t in english_in(lang, _svg_texts(chart))]
        found += [f"{lang}/{chart.name} caption: {t}" for t in english_in(lang, [chart.caption])]
    assert not found, "\n".join(found)


def _svg_texts(chart: object) -> list[str]:
    svg = chart.rendered().svg.decode("utf-8")  # type: ignore[attr-defined]
    return text_nodes(svg, None)


def test_the_allow_lists_name_real_messages() -> None:
    """Each allowed message exists, and an allowed same-word translation is the same word."""
    whole, _ = english_messages()
    for lang, msgid in SAME_IN_TRANSLATION:
        path = REPO / "glossary" / "locale" / lang / "LC_MESSAGES" / "results.po"
        with path.open("rb") as handle:
            catalog = read_po(handle)
        assert catalog[msgid].string in whole and whole[catalog[msgid].string] == msgid
    ids = set()
    for path in REPO.glob("reference/*/locale/en/LC_MESSAGES/*.po"):
        with path.open("rb") as handle:
            ids |= {m.id for m in read_po(handle) if isinstance(m.id, str)}
    assert ids >= NAME_FRAGMENTS, NAME_FRAGMENTS - ids
    assert ids >= PROPER_NAMES, PROPER_NAMES - ids
    for path in REPO.glob("reference/*/locale/*/LC_MESSAGES/*.po"):
        with path.open("rb") as handle:
            kept = {m.id: m.string for m in read_po(handle) if m.id in PROPER_NAMES}
        assert set(kept.values()) <= proper_names(), path  # the same name in every language
