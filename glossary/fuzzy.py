"""Fuzzy scores of names against a query (0-100), for the first two tiers of the lookup.

Names (terms, aliases, slugs; the identifiers of the second tier alike) are compared after
:func:`glossary.normalize.normalize`. Each name gets the best of three scores:

1. the plain similarity ``fuzz.ratio`` of the whole strings (100 only when they are equal, the
   exact match, always ranked first; one typo in a word of five letters still scores about 80).
   It is ``2 * common / (len(query) + len(name))``, so it already demands that *both* the query
   and the name be mostly covered by what they share;
2. the same after sorting the words (``fuzz.token_sort_ratio``: "checkpointing gradient"),
   scaled by the fraction of the query's words found among the name's (:func:`word_cover`);
3. for a query shorter than the name, the partial similarity (the query found, perhaps with a
   typo, inside the name: "consistency" in "latent consistency model"), scaled by how much of
   the name the query covers: ``partial * (PARTIAL_BASE + (1 - PARTIAL_BASE) * len(query) /
   len(name))``. A query under :data:`SHORT` characters gets this only as a whole word of the
   name, without typos ("poda" in "poda de red", never "epca" in "deepcache").

What is *not* scored is a name found inside a longer query: a query matches only when enough of
it is covered by one name (the plain ratio of a name wholly inside the query is
``2c / (1 + c)`` for the covered fraction ``c``: at least 72 means ``c >= 0.56``). That is what
keeps "chocolate cake", a cooking recipe or a word salad from matching an entry whose short
alias happens to occur in them. Only ``rapidfuzz.process`` and ``rapidfuzz.fuzz`` are imported:
compiled extensions that do not import numpy.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from rapidfuzz import fuzz, process

FUZZY_CUTOFF = 40
"""Scores below this are not even suggestions."""
SHORT = 5
"""Queries shorter than this match inside a longer name only as a whole word."""
PARTIAL_BASE = 0.6
"""Weight of a partial match when the query covers almost none of the name; it grows linearly
to 1.0 as the query covers all of it."""


WORD_MATCH = 75.0
"""A query word counts as found in a name when it is this similar to one of the name's words."""


def word_cover(query: str, name: str) -> float:
    """The fraction of the query's words found (:data:`WORD_MATCH`) among the name's words.

    Sorting the words (score 2) compares letters, not words: "attention deficit disorder" and
    "memory efficient attention" share enough letters once sorted to score 73, though only one
    word of the query is in the name. Scaling that score by the words found keeps reordered
    names ("checkpointing gradient", cover 1) and drops such near-misses (cover 1/3).
    """
    words, names = query.split(), name.split()
    found = sum(1 for w in words if max(fuzz.ratio(w, v) for v in names) >= WORD_MATCH)
    return found / len(words)


class Scorer:
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
            for _, score, i in process.extract(
                key,
                long,
                scorer=fuzz.token_sort_ratio,
                processor=None,
                limit=None,
                score_cutoff=FUZZY_CUTOFF,
            ):
                j = i + self._short_end
                gated = score * word_cover(key, keys[j])
                if gated > out.get(j, 0.0):
                    out[j] = gated
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
