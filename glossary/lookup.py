"""Find an entry from any of its names in any language, tolerating case, accents and typos.

Every term and alias of every language is indexed after :func:`glossary.normalize.normalize`.
A query is normalized the same way (and cut to :data:`MAX_QUERY_CHARS`), then:

1. names equal to the normalized query score 100 (exact match, always ranked first);
2. other names are scored with rapidfuzz's ``WRatio``, a weighted maximum of the plain
   Levenshtein ratio (typos), token-sort/token-set ratios (word order) and partial ratios (a
   query that is part of a longer name), the latter scaled down by 0.9-0.95. When the query or
   the name is shorter than :data:`SHORT` characters, the pair is scored with the plain ratio
   or 0.75 of the partial ratio instead;
3. each entry keeps its best-scoring name; entries are ranked by score, then by the plain
   ratio of the whole strings (of two names that score alike through a partial match, the one
   closer to the query as a whole wins: "Époda" is a typo of "Época", not of "Poda de Red"),
   then by the language of the name (the requested one, then the preferred ones such as the UI
   language and English), then by whether it is a preferred term rather than an alias.

Only ``rapidfuzz.process`` and ``rapidfuzz.fuzz`` are imported: they are compiled extensions
that do not import numpy, which keeps a cold ``glossary lookup`` fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from .model import Entry, Glossary
from .normalize import normalize
from .schema import LANGS

MAX_QUERY_CHARS = 200
MATCH_THRESHOLD = 72.0
"""Candidates scoring below this are suggestions, not matches."""
FUZZY_CUTOFF = 40
"""Scores below this are not even suggestions."""
SHORT = 5
SHORT_PARTIAL_WEIGHT = 0.75
"""A string under SHORT characters found inside a longer one is weak evidence: ``epca`` (a typo
of ``época``) occurs verbatim in ``deepcache``, and the alias ``dp`` in ``dedpcache``. For such
pairs a partial match counts 0.75 of its score instead of WRatio's 0.9."""


@dataclass(frozen=True)
class Name:
    """One indexed name: a term or alias of an entry in one language."""

    key: str
    text: str
    slug: str
    lang: str
    is_term: bool


@dataclass(frozen=True)
class Candidate:
    """An entry found for a query, with the name that matched best."""

    entry: Entry
    score: float
    name: Name

    @property
    def exact(self) -> bool:
        return self.score >= 100.0


class Index:
    """All names of a glossary, normalized, ready for :meth:`search`."""

    def __init__(self, glossary: Glossary) -> None:
        self.glossary = glossary
        self.names: list[Name] = []
        for entry in glossary:
            for lang in LANGS:
                text = entry.lang[lang]
                for i, name in enumerate(text.names):
                    key = normalize(name)
                    if key:
                        self.names.append(Name(key, name, entry.slug, lang, i == 0))
        for entry in glossary:
            self.names.append(Name(normalize(entry.slug), entry.slug, entry.slug, "", False))
        self._keys = [n.key for n in self.names]
        self._short_index = [i for i, k in enumerate(self._keys) if len(k) < SHORT]
        self._long_index = [i for i, k in enumerate(self._keys) if len(k) >= SHORT]
        self._short_keys = [self._keys[i] for i in self._short_index]
        self._long_keys = [self._keys[i] for i in self._long_index]

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
        scored: dict[int, float] = {i: 100.0 for i, k in enumerate(self._keys) if k == key}
        for i, score in self._fuzzy(key).items():
            if i not in scored:
                scored[i] = min(score, 99.0)
        best: dict[str, tuple[tuple[float, float, int, int], Name]] = {}
        for i, score in scored.items():
            name = self.names[i]
            pref = len(order) - order.index(name.lang) if name.lang in order else 0
            rank = (score, fuzz.ratio(key, name.key), pref, int(name.is_term))
            if name.slug not in best or rank > best[name.slug][0]:
                best[name.slug] = (rank, name)
        ordered = sorted(best.values(), key=lambda item: (item[0], item[1].slug), reverse=True)
        return [
            Candidate(self.glossary[name.slug], rank[0], name) for rank, name in ordered[:limit]
        ]

    def _fuzzy(self, key: str) -> dict[int, float]:
        """Fuzzy scores (0-100) of the indexed names for a normalized query, above the cutoff.

        A pair with a string shorter than :data:`SHORT` characters (query or name) is scored
        with the plain ratio or a down-weighted partial ratio; other pairs with WRatio.
        """
        scores: dict[int, float] = {}
        weak = self._keys if len(key) < SHORT else self._short_keys
        for scorer, weight in ((fuzz.ratio, 1.0), (fuzz.partial_ratio, SHORT_PARTIAL_WEIGHT)):
            for _, score, i in process.extract(
                key, weak, scorer=scorer, processor=None, limit=None, score_cutoff=FUZZY_CUTOFF
            ):
                j = i if weak is self._keys else self._short_index[i]
                scores[j] = max(scores.get(j, 0.0), weight * float(score))
        if len(key) >= SHORT:
            for _, score, i in process.extract(
                key,
                self._long_keys,
                scorer=fuzz.WRatio,
                processor=None,
                limit=None,
                score_cutoff=FUZZY_CUTOFF,
            ):
                scores[self._long_index[i]] = float(score)
        return scores


def resolve(glossary: Glossary, query: str, lang: str | None = None) -> Entry | None:
    """The entry ``query`` names: its slug, or its best match above :data:`MATCH_THRESHOLD`."""
    entry = glossary.get(query.strip())
    if entry is not None:
        return entry
    found = Index(glossary).search(query, lang, limit=1)
    if found and found[0].score >= MATCH_THRESHOLD:
        return found[0].entry
    return None
