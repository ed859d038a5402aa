"""Addresses of the generated pages and the links between them.

English is the default language and lives at the site root; Spanish and Russian under ``es/``
and ``ru/`` (mkdocs-static-i18n, ``docs_structure: folder``). Markdown links between pages of one
language are written to the ``.md`` source (MkDocs checks them); links that MkDocs cannot check
(into another language, or inside raw HTML) are computed here, relative to the page.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from glossary.collation import sort_key
from glossary.model import Entry
from glossary.site.markdown import escape_text


def page_url(path: str, lang: str, use_directory_urls: bool) -> str:
    """The URL of a page relative to the site root (en is the default language, at the root)."""
    prefix = "" if lang == "en" else f"{lang}/"
    return prefix + (f"{path}/" if use_directory_urls else f"{path}.html")


def relative_href(source: str, target: str, lang: str, use_directory_urls: bool) -> str:
    """The relative URL from page ``source`` to page ``target``, both in ``lang``."""
    return cross_language_href(source, lang, lang, use_directory_urls, target)


def cross_language_href(
    path: str, lang: str, other: str, use_directory_urls: bool, target: str | None = None
) -> str:
    """The relative URL from page ``path`` in ``lang`` to page ``target`` (default: the same
    page) in ``other``."""
    here = page_url(path, lang, use_directory_urls)
    there = page_url(target or path, other, use_directory_urls)
    base = here.rstrip("/") if use_directory_urls else posixpath.dirname(here)
    rel = posixpath.relpath(there, base or ".")
    return rel + "/" if use_directory_urls else rel


def term_link(entry: Entry, lang: str, prefix: str = "") -> str:
    """A Markdown link to an entry's page, named by its term in ``lang``."""
    return f"[{escape_text(entry.term(lang))}]({prefix}{entry.slug}.md)"


def sorted_entries(entries: Iterable[Entry], lang: str) -> list[Entry]:
    """``entries`` in the alphabetical order of ``lang`` (ICU collation)."""
    key = sort_key(lang)
    return sorted(entries, key=lambda e: key(e.term(lang)))
