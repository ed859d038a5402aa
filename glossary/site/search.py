"""Accent-blind site search, with the same ranking with or without accents.

Material for MkDocs searches a lunr index (``search/search_index.json``) built from the pages'
text as written. The site ships that index unchanged: no folded copy of any word, so it stays
small and a result's snippet never shows a folded keyword. The folding happens in the reader's
browser (``site_src/assets/javascripts/glossary-search.js``): when Material hands the index to
its search worker, every title and text is folded letter for letter, and so is every query, so
"destilacion" and "destilación", "елка" and "ёлка" meet the same tokens and get the same scores.

:func:`fold_text` is that fold in Python, for the tests: the rules of
:func:`glossary.normalize.normalize` (accents stripped, ``ё`` -> ``е``, ``й`` kept), applied
one UTF-16 unit at a time so that a folded string has the length of the original; and the
two spellings of the Russian loanword "cache", ``кэш`` and ``кеш``, are one. That is what
lets the browser show the original text at the positions the worker highlighted in the folded
one.

One index file per language (:func:`split_index`): Material's search fetches
``search/search_index.json`` as soon as a page loads and its worker builds a lunr index from
every document before it answers, which takes time in proportion to the text. The browser asks
for ``search/search_index.<lang>.json`` instead, the page's language's documents alone (a third
of the bytes and of the build), and fetches the other languages' files only once search is
ready (``glossary-search.js``, point 5). Each file keeps the whole index's ``config`` (the same
languages, separator and pipeline), so a document is tokenized and scored as before; the whole
``search_index.json`` stays, for Material's own fallback and the site's checks. Pitfall: a
document's language is the first segment of its ``location`` when that is a language's folder
(``es/terms/poda/``), the default language otherwise (the site's root, ``terms/poda/``), the
rule ``languageOf`` applies in the browser.

The technique pages' API reference (:mod:`glossary.site.terms`) is English code documentation on
pages of its own, which stay out of the index (``search: exclude``): :func:`index_report` says
how large the index a reader downloads is and whether any such page slipped in.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

_KEPT = frozenset("йЙ")


def fold_char(char: str) -> str:
    """One character folded: a base letter followed only by combining marks in its canonical
    decomposition becomes the base letter (``á`` -> ``a``, ``ё`` -> ``е``), except ``й``."""
    if char.isascii() or char in _KEPT:
        return char
    parts = unicodedata.normalize("NFD", char)
    if len(parts) > 1 and all(unicodedata.category(p).startswith("M") for p in parts[1:]):
        return parts[0]
    return char


_KESH = re.compile(r"([кК])([эЭ])([шШ])")
"""Russian writes the loanword "cache" both ways, ``кэш`` and ``кеш``: one spelling for search."""


def fold_text(text: str) -> str:
    """``text`` folded character by character (and ``кэш`` as ``кеш``); always as long as
    ``text``."""
    folded = "".join(fold_char(c) for c in text)
    return _KESH.sub(lambda m: m[1] + ("е" if m[2] == "э" else "Е") + m[3], folded)


def compact_index(path: Path) -> bool:
    """Rewrite the index as UTF-8 without ``\\uXXXX`` escapes or spaces (the same JSON, a
    third smaller for Russian text); whether the file changed."""
    from glossary.safewrite import atomic_write_text

    raw = path.read_text(encoding="utf-8")
    compact = json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))
    if compact == raw:
        return False
    atomic_write_text(path, compact)
    return True


@dataclass(frozen=True)
class IndexReport:
    """The search index a reader downloads: its size and what it holds."""

    path: Path
    size: int
    documents: int
    locations: frozenset[str]


def index_report(site_dir: Path) -> IndexReport:
    """Read the built site's search index."""
    path = site_dir / "search" / "search_index.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    docs = data.get("docs", [])
    return IndexReport(
        path=path,
        size=path.stat().st_size,
        documents=len(docs),
        locations=frozenset(str(doc.get("location", "")) for doc in docs),
    )


def language_of(location: str, langs: tuple[str, ...], default: str) -> str:
    """The language of a document: its location's first segment when that is one of ``langs``
    other than ``default`` (a language with a folder), else ``default``."""
    head = location.split("/", 1)[0]
    return head if head in langs and head != default else default


def language_file(site_dir: Path, lang: str) -> Path:
    """Where the index of ``lang``'s documents alone is written."""
    return site_dir / "search" / f"search_index.{lang}.json"


def split_index(site_dir: Path, langs: tuple[str, ...], default: str) -> dict[str, Path]:
    """Write one index file per language of ``langs`` beside the whole index (the same
    ``config``, that language's documents in the whole index's order); the files by language.
    A language without a document gets an empty list, so the browser never meets a 404."""
    from glossary.safewrite import atomic_write_text

    data = json.loads((site_dir / "search" / "search_index.json").read_text(encoding="utf-8"))
    parts: dict[str, list[dict[str, object]]] = {lang: [] for lang in langs}
    for doc in data.get("docs", []):
        parts[language_of(str(doc.get("location", "")), langs, default)].append(doc)
    written = {}
    for lang, docs in parts.items():
        path = language_file(site_dir, lang)
        part = {**data, "docs": docs}
        atomic_write_text(path, json.dumps(part, ensure_ascii=False, separators=(",", ":")))
        written[lang] = path
    return written
