"""Find an entry from any of its names in any language, tolerating case, accents and typos.

Every term and alias of every language (and every slug) is indexed after
:func:`glossary.normalize.normalize`. A query is normalized the same way (and cut to
:data:`MAX_QUERY_CHARS`); then each name gets the best of three scores (0-100):

1. the plain similarity ``fuzz.ratio`` of the whole strings (100 only when they are equal, the
   exact match, always ranked first; one typo in a word of five letters still scores about 80).
   It is ``2 * common / (len(query) + len(name))``, so it already demands that *both* the query
   and the name be mostly covered by what they share;
2. the same after sorting the words (``fuzz.token_sort_ratio``: "checkpointing gradient");
3. for a query shorter than the name, the partial similarity (the query found, perhaps with a
   typo, inside the name: "consistency" in "latent consistency model"), scaled by how much of
   the name the query covers: ``partial * (PARTIAL_BASE + (1 - PARTIAL_BASE) * len(query) /
   len(name))``. A query under :data:`SHORT` characters gets this only as a whole word of the
   name, without typos ("poda" in "poda de red", never "epca" in "deepcache").

What is *not* scored is a name found inside a longer query: a query matches only when enough of
it is covered by one name (the plain ratio of a name wholly inside the query is
``2c / (1 + c)`` for the covered fraction ``c``: at least 72 means ``c >= 0.56``). That is what
keeps "chocolate cake", a cooking recipe or a word salad from matching an entry whose short
alias happens to occur in them.

Each entry keeps its best-scoring name; entries are ranked by score, then by the plain ratio,
then by the language of the name (the requested one, then the preferred ones such as the UI
language and English), then by whether it is a preferred term. :func:`decide` turns the ranking
into an answer: a **match** when the best scores at least :data:`MATCH_THRESHOLD` and clearly
beats the next entry; **ambiguous** when another entry scores within :data:`TIE_MARGIN` of it
(the candidates are listed); otherwise **no match**, with the nearest entries as suggestions.
The thresholds are calibrated on ``tests/data/lookup_queries.yaml`` (see
``tests/test_lookup_quality.py``).

:class:`Index` works on a loaded :class:`~glossary.model.Glossary`; :func:`open_index` on the
compiled SQLite index of a folder (:mod:`glossary.index`), which scores only the names that
share the most character trigrams with the query (so the cost does not grow with the glossary)
and loads only the entry that answers it. Only ``rapidfuzz.process`` and ``rapidfuzz.fuzz`` are
imported: compiled extensions that do not import numpy.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process

from .model import Entry, Glossary
from .normalize import normalize
from .schema import LANGS

MAX_QUERY_CHARS = 200
MATCH_THRESHOLD = 72.0
"""A best candidate scoring below this is a suggestion, not a match."""
TIE_MARGIN = 1.0
"""Two entries whose best names score within this of each other are a tie (ambiguous)."""
FUZZY_CUTOFF = 40
"""Scores below this are not even suggestions."""
SHORT = 5
"""Queries shorter than this match inside a longer name only as a whole word."""
PARTIAL_BASE = 0.6
"""Weight of a partial match when the query covers almost none of the name; it grows linearly
to 1.0 as the query covers all of it."""
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


@dataclass(frozen=True)
class Name:
    """One indexed name: a term or alias of an entry in one language (``lang`` "" = slug)."""

    key: str
    text: str
    slug: str
    lang: str
    is_term: bool


@dataclass(frozen=True)
class Candidate:
    """An entry found for a query, with the name that matched best."""

    slug: str
    score: float
    name: Name
    source: Any = field(repr=False, compare=False)

    @property
    def entry(self) -> Entry:
        """The whole entry (loaded on first use from the compiled index)."""
        return self.source.entry(self.slug)

    def term(self, lang: str) -> str:
        return self.source.term(self.slug, lang)

    @property
    def exact(self) -> bool:
        return self.score >= 100.0


@dataclass(frozen=True)
class Decision:
    """What a ranking means: ``kind`` is ``match``, ``ambiguous`` or ``none``."""

    kind: str
    candidates: list[Candidate]

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.kind == "match" else None


def decide(found: Sequence[Candidate], lang: str | None = None) -> Decision:
    """A match, a tie between entries, or no match (see the module docstring)."""
    if not found or found[0].score < MATCH_THRESHOLD:
        return Decision("none", list(found))
    best = found[0]
    ties = [c for c in found[1:] if best.score - c.score < TIE_MARGIN]
    if ties and lang:
        # an exact name in the requested language beats the same name in another one
        in_lang = best.name.lang == lang
        ties = [c for c in ties if not (in_lang and c.name.lang != lang)]
    if ties:
        return Decision("ambiguous", [best, *ties])
    return Decision("match", list(found))


class _Scorer:
    """Scores normalized names, kept sorted by length, for a normalized query."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self._short_end = bisect.bisect_left(keys, SHORT, key=len)

    def scores(self, key: str) -> dict[int, float]:
        n = len(key)
        keys = self.keys
        out: dict[int, float] = {}

        def take(choices: list[str], offset: int, scorer: Callable[..., float]) -> None:
            for _, score, i in process.extract(
                key, choices, scorer=scorer, processor=None, limit=None, score_cutoff=FUZZY_CUTOFF
            ):
                j = i + offset
                if score > out.get(j, 0.0):
                    out[j] = float(score)

        take(keys, 0, fuzz.ratio)
        if n < SHORT:
            # a short query counts inside a longer name only as one of its whole words
            start = bisect.bisect_right(keys, n, key=len)
            needle = f" {key} "
            for j in range(start, len(keys)):
                if needle in f" {keys[j]} ":
                    weighted = 100.0 * (PARTIAL_BASE + (1.0 - PARTIAL_BASE) * n / len(keys[j]))
                    if weighted > out.get(j, 0.0):
                        out[j] = weighted
        else:
            long = keys[self._short_end :]
            take(long, self._short_end, fuzz.token_sort_ratio)
            start = bisect.bisect_right(keys, n, key=len)
            for _, score, i in process.extract(
                key,
                keys[start:],
                scorer=fuzz.partial_ratio,
                processor=None,
                limit=None,
                score_cutoff=FUZZY_CUTOFF,
            ):
                j = i + start
                cover = n / len(keys[j])
                weighted = score * (PARTIAL_BASE + (1.0 - PARTIAL_BASE) * cover)
                if weighted > out.get(j, 0.0):
                    out[j] = weighted
        return {
            i: (100.0 if s >= 100.0 and keys[i] == key else min(s, 99.0)) for i, s in out.items()
        }


class _Base:
    """Ranking shared by the in-memory and the SQLite-backed index."""

    def scores(self, key: str) -> dict[int, float]:
        """Scores of the names worth scoring for a normalized query, by name id."""
        raise NotImplementedError

    def names_at(self, ids: list[int]) -> dict[int, Name]:
        raise NotImplementedError

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

        Among equal scores, a name in ``lang`` wins, then one in the languages of ``prefer``
        (in that order), then a preferred term over an alias.
        """
        order = [code for code in (lang, *prefer) if code]
        key = normalize(query[:MAX_QUERY_CHARS])
        if not key:
            return []
        scored = sorted(self.scores(key).items(), key=lambda kv: -kv[1])[:MAX_HITS]
        names = self.names_at([i for i, _ in scored])
        best: dict[str, tuple[tuple[float, float, int, int], Name]] = {}
        for i, score in scored:
            name = names[i]
            pref = len(order) - order.index(name.lang) if name.lang in order else 0
            rank = (score, fuzz.ratio(key, name.key), pref, int(name.is_term))
            if name.slug not in best or rank > best[name.slug][0]:
                best[name.slug] = (rank, name)
        ordered = sorted(best.values(), key=lambda item: (item[0], item[1].slug), reverse=True)
        return [Candidate(name.slug, rank[0], name, self) for rank, name in ordered[:limit]]


class Index(_Base):
    """All names of a loaded glossary, normalized, ready for :meth:`search`."""

    def __init__(self, glossary: Glossary) -> None:
        self.glossary = glossary
        names: list[Name] = []
        for entry in glossary:
            for lang in LANGS:
                for i, text in enumerate(entry.lang[lang].names):
                    key = normalize(text)
                    if key:
                        names.append(Name(key, text, entry.slug, lang, i == 0))
            names.append(Name(normalize(entry.slug), entry.slug, entry.slug, "", False))
        names.sort(key=lambda n: len(n.key))
        self.names = names
        self.scorer = _Scorer([n.key for n in names])

    def scores(self, key: str) -> dict[int, float]:
        return self.scorer.scores(key)

    def names_at(self, ids: list[int]) -> dict[int, Name]:
        return {i: self.names[i] for i in ids}

    def entry(self, slug: str) -> Entry:
        return self.glossary[slug]

    def term(self, slug: str, lang: str) -> str:
        return self.glossary[slug].term(lang)


class CompiledIndex(_Base):
    """The SQLite index of a folder (:mod:`glossary.index`); entries are loaded one by one."""

    def __init__(self, conn: Any, directory: Path) -> None:
        self.conn = conn
        self.directory = directory
        self._entries: dict[str, Entry] = {}

    def scores(self, key: str) -> dict[int, float]:
        from .index import trigrams

        grams = sorted(trigrams(key))
        marks = ",".join("?" * len(grams))
        counts = sorted(
            (n, g)
            for g, n in self.conn.execute(
                f"SELECT gram, n FROM gram_counts WHERE gram IN ({marks})", grams
            )
        )
        chosen, total = [], 0
        for n, g in counts:
            if len(chosen) >= 3 and total + n > GRAM_BUDGET:
                break
            chosen.append(g)
            total += n
        marks = ",".join("?" * len(chosen))
        rows = self.conn.execute(
            f"SELECT n.id, n.key FROM (SELECT id, COUNT(*) AS c FROM grams "
            f"WHERE gram IN ({marks}) GROUP BY id ORDER BY c DESC LIMIT ?) AS top "
            f"JOIN names n ON n.id = top.id",
            [*chosen, MAX_CANDIDATES],
        ).fetchall()
        rows.sort(key=lambda r: len(r[1]))
        found = {rows[i][0] - 1: s for i, s in _Scorer([r[1] for r in rows]).scores(key).items()}
        if found:
            return found
        # nothing shares a trigram ("zebra"): scan every name, for the nearest suggestions
        keys = self.conn.execute("SELECT key FROM names ORDER BY id").fetchall()
        return _Scorer([k[0] for k in keys]).scores(key)

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def names_at(self, ids: list[int]) -> dict[int, Name]:
        out: dict[int, Name] = {}
        for start in range(0, len(ids), 500):
            chunk = [i + 1 for i in ids[start : start + 500]]  # SQLite ids count from 1
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT id, key, text, slug, lang, is_term FROM names WHERE id IN ({marks})",
                chunk,
            ):
                out[row[0] - 1] = Name(row[1], row[2], row[3], row[4], bool(row[5]))
        return out

    def entry(self, slug: str) -> Entry:
        if slug not in self._entries:
            from .loader import _build, _Parsed

            row = self.conn.execute("SELECT data FROM entries WHERE slug = ?", (slug,)).fetchone()
            if row is None:
                raise KeyError(slug)
            data = json.loads(row[0])
            parsed = _Parsed(self.directory / f"{slug}.yaml", "", data, {}, True)
            self._entries[slug] = _build(parsed)
        return self._entries[slug]

    def term(self, slug: str, lang: str) -> str:
        row = self.conn.execute(
            "SELECT text FROM names WHERE slug = ? AND lang = ? AND is_term = 1", (slug, lang)
        ).fetchone()
        return row[0] if row else self.entry(slug).term(lang)


def open_index(directory: Path | None = None) -> CompiledIndex:
    """The compiled index of ``directory`` (default: the package's entries), valid for it now.

    Raises :class:`glossary.loader.GlossaryError` when the index had to be compiled and the
    entries are invalid.
    """
    from . import index
    from .loader import ENTRIES_DIR

    directory = Path(directory) if directory is not None else ENTRIES_DIR
    return CompiledIndex(index.open_index(directory), directory)


def resolve(glossary: Glossary, query: str, lang: str | None = None) -> Entry | None:
    """The entry ``query`` names: its slug, or its best match if :func:`decide` finds one."""
    entry = glossary.get(query.strip())
    if entry is not None:
        return entry
    decision = decide(Index(glossary).search(query, lang, limit=5), lang)
    return decision.best.entry if decision.best else None
