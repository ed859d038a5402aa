"""What the lookup searches in each entry, tier by tier (:mod:`glossary.lookup`).

1. **Names** (:func:`name_rows`): every term and alias of every language, and the slug.
2. **Identifiers** (:func:`ident_rows`), language-neutral:

   * ``library``: each library's name (``optuna``), its API (``optuna.samplers.GridSampler``)
     and the API's last component (``GridSampler``);
   * ``source``: each source's title;
   * ``method``: the name a source gives its method, the part of its title before a colon
     ("DeepCache", "Q-Diffusion", "Switch Transformers"), and the names the entry's texts
     mention (:func:`mentioned`): code spans that are identifiers (``torch.compile``), words
     with a capital letter inside or with both letters and digits ("SVDQuant", "W4A8", "NVFP4",
     "top-1"), and Latin words written into the Russian text ("Nunchaku"), which there can only
     be names. Authors' surnames and a word followed by "et al." are left out.

   A name only mentioned in the text is weaker evidence than a library, a source or a method
   the entry cites: its scores are multiplied by :data:`MENTION_WEIGHT`, below ``1 - TIE_MARGIN
   / 100``, so an entry that cites a method outranks one that only mentions it.
3. **Texts** (:func:`text_docs`): the definition, the accuracy note and the explanation of each
   language (:mod:`glossary.textsearch`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .normalize import normalize
from .schema import LANGS
from .textsearch import TEXT_FIELDS

MENTION_WEIGHT = 0.97
MAX_METHOD_WORDS = 3
"""A title's part before the colon is a method name only if it is this short ("Optuna", not
"From Reusing to Forecasting")."""

_CODE = re.compile(r"`([^`\n]+)`")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*[\w)]")
_WORD = r"[A-Za-zΔ][A-Za-z0-9_+.\-ΣΔ]*[A-Za-z0-9+Σ](?![A-Za-z0-9_])"
_NAME = re.compile(r"(?<![\w.\-])" + _WORD)
"""A Latin word, possibly with digits, dots and hyphens ("FLUX.1", "Q-Diffusion", "top-1")."""
_MARKED = re.compile(r"(?<![\w.\-])(?=[A-Za-z0-9_+.\-ΣΔ]*?(?:[A-Za-z0-9_+.\-ΣΔ][A-Z]|\d))" + _WORD)
"""Such a word with a capital letter inside or a digit (the only names found outside Russian)."""


_RUN = re.compile(r"(?<![\w.\-])[A-Z][A-Za-z0-9\-]*(?: [A-Z][A-Za-z0-9\-]*)+(?![\w\-])")
"""Capitalized Latin words in a row (in Russian text, the name of a method or a product)."""


def name_rows(glossary: Iterable[Any]) -> list[tuple[str, str, str, str, int]]:
    """``(key, text, slug, lang, is_term)`` of every name, shortest key first (lang "" = slug)."""
    rows = []
    for entry in glossary:
        for lang in LANGS:
            for i, name in enumerate(entry.lang[lang].names):
                key = normalize(name)
                if key:
                    rows.append((key, name, entry.slug, lang, int(i == 0)))
        rows.append((normalize(entry.slug), entry.slug, entry.slug, "", 0))
    rows.sort(key=lambda r: (len(r[0]), r[0], r[2], r[3]))
    return rows


def _namelike(word: str, in_russian: bool) -> bool:
    letters = [c for c in word if c.isalpha()]
    if len(letters) < 2:
        return False
    inner_capital = any(c.isupper() for c in word[1:])
    digits = any(c.isdigit() for c in word)
    return inner_capital or digits or (in_russian and word[0].isupper() and len(letters) >= 3)


def _surnames(entry: Any) -> set[str]:
    return {normalize(a.split()[-1]) for s in entry.sources for a in s.authors if a.split()}


def _code_name(code: str) -> bool:
    """Whether a code span is an identifier worth finding (``torch.compile``, not ``prepare``)."""
    if len(code) < 4 or not _IDENTIFIER.fullmatch(code):
        return False
    return any(c in "._" or c.isupper() or c.isdigit() for c in code)


def mentioned(entry: Any) -> list[str]:
    """The identifiers and method names the entry's texts mention (see the module docstring)."""
    found: dict[str, str] = {}
    skip = _surnames(entry)
    for lang in LANGS:
        block = entry.lang[lang]
        for text in (block.definition, block.note or "", block.explanation):
            for code in _CODE.findall(text):
                code = code.strip()
                if _code_name(code):
                    found.setdefault(normalize(code), code)
                    last = code.rsplit(".", 1)[-1]
                    if _code_name(last):
                        found.setdefault(normalize(last), last)
            plain = _CODE.sub(" ", text)
            if lang == "ru":  # "First Block Cache" in Russian text: one name, not three
                for run in _RUN.findall(plain):
                    if normalize(run.split()[0]) not in skip:
                        found.setdefault(normalize(run), run)
                plain = _RUN.sub(" ", plain)
            for m in (_NAME if lang == "ru" else _MARKED).finditer(plain):
                word = m.group()
                if plain[m.end() : m.end() + 8].lstrip().startswith("et al"):
                    continue
                if _namelike(word, lang == "ru") and normalize(word) not in skip:
                    found.setdefault(normalize(word), word)
    return [text for key, text in found.items() if key]


def ident_rows(glossary: Iterable[Any]) -> list[tuple[str, str, str, str, float]]:
    """``(key, text, slug, field, weight)`` of every identifier, one per key and entry (the
    strongest), shortest key first."""
    rows: dict[tuple[str, str], tuple[str, str, str, str, float]] = {}

    def add(text: str, slug: str, field: str, weight: float = 1.0) -> None:
        key = normalize(text)
        if len(key) < 2:
            return
        old = rows.get((key, slug))
        if old is None or weight > old[4]:
            rows[(key, slug)] = (key, text, slug, field, weight)

    for entry in glossary:
        for lib in entry.libraries:
            add(lib.name, entry.slug, "library")
            add(lib.api, entry.slug, "library")
            add(lib.api.rsplit(".", 1)[-1], entry.slug, "library")
        for src in entry.sources:
            add(src.title, entry.slug, "source")
            head = src.title.split(":", 1)[0]
            if ":" in src.title and len(head.split()) <= MAX_METHOD_WORDS:
                add(head, entry.slug, "method")
        for word in mentioned(entry):
            add(word, entry.slug, "method", MENTION_WEIGHT)
    return sorted(rows.values(), key=lambda r: (len(r[0]), r[0], r[2]))


def text_docs(glossary: Iterable[Any]) -> list[tuple[str, str, str, str]]:
    """``(slug, lang, field, text)`` of every non-empty definition, note and explanation."""
    docs = []
    for entry in glossary:
        for lang in LANGS:
            block = entry.lang[lang]
            for field in TEXT_FIELDS:
                text = getattr(block, field) or ""
                if text.strip():
                    docs.append((entry.slug, lang, field, text))
    return docs
