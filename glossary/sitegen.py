"""Generate the site's pages from the glossary entries and the benchmark results.

The site (MkDocs + Material + mkdocs-static-i18n, ``mkdocs.yml``) has hand-written home pages;
everything else is written here, once per language of :data:`glossary.schema.LANGS`:

* ``<lang>/terms/<slug>.md``: one page per entry (kept out of the navigation);
* ``<lang>/categories/index.md`` and ``<lang>/categories/<category>.md``;
* ``<lang>/index-a-z.md``: every term and alias, bucketed and sorted by the language's collation
  (ICU's alphabetic index, so ``Ñ`` is its own letter in Spanish and ``Ё`` files under ``Е``);
* ``<lang>/compare.md``: the headline figures of every technique that has results;
* ``assets/results/<figure>``: the figures named by the result files.

The generator writes real files, and only those whose content changed, so that ``mkdocs serve``
does not rebuild in a loop; files it generated before that are no longer wanted (a deleted entry)
are removed. :mod:`glossary.mkdocs_hooks` calls :func:`generate` from MkDocs' ``on_config``,
before files are collected: mkdocs-static-i18n sorts files into languages at ``on_files`` and
drops in-memory generated files, which is why pages are not created with ``File.generated``.

Security: entry text is data, not markup. Markdown in definitions, notes and explanations is
rendered, but raw HTML, attribute lists (``{: onclick=...}``), entity tricks and links with
schemes other than http, https and mailto are neutralised before the text reaches Markdown
(:func:`escape_markdown`); single-line fields (terms, aliases, titles, names) are escaped
completely (:func:`escape_text`). Text inside fenced code blocks and code spans is left alone,
since Markdown escapes it itself. Limitation: an *indented* code block in an entry shows escaped
entities; entries use fenced blocks.

Numbers are formatted for the page's locale with Babel (``1,71`` in es and ru, ``1.71`` in en);
labels go through the gettext catalogs of :mod:`glossary.i18n` (run ``scripts/i18n.py extract
update`` after changing one). The results directory defaults to ``reference/results`` and can be
changed with the environment variable ``GLOSSARY_RESULTS_DIR`` (the browser tests use a
fixture); ``GLOSSARY_ENTRIES_DIR`` does the same for the entries.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from glossary import siteresults
from glossary.model import Entry, Glossary, Source
from glossary.schema import CATEGORIES, LANGS
from glossary.siteresults import Results

RESULTS_ENV = "GLOSSARY_RESULTS_DIR"
ENTRIES_ENV = "GLOSSARY_ENTRIES_DIR"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS_DIR = REPO_ROOT / "reference" / "results"
GENERATED_DIRS = ("terms", "categories")
GENERATED_FILES = ("index-a-z.md", "compare.md", "downloads.md")
FIGURES_DIR = "assets/results"
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
LANG_NAMES = {"es": "Español", "ru": "Русский", "en": "English"}

Translate = Callable[[str], str]


class SiteGenError(Exception):
    """A problem that stops generation (unreadable results, bad figure names)."""


# --------------------------------------------------------------------------------------------
# Escaping


_ENTITY_RE = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_TEXT_SPECIALS_RE = re.compile(r"([\\`*_\[\]{}|#!])")
_FENCE_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_AUTOLINK_RE = re.compile(r"<(https?://[^\s<>\"']+)>")
_INLINE_LINK_RE = re.compile(r"\]\(([^)]*)\)")
_REF_DEF_RE = re.compile(r"^(\s{0,3})\[([^\]]+)\]:[ \t]*(\S+)")
_BLOCKQUOTE_RE = re.compile(r"^(\s{0,3}(?:>[ \t]?)+)")
_SCHEME_RE = re.compile(r"^<?([^/?#]*?):")


def escape_text(text: str) -> str:
    """Escape a single-line field so that Markdown shows it verbatim and emits no HTML."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _TEXT_SPECIALS_RE.sub(r"\\\1", " ".join(text.split()))


def _unsafe_target(target: str) -> bool:
    """Whether a link target has a scheme other than http, https or mailto.

    Browsers ignore tabs, newlines and spaces inside a scheme (``java\\tscript:``), so those are
    removed before the scheme is read.
    """
    squeezed = re.sub(r"[\s\x00-\x1f]+", "", target).lower()
    match = _SCHEME_RE.match(squeezed)
    return bool(match) and match.group(1) not in SAFE_SCHEMES


def _escape_prose(line: str) -> str:
    """Escape one line of Markdown prose outside code (see :func:`escape_markdown`)."""
    quote = _BLOCKQUOTE_RE.match(line)
    prefix = quote.group(1) if quote else ""
    body = line[len(prefix) :]
    autolinks: list[str] = []

    def keep_autolink(m: re.Match[str]) -> str:
        autolinks.append(m.group(0))
        return f"\x00{len(autolinks) - 1}\x00"

    body = _AUTOLINK_RE.sub(keep_autolink, body)
    body = _ENTITY_RE.sub("&amp;", body)
    body = body.replace("<", "&lt;").replace(">", "&gt;").replace("{", "&#123;")
    body = _INLINE_LINK_RE.sub(
        lambda m: "]&#40;" + m.group(1) + ")" if _unsafe_target(m.group(1)) else m.group(0), body
    )
    body = re.sub("\x00(\\d+)\x00", lambda m: autolinks[int(m.group(1))], body)
    ref = _REF_DEF_RE.match(body)
    if ref and _unsafe_target(ref.group(3)):
        body = body.replace("[", "&#91;", 1)
    return prefix + body


def _escape_outside_code_spans(line: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN_RE.finditer(line):
        out.append(_escape_prose(line[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_escape_prose(line[pos:]))
    return "".join(out)


def escape_markdown(text: str) -> str:
    """Neutralise raw HTML and unsafe Markdown in an entry's Markdown field.

    Outside fenced code blocks and code spans: ``<`` and ``>`` become entities (blockquote
    markers at the start of a line survive), entity-like ``&...;`` sequences are escaped so they
    print literally, ``{`` is escaped so ``attr_list`` cannot add attributes, and links whose
    scheme is not http, https or mailto lose their link syntax. ``<https://...>`` autolinks
    stay. Fence info strings are reduced to a bare language name (no attributes).
    """
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        m = _FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group("fence")
            lang = re.match(r"\s*([\w+-]*)", m.group("info"))
            lines.append(f"{m.group('indent')}{fence}{lang.group(1) if lang else ''}")
        elif fence is not None:
            closing = m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence)
            if closing and not m.group("info").strip():
                fence = None
            lines.append(line)
        else:
            lines.append(_escape_outside_code_spans(line))
    if fence is not None:
        lines.append(fence)
    return "\n".join(lines)


def safe_url(url: str) -> str | None:
    """An http(s) URL made safe for a Markdown link target, or None for other schemes.

    Characters that could end the link or start markup (spaces, quotes, brackets, parentheses,
    backticks) are percent-encoded.
    """
    if _unsafe_target(url) or not re.match(r"(?i)^https?://", url.strip()):
        return None
    return quote(url.strip(), safe=":/?#@!$&*+,;=%~-._[]'")


def heading(level: int, title: str, anchor: str) -> str:
    """A Markdown heading with an explicit id (attr_list), so anchors do not depend on the
    language: Russian titles would otherwise get ``_1``-style ids."""
    return f"{'#' * level} {title} {{#{anchor}}}"


def admonition(kind: str, title: str) -> str:
    """The first line of an admonition block with a (translated, trusted) title."""
    return f'!!! {kind} "{title}"'


def table_row(cells: Iterable[str]) -> str:
    """A Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def indent(text: str, prefix: str = "    ") -> str:
    """Indent every non-empty line (for admonition bodies)."""
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def html_attr(text: str) -> str:
    """Escape ``text`` for an HTML attribute or element written by the generator itself."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


# --------------------------------------------------------------------------------------------
# Numbers, dates, translations


def format_number(value: float | int, lang: str) -> str:
    """Format a measured value for ``lang`` with Babel: four significant digits (at least the
    integer part), grouped and with the decimal sign of the locale (``1,71`` in es and ru)."""
    from babel.numbers import format_decimal

    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "—"
    if isinstance(value, int):
        return format_decimal(value, locale=lang)
    magnitude = math.floor(math.log10(abs(value))) if value else 0
    rounded = round(value, max(0, min(9, 3 - magnitude)))
    return format_decimal(rounded, locale=lang, decimal_quantization=False)


def format_date(iso: str, lang: str) -> str:
    """Format an ISO-8601 timestamp as a localized date and UTC time; pass unknown text on."""
    from babel.dates import format_datetime

    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    text = format_datetime(when, format="medium", tzinfo=when.tzinfo, locale=lang)
    return f"{text} UTC" if when.utcoffset() is not None and not when.utcoffset() else text


def translator(lang: str) -> Translate:
    """The gettext function of ``lang`` from :mod:`glossary.i18n`."""
    from glossary import i18n

    t: Any = i18n.translator(lang)
    return t.gettext if hasattr(t, "gettext") else t


# --------------------------------------------------------------------------------------------
# Results


def results_dir() -> Path:
    """The results directory: ``$GLOSSARY_RESULTS_DIR`` or ``reference/results``."""
    override = os.environ.get(RESULTS_ENV)
    return Path(override).resolve() if override else DEFAULT_RESULTS_DIR


def load_results(directory: Path) -> Results:
    """Read every ``<slug>.json`` in ``directory`` through the shared result schema."""
    try:
        return siteresults.load_results(directory)
    except siteresults.ResultError as exc:
        raise SiteGenError(str(exc)) from None


# --------------------------------------------------------------------------------------------
# Page pieces


@dataclass
class Context:
    """Everything a page builder needs."""

    glossary: Glossary
    results: Results
    module_exists: Callable[[str], bool]
    use_directory_urls: bool = True
    problems: list[str] = field(default_factory=list)


def _term_link(entry: Entry, lang: str, prefix: str = "") -> str:
    return f"[{escape_text(entry.term(lang))}]({prefix}{entry.slug}.md)"


def _category_label(category: str, lang: str) -> str:
    return CATEGORIES[category][lang]


def cite(source: Source, lang: str, _: Translate) -> str:
    """A citation: authors (year). *Title*. Venue. arXiv/DOI links."""
    authors = list(source.authors)
    names = ", ".join(escape_text(a) for a in authors[:6])
    if len(authors) > 6 or source.authors_truncated:
        names += ", " + _("et al.")
    years = str(source.year)
    if source.arxiv_year is not None and source.arxiv_year != source.year:
        years += f"; arXiv {source.arxiv_year}"
    parts = [f"{names} ({years}). *{escape_text(source.title)}*."]
    if source.venue:
        parts.append(f"{escape_text(source.venue)}.")
    if source.arxiv:
        parts.append(f"arXiv: [{source.arxiv}](https://arxiv.org/abs/{source.arxiv}).")
    doi_url = safe_url(f"https://doi.org/{source.doi}") if source.doi else None
    if doi_url:
        parts.append(f"DOI: [{escape_text(source.doi or '')}]({doi_url}).")
    url = safe_url(source.url) if source.url else None
    if url and not source.arxiv and not source.doi:
        parts.append(f"[{escape_text(source.url or '')}]({url})")
    return " ".join(parts)


def _language_links(entry: Entry, lang: str, ctx: Context) -> str:
    """Links to the same term in the other languages.

    They are HTML, not Markdown links: mkdocs-static-i18n builds each language with only that
    language's files, so a Markdown link into another language could not be resolved.
    """
    links = []
    for other in LANGS:
        if other == lang:
            continue
        href = _cross_language_href(f"terms/{entry.slug}", lang, other, ctx.use_directory_urls)
        links.append(
            f'<a href="{href}" hreflang="{other}" lang="{other}">'
            f"{LANG_NAMES[other]}: {html_attr(entry.term(other))}</a>"
        )
    return '<p class="gl-languages" data-search-exclude>' + " · ".join(links) + "</p>"


def _page_url(path: str, lang: str, use_directory_urls: bool) -> str:
    """The URL of a page relative to the site root (en is the default language, at the root)."""
    prefix = "" if lang == "en" else f"{lang}/"
    return prefix + (f"{path}/" if use_directory_urls else f"{path}.html")


def _cross_language_href(path: str, lang: str, other: str, use_directory_urls: bool) -> str:
    """The relative URL from page ``path`` in ``lang`` to the same page in ``other``."""
    here = _page_url(path, lang, use_directory_urls)
    there = _page_url(path, other, use_directory_urls)
    base = here.rstrip("/") if use_directory_urls else posixpath.dirname(here)
    rel = posixpath.relpath(there, base or ".")
    return rel + "/" if use_directory_urls else rel


def _run_it(entry: Entry, _: Translate) -> list[str]:
    assert entry.reference is not None
    return [
        heading(2, _("Run it"), "run-it"),
        "",
        _("Run the reference implementation's demonstration from the repository root:"),
        "",
        "```sh",
        f".venv/bin/python -m {entry.reference.module}",
        "```",
        "",
        _("Add `--help` for its options and `--bench` for the full benchmark."),
        "",
    ]


def _api(entry: Entry, _: Translate, ctx: Context) -> list[str]:
    assert entry.reference is not None
    lines = [heading(2, _("Reference implementation"), "api"), ""]
    module = entry.reference.module
    if entry.reference.implemented and ctx.module_exists(module):
        lines += [f"::: {module}", ""]
    else:
        lines += [f"`{module}`: " + _("implementation planned."), ""]
    return lines


def benchmark_section(entry: Entry, lang: str, _: Translate, ctx: Context) -> list[str]:
    """The measured results of a technique (see :mod:`glossary.siteresults`)."""
    return siteresults.benchmark_section(
        entry.slug,
        ctx.results.by_slug.get(entry.slug),
        lang,
        FIGURES_DIR,
        f".venv/bin/glossary bench {entry.slug}",
    )


def term_page(entry: Entry, lang: str, ctx: Context) -> str:
    """The Markdown page of one entry in one language."""
    _ = translator(lang)
    text = entry.text(lang)
    category = _category_label(entry.category, lang)
    kind = _("Technique") if entry.is_technique else _("Concept")
    lines = [
        "---",
        # The explicit title keeps Material's <title> safe: it unescapes a heading-derived title.
        f"title: {json.dumps(html_attr(text.term), ensure_ascii=False)}",
        "---",
        "",
        f"# {escape_text(text.term)}",
        "",
        _language_links(entry, lang, ctx),
        "",
        f"{kind} · [{escape_text(category)}](../categories/{entry.category}.md)",
        "",
    ]
    if text.aliases:
        aliases = ", ".join(escape_text(a) for a in text.aliases)
        lines += ["**" + _("Also known as") + f":** {aliases}", ""]
    lines += [heading(2, _("Definition"), "definition"), "", escape_markdown(text.definition), ""]
    if text.note:
        lines += [admonition("note", _("Accuracy note")), ""]
        lines += [indent(escape_markdown(text.note)), ""]
    lines += [
        heading(2, _("Explanation"), "explanation"),
        "",
        escape_markdown(text.explanation),
        "",
    ]
    if entry.reference is not None:
        lines += _run_it(entry, _)
        lines += benchmark_section(entry, lang, _, ctx)
    if entry.sources:
        lines += [heading(2, _("Sources"), "sources"), ""]
        lines += [f"1. {cite(s, lang, _)}" for s in entry.sources] + [""]
    if entry.libraries:
        lines += [heading(2, _("Libraries"), "libraries"), ""]
        for lib in entry.libraries:
            api = lib.api.replace("`", "")
            url = safe_url(lib.url) if lib.url else None
            code = f"[`{api}`]({url})" if url else f"`{api}`"
            lines.append(f"- {escape_text(lib.name)}: {code}")
        lines.append("")
    related = [ctx.glossary[s] for s in entry.related if s in ctx.glossary]
    if related:
        lines += [heading(2, _("Related terms"), "related"), ""]
        lines += [f"- {_term_link(r, lang)}" for r in _sorted(related, lang)] + [""]
    if entry.reference is not None:
        lines += _api(entry, _, ctx)
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------------------------
# Index pages


def _sorted(entries: Iterable[Entry], lang: str) -> list[Entry]:
    from glossary.collation import sort_key

    key = sort_key(lang)
    return sorted(entries, key=lambda e: key(e.term(lang)))


def _bucket_id(label: str) -> str:
    if re.fullmatch(r"[A-Za-z]", label):
        return f"letter-{label.lower()}"
    return "letter-" + "-".join(f"u{ord(c):04x}" for c in label)


def alphabetic_buckets(names: list[tuple[str, Any]], lang: str) -> list[tuple[str, list[Any]]]:
    """Group ``(name, payload)`` pairs under the letters of ``lang``'s alphabet (ICU), in
    collation order; Latin letters follow in es and ru for Latin-script names."""
    import icu

    from glossary.collation import sort_key

    index = icu.AlphabeticIndex(icu.Locale(lang))
    if lang != "en":
        index.addLabels(icu.Locale.getEnglish())
    key = sort_key(lang)
    for i, (name, _payload) in enumerate(names):
        index.addRecord(name, i)
    buckets: list[tuple[str, list[Any]]] = []
    while index.nextBucket():
        items = []
        while index.nextRecord():
            items.append(names[index.recordData])
        if items:
            items.sort(key=lambda pair: key(pair[0]))
            buckets.append((index.bucketLabel, [payload for _name, payload in items]))
    return buckets


def az_page(lang: str, ctx: Context) -> str:
    """Every term and alias of ``lang``, bucketed by letter, in ``lang``'s collation."""
    _ = translator(lang)
    names: list[tuple[str, Any]] = []
    for entry in ctx.glossary:
        text = entry.text(lang)
        names.append((text.term, (text.term, entry, True)))
        names += [(alias, (alias, entry, False)) for alias in text.aliases if alias != text.term]
    buckets = alphabetic_buckets(names, lang)
    lines = [
        "# " + _("A–Z index"),
        "",
        _("Every term and its other names, in alphabetical order."),
        "",
    ]
    letters = [label for label, _items in buckets]
    lines.append(" · ".join(f"[{escape_text(x)}](#{_bucket_id(x)})" for x in letters))
    lines.append("")
    for label, items in buckets:
        lines += [f"## {escape_text(label)} {{#{_bucket_id(label)}}}", ""]
        for name, entry, is_term in items:
            if is_term:
                lines.append(f"- [{escape_text(name)}](terms/{entry.slug}.md)")
            else:
                target = _term_link(entry, lang, "terms/")
                lines.append(f"- *{escape_text(name)}* → {target}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def category_page(category: str, lang: str, ctx: Context) -> str:
    """The entries of one category: techniques first, then concepts."""
    _ = translator(lang)
    entries = ctx.glossary.in_category(category)
    lines = [f"# {escape_text(_category_label(category, lang))}", ""]
    for kind, title, anchor in (
        ("technique", _("Techniques"), "techniques"),
        ("concept", _("Concepts"), "concepts"),
    ):
        group = _sorted((e for e in entries if e.kind == kind), lang)
        if not group:
            continue
        lines += [f"## {title} {{#{anchor}}}", ""]
        for entry in group:
            definition = " ".join(escape_markdown(entry.text(lang).definition).split())
            lines.append(f"- {_term_link(entry, lang, '../terms/')}: {definition}")
        lines.append("")
    if not entries:
        lines += [_("No entries in this category yet."), ""]
    return "\n".join(lines).rstrip() + "\n"


def categories_index(lang: str, ctx: Context) -> str:
    """All categories with their number of entries."""
    _ = translator(lang)
    lines = ["# " + _("Categories"), ""]
    for category in CATEGORIES:
        count = len(ctx.glossary.in_category(category))
        label = escape_text(_category_label(category, lang))
        lines.append(f"- [{label}]({category}.md) ({count})")
    return "\n".join(lines) + "\n"


def compare_page(lang: str, ctx: Context) -> str:
    """The headline of every technique's result, side by side, with intervals and aim states."""
    from glossary.resulttext import ResultText

    _ = translator(lang)
    text = ResultText("results", lang)
    lines = [
        "# " + _("Comparison of techniques"),
        "",
        text.message("site.compare-intro"),
        "",
        table_row(
            [
                _("Technique"),
                text.message("site.speedup"),
                text.message("site.limit"),
                text.message("site.quality-ratio"),
                text.message("site.aims"),
            ]
        ),
        "|---|---:|---:|---:|---|",
    ]
    missing = []
    for entry in _sorted(ctx.glossary.techniques(), lang):
        result = ctx.results.by_slug.get(entry.slug)
        link = _term_link(entry, lang, "terms/")
        if result is None:
            missing.append(link)
            continue
        lines.append(table_row([link, *siteresults.compare_cells(result, lang)]))
    lines.append("")
    if missing:
        lines += [_("No measured results yet") + ": " + ", ".join(missing) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"


@dataclass
class Report:
    """What :func:`generate` did."""

    written: list[Path] = field(default_factory=list)
    unchanged: int = 0
    removed: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def write_if_changed(path: Path, text: str | bytes, report: Report) -> None:
    """Write ``path`` only if its content differs (keeps ``mkdocs serve`` from looping)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if path.is_file() and path.read_bytes() == data:
        report.unchanged += 1
        return
    from glossary.safewrite import atomic_write_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)
    report.written.append(path)


def _remove_stale(directory: Path, keep: set[Path], report: Report) -> None:
    if not directory.is_dir():
        return
    for path in sorted(directory.iterdir()):
        if path.is_file() and path not in keep:
            path.unlink()
            report.removed.append(path)


def pages(ctx: Context) -> dict[str, str]:
    """Every generated page, keyed by its path relative to the docs directory."""
    out: dict[str, str] = {}
    for lang in LANGS:
        for entry in ctx.glossary:
            out[f"{lang}/terms/{entry.slug}.md"] = term_page(entry, lang, ctx)
        out[f"{lang}/categories/index.md"] = categories_index(lang, ctx)
        for category in CATEGORIES:
            out[f"{lang}/categories/{category}.md"] = category_page(category, lang, ctx)
        out[f"{lang}/index-a-z.md"] = az_page(lang, ctx)
        out[f"{lang}/compare.md"] = compare_page(lang, ctx)
    return out


def _copy_figures(ctx: Context, docs_dir: Path, report: Report) -> set[Path]:
    kept: set[Path] = set()
    for slug, result in sorted(ctx.results.by_slug.items()):
        for figure in result["figures"]:
            name = figure["file"]
            source = ctx.results.directory / name
            if not source.is_file():
                report.problems.append(
                    f"{ctx.results.directory / slug}.json: figure {name} is missing"
                )
                continue
            target = docs_dir / FIGURES_DIR / name
            write_if_changed(target, source.read_bytes(), report)
            kept.add(target)
    return kept


def generate(
    docs_dir: Path,
    *,
    entries_dir: Path | None = None,
    results: Path | None = None,
    use_directory_urls: bool = True,
) -> Report:
    """Write every generated page and figure into ``docs_dir``; remove stale generated files.

    ``entries_dir`` defaults to ``$GLOSSARY_ENTRIES_DIR`` or the package's entries, ``results``
    to :func:`results_dir`. Raises :class:`glossary.loader.GlossaryError` for invalid entries
    and :class:`SiteGenError` for unreadable results.
    """
    from glossary.loader import load_glossary, module_exists

    if entries_dir is None and os.environ.get(ENTRIES_ENV):
        entries_dir = Path(os.environ[ENTRIES_ENV])
    glossary = load_glossary(entries_dir)
    ctx = Context(
        glossary=glossary,
        results=load_results(results if results is not None else results_dir()),
        module_exists=module_exists,
        use_directory_urls=use_directory_urls,
    )
    report = Report()
    for slug in ctx.results.by_slug:
        entry = glossary.get(slug)
        if entry is None or not entry.is_technique:
            report.problems.append(f"{ctx.results.directory / slug}.json: no technique '{slug}'")
    from glossary import sitedownloads

    sizes, downloads = sitedownloads.write(
        glossary, docs_dir, lambda path, data: write_if_changed(path, data, report)
    )
    wanted = {docs_dir / rel: text for rel, text in pages(ctx).items()}
    for lang in LANGS:
        wanted[docs_dir / lang / "downloads.md"] = sitedownloads.page(lang, sizes)
    for path, text in wanted.items():
        write_if_changed(path, text, report)
    _remove_stale(docs_dir / sitedownloads.DOWNLOADS_DIR, downloads, report)
    for lang in LANGS:
        for sub in GENERATED_DIRS:
            _remove_stale(docs_dir / lang / sub, set(wanted), report)
    figures = _copy_figures(ctx, docs_dir, report)
    _remove_stale(docs_dir / FIGURES_DIR, figures, report)
    return report
