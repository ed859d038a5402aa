"""MkDocs hooks of the site (``hooks:`` in ``mkdocs.yml``): generate the pages before a build.

:func:`on_config` runs :func:`glossary.site.generate.generate` before MkDocs collects the files
of the docs directory. That timing matters: mkdocs-static-i18n sorts files into languages in its
``on_files`` step and only sees files that exist on disk. The i18n plugin runs one build per
language, so ``on_config`` is called three times per ``mkdocs build``; generation runs again only
when an input changed (entries, results, the UI and result catalogs or the environment variables
that point elsewhere), and it writes only files whose content changed, so ``mkdocs serve`` does
not loop.

Invalid entries or result files stop the build with one line per problem; a result figure that
is missing is logged as a warning, which ``mkdocs build --strict`` turns into a failure.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

from glossary.loader import GlossaryError
from glossary.schema import LANGS
from glossary.site.generate import ENTRIES_ENV, generate
from glossary.site.results import FIGURES_DIR, SiteGenError, results_dir

log = logging.getLogger("mkdocs.hooks.glossary")
_last_fingerprint: tuple[Any, ...] | None = None


def _stats(directory: Path) -> tuple[tuple[str, int, int], ...]:
    if not directory.is_dir():
        return ()
    return tuple(
        (str(p), p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    )


def _fingerprint(docs_dir: Path, use_directory_urls: bool) -> tuple[Any, ...]:
    """What the generated pages depend on, cheap to compute."""
    package = Path(__file__).resolve().parent
    entries = Path(os.environ.get(ENTRIES_ENV) or package / "entries")
    return (
        str(docs_dir),
        use_directory_urls,
        _stats(entries),
        _stats(results_dir()),
        _stats(package / "locale"),
        *(_stats(path) for path in sorted(package.parent.glob("reference/*/locale"))),
        _stats(docs_dir / FIGURES_DIR),
        *(_stats(docs_dir / lang) for lang in LANGS),
    )


def heading_ids(config: MkDocsConfig) -> None:
    """Give headings ids in their own script: Python-Markdown's default slug drops every
    non-ASCII letter, so a Russian heading became ``#_1``; pymdownx's slugify keeps Cyrillic and
    accented letters ("как-пользоваться-сайтом", "qué-usar")."""
    from pymdownx.slugs import slugify

    toc = config.mdx_configs.setdefault("toc", {})
    toc.setdefault("slugify", slugify(case="lower"))


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Generate term, category, A-Z, guide and comparison pages into the docs directory."""
    global _last_fingerprint
    heading_ids(config)
    docs_dir = Path(config.docs_dir)
    fingerprint = _fingerprint(docs_dir, config.use_directory_urls)
    if fingerprint == _last_fingerprint:
        return config
    try:
        report = generate(docs_dir, use_directory_urls=config.use_directory_urls)
    except SiteGenError as exc:  # one line, even if a file name holds a line break
        line = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(exc))
        raise PluginError(f"glossary pages: {line}") from None
    except GlossaryError as exc:
        raise PluginError(f"glossary pages: invalid entries:\n{exc}") from None
    for problem in report.problems:
        log.warning("glossary pages: %s", problem)
    log.info(
        "glossary pages: %d written, %d unchanged, %d removed",
        len(report.written),
        report.unchanged,
        len(report.removed),
    )
    _last_fingerprint = _fingerprint(docs_dir, config.use_directory_urls)
    return config


UNSEARCHED_PAGES = ("index-a-z.md",)
"""Generated pages kept out of the search index: the A-Z index only repeats every term and alias
as a link to its page, which the same query finds first."""
UNSEARCHED_FOLDERS = ("categories",)
"""Generated folders kept out of the search index: a category page repeats its members'
definitions and notes, which the same query finds on the members' own pages first."""


def on_page_markdown(markdown: str, page: Any, config: MkDocsConfig, files: Any) -> str:
    """Keep the pages of :data:`UNSEARCHED_PAGES` out of the search index (Material reads
    ``search.exclude`` from the page's metadata)."""
    parts = page.file.src_uri.split("/")
    if parts[-1] in UNSEARCHED_PAGES or any(p in UNSEARCHED_FOLDERS for p in parts[:-1]):
        search = page.meta.get("search") if isinstance(page.meta.get("search"), dict) else {}
        page.meta["search"] = {**search, "exclude": True}
    return markdown


def on_page_content(html: str, page: Any, config: MkDocsConfig, files: Any) -> str:
    """Wrap every table in a named, keyboard-focusable scroll region (WCAG 2.1.1: a region that
    scrolls must be reachable without a mouse), labelled in the page's language; on a code
    documentation page, mark mkdocstrings' English output as English (:func:`mark_english`)."""
    from glossary.resulttext import ResultText

    uri = page.file.src_uri
    lang = uri.split("/", 1)[0] if uri.split("/", 1)[0] in LANGS else "en"
    label = ResultText("results", lang).message("site.table-region")
    opening = (
        f'<div class="gl-table" role="region" tabindex="0" aria-label="{label}" '
        "data-search-exclude><table"
    )
    html = html.replace("<table", opening).replace("</table>", "</table></div>")
    html = _unsearched(html)
    if not _API_PAGE.match(uri):
        return html
    html = nest_headings(html)
    return mark_english(html) if lang != "en" else html


_TABS = re.compile(r'(<div class="tabbed-set[^"]*")')


def _unsearched(html: str) -> str:
    """Keep the content tabs of measurements out of the search index, like the tables (their
    region is marked where it is written): their cells are numbers and configuration names,
    which a reader does not search for, and they made up much of the index every reader
    downloads."""
    return _TABS.sub(r"\1 data-search-exclude", html)


_API_PAGE = re.compile(r"^(?:[a-z]{2}/)?api/[^/]+\.md$")
_DOC_OBJECT = '<div class="doc doc-object'


def mark_english(html: str) -> str:
    """Mark everything from mkdocstrings' first object to the end of the page ``lang="en"``, so
    that a screen reader reads the English docstrings, signatures and source as English on a
    Spanish or Russian page (WCAG 3.1.2, language of parts)."""
    start = html.find(_DOC_OBJECT)
    if start < 0:
        return html
    return f'{html[:start]}<div lang="en" class="gl-code-docs">{html[start:]}</div>'


_HEADING = re.compile(r"<(/?)h([1-6])\b")


def nest_headings(html: str) -> str:
    """Close every jump of two or more heading levels on a code documentation page.

    mkdocstrings places a docstring's sections relative to its object's heading, so a docstring
    whose first section is underlined with ``-`` (Markdown's second level) lands two levels
    below its object, which breaks the page outline a screen reader follows (WCAG 1.3.1). From
    a jump ``a -> b`` (``b > a + 1``) on, every heading is raised by ``b - a - 1`` until one at
    level ``a`` or above ends that run; opening and closing tags move together.
    """
    out: list[str] = []
    last, base, shift = 0, 0, 0  # last opened level, the level the jump started from, the shift
    pos = 0
    for m in _HEADING.finditer(html):
        closing, level = m.group(1) == "/", int(m.group(2))
        if not closing:
            if shift and level <= base:
                shift = 0
            if not shift and last and level > last + 1:
                base, shift = last, level - last - 1
            last = level - shift
        out += [html[pos : m.start()], f"<{m.group(1)}h{level - shift}"]
        pos = m.end()
    return "".join([*out, html[pos:]])


PAGE_WEIGHT = 120_000
"""Bytes of HTML a term page may weigh: a reader on a phone gets the definition, the measured
part and its figures without the code documentation, which has its own page."""
_TERM_PAGE = re.compile(r"^(?:[a-z]{2}/)?terms/[^/]+\.md$")


def on_post_page(output: str, page: Any, config: MkDocsConfig) -> str:
    """Hold every term page (each technique's included) to `PAGE_WEIGHT`: a heavier one is a
    warning naming the page and its weight, which ``mkdocs build --strict`` turns into a failure,
    so the rule holds on every build of the committed results, not only on the test fixture."""
    if _TERM_PAGE.match(page.file.src_uri):
        size = len(output.encode("utf-8"))
        if size >= PAGE_WEIGHT:
            log.warning(
                "%s: %d bytes of HTML, over the %d a term page may weigh",
                page.file.src_uri,
                size,
                PAGE_WEIGHT,
            )
    return output


@event_priority(-100)  # last: after mkdocs-static-i18n has built and indexed every language
def on_post_build(config: MkDocsConfig) -> None:
    """Write the search index compact and once more per language, and log their sizes (see
    :mod:`glossary.site.search`: the index is shipped as the pages read, folded in the reader's
    browser, and a page fetches its own language's file first)."""
    from glossary.i18n import DEFAULT_LANG
    from glossary.site.search import compact_index, index_report, split_index

    site_dir = Path(config.site_dir)
    path = site_dir / "search" / "search_index.json"
    if path.is_file():
        compact_index(path)
        report = index_report(site_dir)
        log.info("glossary search: %d documents, %d bytes", report.documents, report.size)
        parts = split_index(site_dir, LANGS, DEFAULT_LANG)
        sizes = ", ".join(f"{lang} {file.stat().st_size}" for lang, file in sorted(parts.items()))
        log.info("glossary search, one file per language: %s bytes", sizes)
