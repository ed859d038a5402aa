"""The lookup over the compiled SQLite index of a folder (:mod:`glossary.index`).

:class:`CompiledIndex` answers :meth:`glossary.lookup._Base.search` without loading the
glossary: names and identifiers are scored only among those sharing the most character trigrams
with the query (:data:`glossary.lookup.MAX_CANDIDATES`, from the rarest trigrams up to
:data:`glossary.lookup.GRAM_BUDGET` postings), the texts are read through their stems' postings,
and only the entries shown are loaded, one row each. So the cost of a lookup depends on the
query, not on the size of the glossary.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .fuzzy import Scorer
from .lookup import GRAM_BUDGET, MAX_CANDIDATES, Name, _Base
from .model import Entry

_CHUNK = 500
"""Ids per ``IN (...)`` list (SQLite allows 999 parameters in old builds)."""


class CompiledIndex(_Base):
    """The SQLite index of a folder (:mod:`glossary.index`); entries are loaded one by one."""

    def __init__(self, conn: Any, directory: Path) -> None:
        self.conn = conn
        self.directory = directory
        self._entries: dict[str, Entry] = {}
        self._stats: dict[str, list[float]] | None = None

    # --- tiers 1 and 2: names and identifiers --------------------------------------------------

    def _candidates(self, key: str, prefix: str, table: str) -> list[tuple[int, str]]:
        """``(id, key)`` of the rows of ``table`` sharing the most trigrams with ``key``."""
        from .index import trigrams

        grams = sorted(trigrams(key))
        marks = ",".join("?" * len(grams))
        counts = sorted(
            (n, g)
            for g, n in self.conn.execute(
                f"SELECT gram, n FROM {prefix}gram_counts WHERE gram IN ({marks})", grams
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
            f"SELECT n.id, n.key FROM (SELECT id, COUNT(*) AS c FROM {prefix}grams "
            f"WHERE gram IN ({marks}) GROUP BY id ORDER BY c DESC LIMIT ?) AS top "
            f"JOIN {table} n ON n.id = top.id",
            [*chosen, MAX_CANDIDATES],
        ).fetchall()
        rows.sort(key=lambda r: len(r[1]))
        return rows

    def name_scores(self, key: str) -> dict[int, float]:
        rows = self._candidates(key, "", "names")
        found = {rows[i][0] - 1: s for i, s in Scorer([r[1] for r in rows]).scores(key).items()}
        if found:
            return found
        # nothing shares a trigram ("zebra"): scan every name, for the nearest suggestions
        keys = self.conn.execute("SELECT key FROM names ORDER BY id").fetchall()
        return Scorer([k[0] for k in keys]).scores(key)

    def ident_scores(self, key: str) -> dict[int, float]:
        rows = self._candidates(key, "ident_", "idents")
        scores = Scorer([r[1] for r in rows]).scores(key)
        ids = [rows[i][0] for i in scores]
        weights = dict(self._rows("SELECT id, weight FROM idents WHERE id IN ({})", ids))
        return {rows[i][0] - 1: s * weights[rows[i][0]] for i, s in scores.items()}

    def idents_keyed(self, keys: list[str]) -> dict[int, float]:
        marks = ",".join("?" * len(keys))
        sql = f"SELECT id, weight FROM idents WHERE key IN ({marks})"
        return {r[0] - 1: r[1] for r in self.conn.execute(sql, keys)}

    def _rows(self, sql: str, ids: list[int]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            out += self.conn.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
        return out

    def names_at(self, ids: list[int]) -> dict[int, Name]:
        sql = "SELECT id, key, text, slug, lang, is_term FROM names WHERE id IN ({})"
        return {
            r[0] - 1: Name(r[1], r[2], r[3], r[4], bool(r[5]))  # SQLite ids count from 1
            for r in self._rows(sql, [i + 1 for i in ids])
        }

    def idents_at(self, ids: list[int]) -> dict[int, Name]:
        sql = "SELECT id, key, text, slug, field FROM idents WHERE id IN ({})"
        return {
            r[0] - 1: Name(r[1], r[2], r[3], "", False, r[4])
            for r in self._rows(sql, [i + 1 for i in ids])
        }

    # --- tier 3: texts -------------------------------------------------------------------------

    def stats(self, lang: str) -> tuple[int, float]:
        if self._stats is None:
            self._stats = json.loads(self.meta("text_stats") or "{}")
        n, avgdl = self._stats.get(lang, (0, 1.0))
        return int(n), float(avgdl)

    def frequencies(self, lang: str, stems: list[str]) -> dict[str, int]:
        marks = ",".join("?" * len(stems))
        sql = f"SELECT stem, df FROM stems WHERE lang = ? AND stem IN ({marks})"
        return dict(self.conn.execute(sql, [lang, *stems]))

    def postings(
        self, lang: str, stem: str, docs: set[int] | None
    ) -> dict[int, tuple[int, list[int]]]:
        sql = "SELECT doc, positions FROM postings WHERE lang = ? AND stem = ?"
        rows = self.conn.execute(sql, (lang, stem))
        out = {}
        for doc, positions in rows:
            if docs is None or doc in docs:
                found = [int(p) for p in positions.split()]
                out[doc] = (len(found), found)
        return out

    def documents(self, ids: Iterable[int]) -> dict[int, tuple[str, str, int]]:
        sql = "SELECT id, slug, field, length FROM docs WHERE id IN ({})"
        return {r[0]: (r[1], r[2], r[3]) for r in self._rows(sql, list(ids))}

    def documents_of(self, lang: str, slugs: Iterable[str]) -> set[int]:
        wanted = list(slugs)
        marks = ",".join("?" * len(wanted))
        sql = f"SELECT id FROM docs WHERE lang = ? AND slug IN ({marks})"
        return {r[0] for r in self.conn.execute(sql, [lang, *wanted])}

    # --- entries -------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

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


def open_compiled(directory: Path | None = None) -> CompiledIndex:
    """The compiled index of ``directory`` (default: the package's entries), valid for it now.

    Raises :class:`glossary.loader.GlossaryError` when the index had to be compiled and the
    entries are invalid.
    """
    from . import index
    from .loader import ENTRIES_DIR

    directory = Path(directory) if directory is not None else ENTRIES_DIR
    return CompiledIndex(index.open_index(directory), directory)
