"""Accent-blind search: the fold the reader's browser applies (glossary.site.search), the
compact index file, what the index holds and its one file per language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossary.normalize import normalize
from glossary.site.search import (
    compact_index,
    fold_char,
    fold_text,
    index_report,
    language_file,
    language_of,
    split_index,
)


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


@pytest.mark.parametrize(
    ("location", "lang"),
    [
        ("es/terms/poda/#definition", "es"),
        ("ru/", "ru"),
        ("terms/pruning/", "en"),  # the default language lives at the root
        ("", "en"),
        ("en/terms/pruning/", "en"),  # the default language has no folder: "en" is no prefix
        ("estimate/", "en"),  # a page whose name starts like a language is not in it
    ],
)
def test_a_document_language_is_its_folder_or_the_default(location: str, lang: str) -> None:
    assert language_of(location, ("es", "ru", "en"), "en") == lang


def test_split_index_writes_each_language_its_own_documents_in_order(tmp_path: Path) -> None:
    """The browser loads the page's language's file first: it holds that language's documents
    alone, in the whole index's order (a page's article before its sections, as Material's
    worker requires), under the whole index's config; the whole index is left as it was."""
    config = {"lang": ["en", "es", "ru"], "separator": "[\\s\\-]+", "pipeline": ["trimmer"]}
    docs = [
        {"location": "", "title": "Home", "text": "a"},
        {"location": "es/terms/poda/", "title": "Poda", "text": "b"},
        {"location": "terms/pruning/", "title": "Pruning", "text": "c"},
        {"location": "es/terms/poda/#definition", "title": "Definición", "text": "d"},
    ]
    whole = tmp_path / "search" / "search_index.json"
    whole.parent.mkdir()
    whole.write_text(json.dumps({"config": config, "docs": docs}), encoding="utf-8")
    before = whole.read_bytes()
    written = split_index(tmp_path, ("es", "ru", "en"), "en")
    assert written == {lang: language_file(tmp_path, lang) for lang in ("es", "ru", "en")}
    parts = {lang: json.loads(path.read_text("utf-8")) for lang, path in written.items()}
    assert [d["location"] for d in parts["es"]["docs"]] == ["es/terms/poda/", docs[3]["location"]]
    assert [d["location"] for d in parts["en"]["docs"]] == ["", "terms/pruning/"]
    assert parts["ru"]["docs"] == []  # a language with no page yet: an empty file, never a 404
    assert all(part["config"] == config for part in parts.values())
    assert whole.read_bytes() == before
