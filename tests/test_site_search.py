"""Accent-blind search: the folded index (glossary.site.search)."""

from __future__ import annotations

import json
from pathlib import Path

from glossary.site.search import fold_document, fold_index, folded_words


def test_accented_words_are_also_indexed_folded_once() -> None:
    assert folded_words("La destilación y el ñandú; Ёлка и кэширование; й") == [
        "destilacion",
        "nandu",
        "елка",
    ]
    doc = {"title": "Destilación", "text": "La destilación progresiva"}
    assert fold_document(doc) and doc["text"].endswith(" destilacion")
    assert not fold_document(doc)  # idempotent: the build calls the hook once per language


def test_fold_index_rewrites_every_search_index(tmp_path: Path) -> None:
    index = tmp_path / "search" / "search_index.json"
    index.parent.mkdir()
    docs = [
        {"location": "es/", "title": "Poda", "text": "Guía sin clasificador"},
        {"location": "", "title": "Pruning", "text": "plain ascii"},
    ]
    index.write_text(json.dumps({"config": {}, "docs": docs}), encoding="utf-8")
    assert fold_index(tmp_path) == 1
    data = json.loads(index.read_text(encoding="utf-8"))
    assert data["docs"][0]["text"].endswith("guia") and data["docs"][1]["text"] == "plain ascii"
