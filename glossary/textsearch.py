"""Full-text search of the definitions, notes and explanations: the third tier of the lookup.

Each text of an entry in one language (its definition, its accuracy note, its explanation) is one
*document*. A document is cut into words (:func:`words`: runs of letters and digits, folded by
:func:`glossary.normalize.normalize`, so case, accents and ``ё`` do not matter), words of the
language's stop list are dropped, and the rest are reduced by the Snowball stemmer of the
document's language (PyStemmer): "cuantización" and "cuantizaciones" are both ``cuantiz``,
"квантизации" is ``квантизац``. Each stem keeps its positions. A query is stemmed once per
language and searched only in the documents of that language.

A document **answers** a query only when it holds *every* content word of the query and holds
them close together: all within :func:`window` words of each other (:func:`span`). That keeps a
query whose words each occur somewhere in the glossary ("elecciones generales", a word salad)
from matching, while "rama de bajo rango" or "top-1 routing" find the passage that says it. The
documents that answer are ranked by BM25 (Robertson and Zaragoza, 2009) with ``k1`` = 1.2 and
``b`` = 0.75 and the idf ``ln(1 + (N - n + 0.5) / (n + 0.5))``, which is never negative, with
document frequencies ``n``, the number of documents ``N`` and their average length counted per
language. A score is
reported on a 0-100 scale, as a share of the most any document could score for that query
(each term's ``idf * (k1 + 1)``, the limit of BM25 as the term frequency grows).

The stemmer is imported only when a query reaches this tier, so a lookup answered by a term or
a library name never loads it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any, Protocol

from .normalize import normalize

K1 = 1.2
B = 0.75
TEXT_FIELDS = ("definition", "note", "explanation")
STEMMER = {"es": "spanish", "ru": "russian", "en": "english"}
MIN_WORD = 2
"""Shorter words ("k", "a", "в") carry no meaning alone and are never searched for."""


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = {
    "es": _wordset(
        """a al algo algun alguna algunas alguno algunos ante antes aqui asi aun bien cada como
        con contra cual cuales cuando de del desde donde dos durante e el ella ellas ellos en
        entre era es esa esas ese eso esos esta estan estas este esto estos fue fueron ha han
        hasta hay la las le les lo los mas me mi muy mucho ni no nos o otra otras otro otros
        para pero poco por porque que se sea ser si sin sobre solo son su sus tambien tan
        tanto te tiene tienen todo todos tu un una unas uno unos y ya"""
    ),
    "ru": _wordset(
        """а без более бы был была были было быть в вам вас весь во вот все всего всех вы где
        да даже для до его ее ей если есть еще же за здесь и из или им их к как ко когда кто
        ли либо между меня мне может мы на над нам нас не него нее нет ни них но ну о об
        однако он она они оно от по под при с со так также такой там те тем то того тоже той
        только том ты у уже чем что чтобы эта эти это этого этой этот я"""
    ),
    "en": _wordset(
        """a about above after again against all also an and any are as at be because been
        before being between both but by can could did do does doing down during each few for
        from further had has have having he her here hers him his how i if in into is it its
        itself just me more most my no nor not now of off on once only or other our out over
        own same she should so some such than that the their them then there these they this
        those through to too under until up very was we were what when where which while who
        whom why will with would you your"""
    ),
}


class Postings(Protocol):
    """What BM25 needs to read: the compiled index and the in-memory one both provide it."""

    def stats(self, lang: str) -> tuple[int, float]:
        """Number of documents in ``lang`` and their average length in words."""
        ...

    def frequencies(self, lang: str, stems: list[str]) -> dict[str, int]:
        """How many documents of ``lang`` hold each stem (stems held by none are left out)."""
        ...

    def postings(
        self, lang: str, stem: str, docs: set[int] | None
    ) -> dict[int, tuple[int, list[int]]]:
        """``doc -> (term frequency, positions)`` of ``stem``, only in ``docs`` if given."""
        ...

    def documents(self, ids: Iterable[int]) -> dict[int, tuple[str, str, int]]:
        """``doc -> (slug, field, length)``."""
        ...

    def documents_of(self, lang: str, slugs: Iterable[str]) -> set[int]:
        """The documents of ``lang`` that belong to ``slugs``."""
        ...


@cache
def _stemmer(lang: str) -> Any:
    import Stemmer  # PyStemmer: compiled Snowball stemmers, no numpy

    return Stemmer.Stemmer(STEMMER[lang])


_WORD = re.compile(r"[^\W_](?:[^\W_]|[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff])*")
"""A run of letters and digits; combining marks belong to it ("P̃V" is one word, as
:func:`glossary.normalize.normalize` folds it)."""


def words(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, folded word)`` of each word of ``text``, in order."""
    for m in _WORD.finditer(text):
        key = normalize(m.group())
        for part in key.split():
            yield m.start(), m.end(), part


def stems(lang: str, tokens: list[str]) -> list[str | None]:
    """The stem of each token, or None for stop words and words under :data:`MIN_WORD`."""
    stop = STOPWORDS[lang]
    keep = [t for t in tokens if len(t) >= MIN_WORD and t not in stop]
    stemmed = dict(zip(keep, _stemmer(lang).stemWords(keep), strict=True))
    return [stemmed.get(t) for t in tokens]


def document_terms(lang: str, text: str) -> tuple[dict[str, list[int]], int]:
    """Each stem of a document with its word positions, and the document's length in words."""
    tokens = normalize(text).split()  # as :func:`words` counts them, at a fraction of the cost
    out: dict[str, list[int]] = {}
    for pos, stem in enumerate(stems(lang, tokens)):
        if stem:
            out.setdefault(stem, []).append(pos)
    return out, len(tokens)


def query_terms(lang: str, query: str) -> list[str]:
    """The distinct stems of a query in ``lang``, in order."""
    found = stems(lang, normalize(query).split())
    return list(dict.fromkeys(s for s in found if s))


def window(n_terms: int) -> int:
    """How many words may separate the first and the last query word in a passage."""
    return max(8, 4 * n_terms)


def span(positions: list[list[int]]) -> tuple[int, int]:
    """The shortest ``(first, last)`` word range holding one position of every list."""
    events = sorted((p, i) for i, ps in enumerate(positions) for p in ps)
    need, have, count = len(positions), [0] * len(positions), 0
    best = (events[0][0], events[-1][0])
    left = 0
    for pos, i in events:
        have[i] += 1
        count += have[i] == 1
        while count == need:
            start, j = events[left]
            if pos - start < best[1] - best[0]:
                best = (start, pos)
            have[j] -= 1
            count -= have[j] == 0
            left += 1
    return best


def _idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25(
    index: Postings, lang: str, terms: list[str], docs: set[int] | None = None, near: bool = True
) -> dict[int, tuple[float, tuple[int, int]]]:
    """``doc -> (score 0-100, word span)`` of the documents of ``lang`` holding every term.

    With ``near`` a document counts only if the terms are within :func:`window` words; ``docs``
    limits the search to those documents.
    """
    if not terms:
        return {}
    df = index.frequencies(lang, terms)
    if len(df) < len(terms):
        return {}
    n_docs, avgdl = index.stats(lang)
    order = sorted(terms, key=lambda t: df[t])
    lists: dict[str, dict[int, tuple[int, list[int]]]] = {}
    for term in order:
        lists[term] = index.postings(lang, term, docs)
        docs = set(lists[term])
        if not docs:
            return {}
    lengths = index.documents(docs)
    limit = sum(_idf(n_docs, df[t]) for t in terms) * (K1 + 1.0)
    out: dict[int, tuple[float, tuple[int, int]]] = {}
    for doc in docs:
        first, last = span([lists[t][doc][1] for t in terms])
        if near and last - first > window(len(terms)):
            continue
        norm = K1 * (1.0 - B + B * lengths[doc][2] / avgdl)
        score = 0.0
        for t in terms:
            tf = lists[t][doc][0]
            score += _idf(n_docs, df[t]) * tf * (K1 + 1.0) / (tf + norm)
        out[doc] = (100.0 * score / limit, (first, last))
    return out


def snippet(text: str, first: int, last: int, context: int = 3) -> str:
    """The words ``first..last`` of ``text`` (as :func:`words` counts them), with context, as
    plain text (the Markdown code marks dropped)."""
    spans = [(a, b) for a, b, _ in words(text)]
    if not spans:
        return ""
    lo, hi = max(0, first - context), min(len(spans) - 1, last + context)
    shown = " ".join(text[spans[lo][0] : spans[hi][1]].replace("`", "").split())
    return ("…" if lo > 0 else "") + shown + ("…" if hi < len(spans) - 1 else "")


class MemoryPostings:
    """:class:`Postings` of documents held in memory (``(slug, lang, field, text)`` each)."""

    def __init__(self, docs: list[tuple[str, str, str, str]]) -> None:
        self.docs: list[tuple[str, str, int]] = []
        self.langs: list[str] = []
        self.index: dict[tuple[str, str], dict[int, tuple[int, list[int]]]] = {}
        self.lengths: dict[str, list[int]] = {}
        for doc, (slug, lang, field, text) in enumerate(docs):
            terms, length = document_terms(lang, text)
            self.docs.append((slug, field, length))
            self.langs.append(lang)
            self.lengths.setdefault(lang, []).append(length)
            for stem, positions in terms.items():
                self.index.setdefault((lang, stem), {})[doc] = (len(positions), positions)

    def stats(self, lang: str) -> tuple[int, float]:
        lengths = self.lengths.get(lang) or [0]
        return len(lengths), max(1.0, sum(lengths) / len(lengths))

    def frequencies(self, lang: str, stems: list[str]) -> dict[str, int]:
        return {s: len(self.index[(lang, s)]) for s in stems if (lang, s) in self.index}

    def postings(
        self, lang: str, stem: str, docs: set[int] | None
    ) -> dict[int, tuple[int, list[int]]]:
        found = self.index.get((lang, stem), {})
        return dict(found) if docs is None else {d: found[d] for d in docs if d in found}

    def documents(self, ids: Iterable[int]) -> dict[int, tuple[str, str, int]]:
        return {i: self.docs[i] for i in ids}

    def documents_of(self, lang: str, slugs: Iterable[str]) -> set[int]:
        wanted = set(slugs)
        return {
            i
            for i, (slug, _, _) in enumerate(self.docs)
            if slug in wanted and self.langs[i] == lang
        }
