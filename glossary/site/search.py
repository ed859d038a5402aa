"""Accent-blind site search: every accented word of a page is also indexed without its accents.

Material for MkDocs searches a lunr index (``search/search_index.json``) built from the pages'
text as written, so "destilacion" (typed without the accent) does not find "destilación", and
"елка" does not find "ёлка". After the build, :func:`fold_index` appends to each document the
folded form of every word that has an accent or a ``ё`` (:func:`glossary.normalize.normalize`
rules: accents stripped, ``ё`` -> ``е``, ``й`` kept), once per document. A query with the accent
still matches the original word; one without matches the folded copy. The index grows only by
the distinct accented words of each page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from glossary.normalize import normalize

_WORD = re.compile(r"\w+", re.UNICODE)


def folded_words(text: str) -> list[str]:
    """The distinct folded forms of the accented words of ``text`` that ``text`` lacks (so a
    second pass over the same index adds nothing)."""
    words = _WORD.findall(text)
    present = {w.casefold() for w in words}
    seen: dict[str, None] = {}
    for word in words:
        folded = normalize(word)
        if folded and folded not in present and " " not in folded:
            seen.setdefault(folded, None)
    return list(seen)


def fold_document(doc: dict[str, Any]) -> bool:
    """Add the folded words of a document's title and text; whether anything was added."""
    extra = folded_words(f"{doc.get('title', '')} {doc.get('text', '')}")
    if not extra:
        return False
    doc["text"] = f"{doc.get('text', '')} {' '.join(extra)}".strip()
    return True


def fold_index(site_dir: Path) -> int:
    """Fold every search index under ``site_dir``; return the number of documents changed."""
    from glossary.safewrite import atomic_write_text

    changed = 0
    for path in sorted(site_dir.rglob("search_index.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        count = sum(fold_document(doc) for doc in data.get("docs", []))
        if count:
            atomic_write_text(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        changed += count
    return changed
