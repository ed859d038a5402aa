"""Accent-blind search: the fold the reader's browser applies (glossary.site.search), the
compact index file and what the index holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossary.normalize import normalize
from glossary.site.search import compact_index, fold_char, fold_text, index_report


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Destilación progresiva", "Destilacion progresiva"),
        ("ñandú Ñ", "nandu N"),
        ("Ёлка и ёмкость", "Елка и емкость"),
        ("с учётом шага", "с учетом шага"),
        ("й Й stays", "й Й stays"),  # a letter of its own in Russian, not an accent
        ("Fréchet θ ×", "Frechet θ ×"),
        ("Кэширование, кэш и КЭШ; это", "Кеширование, кеш и КЕШ; это"),  # кэш = кеш only
    ],
)
def test_fold_drops_accents_and_diaeresis_and_keeps_short_i(text: str, folded: str) -> None:
    assert fold_text(text) == folded


def test_fold_keeps_every_position_and_agrees_with_lookup_normalization() -> None:
    """The browser shows the original text at the positions it highlighted in the folded one,
    so a fold never changes a string's length (in UTF-16 units, as JavaScript counts)."""
    text = "Caché · ёмкость · Ангстрём · naïve · 𝛼-ñ · Й"
    assert len(fold_text(text).encode("utf-16-le")) == len(text.encode("utf-16-le"))
    assert fold_text("кэш") == "кеш"  # the one fold beyond normalize: both spellings
    for word in ("destilación", "ёмкость", "учётом", "Fréchet", "йогурт", "Ñandú"):
        assert normalize(fold_text(word)) == normalize(word)
        assert fold_text(word).casefold() == normalize(word)
    assert fold_char("ё") == "е" and fold_char("é") == "e" and fold_char("й") == "й"


def test_compact_index_keeps_the_data_and_drops_escapes(tmp_path: Path) -> None:
    index = tmp_path / "search" / "search_index.json"
    index.parent.mkdir()
    data = {"config": {"lang": ["es"]}, "docs": [{"location": "ru/", "title": "Ёлка", "text": "ы"}]}
    index.write_text(json.dumps(data, indent=1), encoding="utf-8")  # \u-escaped, spaced
    before = index.stat().st_size
    assert compact_index(index)
    assert json.loads(index.read_text(encoding="utf-8")) == data
    assert "Ёлка" in index.read_text(encoding="utf-8") and index.stat().st_size < before
    assert not compact_index(index)  # already compact
    report = index_report(tmp_path)
    assert (report.documents, report.locations) == (1, frozenset({"ru/"}))
