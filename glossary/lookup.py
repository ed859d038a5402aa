"""Find an entry from what people type: its names, what it cites, what its texts say.

A query (cut to :data:`MAX_QUERY_CHARS`) is searched in tiers, in order of evidence (what each
tier indexes is listed in :mod:`glossary.fields`):

1. **names**: every term and alias of every language, and the slugs, scored 0-100 by
   :class:`glossary.fuzzy.Scorer` (exact after folding = 100; typos, word order and parts of a
   name score less). A query is also tried in the other alphabet
   (:func:`glossary.normalize.transliterations`), at :data:`TRANSLIT_WEIGHT` of its score;
2. **identifiers**: the libraries, APIs, sources and method names an entry cites or mentions,
   scored the same way, times their weight (a name only mentioned in a text weighs less than
   one cited), plus :data:`CODE_SCORE` for a code word such as "W4A8" inside a longer query.
   They are scored unless a name matched exactly, and compete with the names on the same
   scale (a name wins a tie): an exact identifier beats a fuzzy name;
3. **texts**: if nothing above reaches :data:`MATCH_THRESHOLD`, the definitions, notes and
   explanations, by BM25 over Snowball stems, only where the query's words stand close together
   (:mod:`glossary.textsearch`), scored 0-100 against :data:`TEXT_THRESHOLD`.

Each candidate says where it matched (:attr:`Candidate.where`, one of :data:`FIELDS`). Each entry
keeps its best name; entries are ranked by score, then by the plain ratio, then by the language
of the name (the requested one, then the preferred ones such as the UI language and English),
then by whether it is a preferred term. When entries tie within :data:`TIE_MARGIN` below an
exact match, their texts break the tie if one entry's says the query decisively more
(:data:`SUPPORT_RATIO`, :data:`SUPPORT_GAP`); an exact name shared by two entries stays a tie.
:func:`decide` turns the ranking into an answer: a **match** when the best reaches its tier's
threshold and clearly beats the next entry of its tier; **ambiguous** when another scores within
:data:`TIE_MARGIN` of it (the candidates are listed); otherwise **no match**, with the nearest
entries as suggestions. The thresholds are calibrated on ``tests/data/lookup_queries.yaml`` (see
``tests/test_lookup_quality.py``).

:class:`Index` works on a loaded :class:`~glossary.model.Glossary`;
:func:`glossary.compiled.open_compiled` opens the compiled SQLite index of a folder
(:class:`glossary.compiled.CompiledIndex`, built on this module's base class), which scores only
the names that share the most character trigrams with the query, so that the cost does not grow
with the glossary, and loads only the entries it shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rapidfuzz import fuzz

from . import textsearch
from .fuzzy import Scorer
from .model import Entry, Glossary
from .normalize import normalize, transliterations
from .schema import LANGS

MAX_QUERY_CHARS = 200
_CYRILLIC = re.compile("[а-яй]")
MATCH_THRESHOLD = 72.0
"""A best candidate scoring below this is a suggestion, not a match."""
TIE_MARGIN = 1.0
"""Two entries whose best names score within this of each other are a tie (ambiguous)."""
MAX_HITS = 300
"""Names kept after scoring (best first) before they are grouped by entry."""
MAX_CANDIDATES = 600
"""Names the compiled index scores for a query: those sharing the most character trigrams with
it. A name that would score high shares most of the query's trigrams, so it is among them; the
rest of the glossary is never read."""
GRAM_BUDGET = 8_000
"""Postings the compiled index walks per query at most: the query's trigrams are taken from the
rarest up while their lists fit (at least three of them), so a common trigram ("ion", "de ")
of a large glossary costs nothing. Below about 200 entries every trigram fits."""


FIELDS = (
    "term",
    "alias",
    "slug",
    "library",
    "method",
    "source",
    "definition",
    "note",
    "explanation",
)
"""Where a query can match, by tier: names (1), identifiers (2), texts (3)."""
TRANSLIT_WEIGHT = 0.97
"""A query that matches only once transliterated ("лора" as "lora") scores this share."""
TEXT_THRESHOLD = 30.0
"""A passage scoring below this (0-100, :mod:`glossary.textsearch`) is not a match."""
CODE_SCORE = 90.0
"""Score of an identifier with letters and digits ("W4A8", "int8") found as a whole word of a
longer query ("formato W4A8"), before its weight: such a word names one thing wherever it is."""
SUPPORT_RATIO = 1.15
SUPPORT_GAP = 5.0
"""Names tied within :data:`TIE_MARGIN` are told apart by their entries' texts only when one
entry's texts (the sum of its definition's, note's and explanation's scores in one language)
score at least this many times, and this many points above, every other tied entry's."""


@dataclass(frozen=True)
class Name:
    """What a query matched: a term, alias or slug (tier 1), a library, method or source name
    (tier 2), or a passage of a definition, note or explanation (tier 3, ``text`` the passage).
    ``lang`` is "" for a slug and for identifiers."""

    key: str
    text: str
    slug: str
    lang: str
    is_term: bool
    field: str = ""

    @property
    def where(self) -> str:
        """One of :data:`FIELDS`."""
        if self.field:
            return self.field
        return "slug" if not self.lang else "term" if self.is_term else "alias"


@dataclass(frozen=True)
class Candidate:
    """An entry found for a query, with the name or passage that matched best.

    ``tier`` is 1 (names), 2 (identifiers) or 3 (texts); ``support`` is the score of the
    entry's best passage when it was used to break a tie between names (else None).
    """

    slug: str
    score: float
    name: Name
    source: Any = field(repr=False, compare=False)
    tier: int = 1
    support: float | None = None

    @property
    def entry(self) -> Entry:
        """The whole entry (loaded on first use from the compiled index)."""
        return self.source.entry(self.slug)

    def term(self, lang: str) -> str:
        return self.source.term(self.slug, lang)

    @property
    def exact(self) -> bool:
        return self.score >= 100.0

    @property
    def where(self) -> str:
        return self.name.where


@dataclass(frozen=True)
class Decision:
    """What a ranking means: ``kind`` is ``match``, ``ambiguous`` or ``none``."""

    kind: str
    candidates: list[Candidate]

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.kind == "match" else None


def _decisive(a: float | None, b: float | None) -> bool:
    """Whether support ``a`` clearly beats support ``b`` (see :data:`SUPPORT_RATIO`)."""
    if a is None or b is None:
        return False
    return a >= SUPPORT_RATIO * b and a - b >= SUPPORT_GAP


def decide(found: Sequence[Candidate], lang: str | None = None) -> Decision:
    """A match, a tie between entries, or no match (see the module docstring)."""
    if not found:
        return Decision("none", [])
    best = found[0]
    if best.score < (TEXT_THRESHOLD if best.tier == 3 else MATCH_THRESHOLD):
        return Decision("none", list(found))
    ties = [
        c
        for c in found[1:]
        if c.tier == best.tier
        and best.score - c.score < TIE_MARGIN
        and not _decisive(best.support, c.support)
    ]
    if ties and lang:
        # an exact name in the requested language beats the same name in another one
        in_lang = best.name.lang == lang
        ties = [c for c in ties if not (in_lang and c.name.lang != lang)]
    if ties:
        return Decision("ambiguous", [best, *ties])
    return Decision("match", list(found))


class _Base(textsearch.Postings):
    """The tiered search shared by the in-memory and the SQLite-backed index."""

    def name_scores(self, key: str) -> dict[int, float]:
        """Scores of the names worth scoring for a normalized query, by name id."""
        raise NotImplementedError

    def names_at(self, ids: list[int]) -> dict[int, Name]:
        raise NotImplementedError

    def ident_scores(self, key: str) -> dict[int, float]:
        """Scores of the identifiers worth scoring, by id, already weighted."""
        raise NotImplementedError

    def idents_at(self, ids: list[int]) -> dict[int, Name]:
        raise NotImplementedError

    def idents_keyed(self, keys: list[str]) -> dict[int, float]:
        """``id -> weight`` of the identifiers whose key is one of ``keys``."""
        raise NotImplementedError

    def _ident_scores(self, key: str) -> dict[int, float]:
        """:meth:`ident_scores`, and :data:`CODE_SCORE` for a code word inside the query."""
        scores = self.ident_scores(key)
        words = key.split()
        codes = [w for w in words if len(w) >= 3 and not w.isalpha() and not w.isdigit()]
        if len(words) > 1 and codes:
            for i, weight in self.idents_keyed(codes).items():
                scores[i] = max(scores.get(i, 0.0), CODE_SCORE * weight)
        return scores

    def entry(self, slug: str) -> Entry:
        raise NotImplementedError

    def term(self, slug: str, lang: str) -> str:
        raise NotImplementedError

    def search(
        self,
        query: str,
        lang: str | None = None,
        limit: int = 10,
        prefer: Sequence[str] = ("en",),
    ) -> list[Candidate]:
        """Entries ranked for ``query`` (best first), at most ``limit``, with no score cutoff.

        Tier by tier (see the module docstring): names, then identifiers, then texts. Among
        equal scores, a name in ``lang`` wins, then one in the languages of ``prefer`` (in that
        order), then a preferred term over an alias.
        """
        order = [code for code in (lang, *prefer) if code]
        query = query[:MAX_QUERY_CHARS]
        key = normalize(query)
        if not key:
            return []
        keys = [(key, 1.0)] + [(k, TRANSLIT_WEIGHT) for k in transliterations(key)]
        found = self._rank(keys, order, self.name_scores, self.names_at, 1)
        if not found or found[0].score < 100.0:
            # identifiers are written in Latin letters: a Cyrillic query is tried transliterated
            latin = [(k, w) for k, w in keys if not _CYRILLIC.search(k)] or keys[:1]
            idents = self._rank(latin, order, self._ident_scores, self.idents_at, 2)
            found = _merge(found, idents)
        if not found or found[0].score < MATCH_THRESHOLD:
            texts = self._texts(query, lang, limit)
            if texts:
                return texts
        return self._break_tie(query, lang, found)[:limit]

    def _rank(
        self,
        keys: list[tuple[str, float]],
        order: list[str],
        scores: Callable[[str], dict[int, float]],
        names_at: Callable[[list[int]], dict[int, Name]],
        tier: int,
    ) -> list[Candidate]:
        """Each entry's best name of one tier, best entry first."""
        merged: dict[int, float] = {}
        for key, weight in keys:
            if merged and max(merged.values()) >= 100.0:
                break  # an exact name: its transliteration cannot do better
            for i, score in scores(key).items():
                merged[i] = max(merged.get(i, 0.0), score * weight)
        scored = sorted(merged.items(), key=lambda kv: -kv[1])[:MAX_HITS]
        names = names_at([i for i, _ in scored])
        best: dict[str, tuple[tuple[float, float, int, int], Name]] = {}
        for i, score in scored:
            name = names[i]
            pref = len(order) - order.index(name.lang) if name.lang in order else 0
            rank = (score, fuzz.ratio(keys[0][0], name.key), pref, int(name.is_term))
            if name.slug not in best or rank > best[name.slug][0]:
                best[name.slug] = (rank, name)
        ordered = sorted(best.values(), key=lambda item: (item[0], item[1].slug), reverse=True)
        return [Candidate(name.slug, rank[0], name, self, tier) for rank, name in ordered]

    def _passages(
        self, query: str, lang: str | None, slugs: set[str] | None = None
    ) -> dict[str, tuple[float, str, str, tuple[int, int]]]:
        """Each entry's best passage for ``query``: ``slug -> (score, lang, field, span)``.

        With ``slugs`` (telling tied names apart), only their texts are read, the words need
        not be near each other, and an entry's score is the sum over its texts in a language:
        an entry that says it in its definition, its note and its explanation says it most.
        """
        best: dict[str, tuple[float, str, str, tuple[int, int]]] = {}
        for code in [lang] if lang else LANGS:
            terms = textsearch.query_terms(code, query)
            if not terms:
                continue
            docs = self.documents_of(code, slugs) if slugs is not None else None
            hits = textsearch.bm25(self, code, terms, docs, near=slugs is None)
            info = self.documents(hits)
            found: dict[str, tuple[float, str, str, tuple[int, int]]] = {}
            for doc, (score, span) in sorted(hits.items()):
                slug, where, _ = info[doc]
                old = found.get(slug)
                if slugs is not None and old is not None:
                    found[slug] = (old[0] + score, *old[1:])
                elif old is None or score > old[0]:
                    found[slug] = (score, code, where, span)
            for slug, hit in found.items():
                if slug not in best or hit[0] > best[slug][0]:
                    best[slug] = hit
        return best

    def _texts(self, query: str, lang: str | None, limit: int) -> list[Candidate]:
        """Tier 3: the entries whose texts hold the query's words close together."""
        found = self._passages(query, lang)
        ranked = sorted(
            ((v, slug) for slug, v in found.items() if v[0] >= TEXT_THRESHOLD), reverse=True
        )[:limit]
        out = []
        for (score, code, where, (first, last)), slug in ranked:
            text = getattr(self.entry(slug).lang[code], where) or ""
            passage = textsearch.snippet(text, first, last)
            out.append(Candidate(slug, score, Name("", passage, slug, code, False, where), self, 3))
        return out

    def _break_tie(self, query: str, lang: str | None, found: list[Candidate]) -> list[Candidate]:
        """Tell names tied within :data:`TIE_MARGIN` apart by their entries' texts, if decisive.

        An exact name is never overruled: two entries with the same name stay ambiguous.
        """
        if not found or found[0].exact or found[0].score < MATCH_THRESHOLD:
            return found
        tied = [c for c in found if found[0].score - c.score < TIE_MARGIN]
        if len(tied) < 2:
            return found
        passages = self._passages(query, lang, {c.slug for c in tied})
        support = {c.slug: passages[c.slug][0] if c.slug in passages else 0.0 for c in tied}
        tied = [replace(c, support=support[c.slug]) for c in tied]
        tied.sort(key=lambda c: -(c.support or 0.0))
        if not all(_decisive(tied[0].support, c.support) for c in tied[1:]):
            return found
        return [*tied, *found[len(tied) :]]


def _merge(names: list[Candidate], idents: list[Candidate]) -> list[Candidate]:
    """One list, best score first: each entry's best candidate, a name before an identifier
    of the same score."""
    best: dict[str, Candidate] = {}
    for c in [*names, *idents]:
        if c.slug not in best or c.score > best[c.slug].score:
            best[c.slug] = c
    return sorted(best.values(), key=lambda c: (-c.score, c.tier))


class Index(_Base):
    """All names, identifiers and texts of a loaded glossary, ready for :meth:`search`."""

    def __init__(self, glossary: Glossary) -> None:
        from .fields import ident_rows, name_rows

        self.glossary = glossary
        self.names = [Name(k, t, s, lg, bool(term)) for k, t, s, lg, term in name_rows(glossary)]
        self.scorer = Scorer([n.key for n in self.names])
        rows = ident_rows(glossary)
        self.idents = [Name(k, t, s, "", False, f) for k, t, s, f, _ in rows]
        self.weights = [w for *_, w in rows]
        self.ident_scorer = Scorer([n.key for n in self.idents])
        self.ident_ids: dict[str, list[int]] = {}
        for i, name in enumerate(self.idents):
            self.ident_ids.setdefault(name.key, []).append(i)
        self._text: Any = None

    def name_scores(self, key: str) -> dict[int, float]:
        return self.scorer.scores(key)

    def names_at(self, ids: list[int]) -> dict[int, Name]:
        return {i: self.names[i] for i in ids}

    def ident_scores(self, key: str) -> dict[int, float]:
        return {i: s * self.weights[i] for i, s in self.ident_scorer.scores(key).items()}

    def idents_at(self, ids: list[int]) -> dict[int, Name]:
        return {i: self.idents[i] for i in ids}

    def idents_keyed(self, keys: list[str]) -> dict[int, float]:
        return {i: self.weights[i] for k in keys for i in self.ident_ids.get(k, [])}

    def entry(self, slug: str) -> Entry:
        return self.glossary[slug]

    def term(self, slug: str, lang: str) -> str:
        return self.glossary[slug].term(lang)

    # --- texts (built on first use: only queries that reach tier 3 need them) ---

    @property
    def text(self) -> Any:
        if self._text is None:
            from .fields import text_docs

            self._text = textsearch.MemoryPostings(text_docs(self.glossary))
        return self._text

    def stats(self, lang: str) -> tuple[int, float]:
        return self.text.stats(lang)

    def frequencies(self, lang: str, stems: list[str]) -> dict[str, int]:
        return self.text.frequencies(lang, stems)

    def postings(
        self, lang: str, stem: str, docs: set[int] | None
    ) -> dict[int, tuple[int, list[int]]]:
        return self.text.postings(lang, stem, docs)

    def documents(self, ids: Iterable[int]) -> dict[int, tuple[str, str, int]]:
        return self.text.documents(ids)

    def documents_of(self, lang: str, slugs: Iterable[str]) -> set[int]:
        return self.text.documents_of(lang, slugs)


def resolve(glossary: Glossary, query: str, lang: str | None = None) -> Entry | None:
    """The entry ``query`` names: its slug, or its best match if :func:`decide` finds one."""
    entry = glossary.get(query.strip())
    if entry is not None:
        return entry
    decision = decide(Index(glossary).search(query, lang, limit=5), lang)
    return decision.best.entry if decision.best else None
