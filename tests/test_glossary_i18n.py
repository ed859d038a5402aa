"""Gettext catalogs (complete, compiled, every plural form), language names, collation, cache."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from babel import Locale
from babel.messages.plurals import get_plural
from babel.messages.pofile import read_po
from glossary_support import ROOT, VALID, copy_valid, edit

from glossary import cache, i18n, loader
from glossary.collation import sort_key, sorted_by

LOCALE = ROOT / "glossary" / "locale"


def i18n_tool():  # type: ignore[no-untyped-def]
    """scripts/i18n.py as a module."""
    spec = importlib.util.spec_from_file_location("i18n_tool", ROOT / "scripts" / "i18n.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["i18n_tool"] = module
    spec.loader.exec_module(module)
    return module


# --- catalogs ---------------------------------------------------------------------------------


def test_catalogs_are_current_and_complete() -> None:
    """Fails when a message changed without extract/update/translate/compile."""
    assert i18n_tool().problems() == []


@pytest.mark.parametrize("lang", ["es", "ru"])
def test_every_plural_form_is_filled(lang: str) -> None:
    with (LOCALE / lang / "LC_MESSAGES" / "glossary.po").open("rb") as f:
        catalog = read_po(f, locale=lang)
    assert catalog.num_plurals == get_plural(lang).num_plurals == 3
    # CLDR categories: es one/many/other; ru one/few/many/other, where ru "other" covers only
    # fractions, so Babel's gettext rule for integer counts has three forms for both.
    cldr = Locale(lang).plural_form.tags | {"other"}
    assert len(cldr) == {"es": 3, "ru": 4}[lang]
    plurals = [m for m in catalog if m.id and m.pluralizable]
    assert plurals, "the CLI uses ngettext"
    for m in plurals:
        assert len(m.string) == 3 and all(m.string), m.id


def test_plural_forms_at_runtime() -> None:
    ru, es = i18n.translator("ru"), i18n.translator("es")
    forms = [ru.ngettext("%(n)d entry", "%(n)d entries", n) % {"n": n} for n in (1, 3, 5, 21)]
    assert forms == ["1 запись", "3 записи", "5 записей", "21 запись"]
    forms = [es.ngettext("%(n)d entry", "%(n)d entries", n) % {"n": n} for n in (1, 2, 1000000)]
    assert forms == ["1 entrada", "2 entradas", "1000000 entradas"]
    assert i18n.translator("en").gettext("Definition:") == "Definition:"


def broken_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    tool = i18n_tool()
    copy = tmp_path / "locale"
    shutil.copytree(LOCALE, copy)
    monkeypatch.setattr(tool, "LOCALE_DIR", copy)
    monkeypatch.setattr(tool, "POT", copy / "glossary.pot")
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    return tool, copy


def test_check_catches_untranslated_and_stale_mo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool, copy = broken_copy(tmp_path, monkeypatch)
    po = copy / "es" / "LC_MESSAGES" / "glossary.po"
    text = po.read_text(encoding="utf-8")
    po.write_text(text.replace('msgstr "Definición:"', 'msgstr ""'), encoding="utf-8")
    found = tool.problems()
    assert (
        "locale/es/LC_MESSAGES/glossary.po: untranslated (or an empty plural form of) "
        "'Definition:'" in found
    )
    assert (
        "locale/es/LC_MESSAGES/glossary.mo is out of date; run: python scripts/i18n.py "
        "compile" in found
    )


def test_check_catches_empty_plural_form_and_fuzzy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool, copy = broken_copy(tmp_path, monkeypatch)
    po = copy / "ru" / "LC_MESSAGES" / "glossary.po"
    text = po.read_text(encoding="utf-8")
    text = text.replace('msgstr[2] "%(n)d записей"', 'msgstr[2] ""')
    text = text.replace(
        '#, python-format\nmsgid "Definition (%(language)s):"',
        '#, fuzzy, python-format\nmsgid "Definition (%(language)s):"',
    )
    po.write_text(text, encoding="utf-8")
    found = tool.problems()
    assert (
        "locale/ru/LC_MESSAGES/glossary.po: untranslated (or an empty plural form of) "
        "'%(n)d entry'" in found
    )
    assert (
        "locale/ru/LC_MESSAGES/glossary.po: fuzzy translation of "
        "'Definition (%(language)s):'" in found
    )


def test_check_catches_a_stale_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool, copy = broken_copy(tmp_path, monkeypatch)
    pot = copy / "glossary.pot"
    pot.write_text(
        pot.read_text(encoding="utf-8").replace('msgid "Definition:"', 'msgid "Definition!"'),
        encoding="utf-8",
    )
    assert any("glossary.pot is out of date" in p for p in tool.problems())


# --- language names and environment -----------------------------------------------------------


def test_language_names_come_from_babel() -> None:
    assert i18n.language_name("ru", "es") == "Ruso"
    assert i18n.language_name("es", "ru") == "Испанский"
    assert i18n.language_name("en", "en") == "English"
    assert i18n.language_name("de", "en") == "German"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "en"),
        ({"LANG": "ru_RU.UTF-8"}, "ru"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({"LANG": "es_AR.UTF-8", "LC_ALL": "ru_RU.UTF-8"}, "ru"),
        ({"LANGUAGE": "de:es", "LANG": "ru_RU.UTF-8"}, "es"),
        ({"LANGUAGE": "", "LC_MESSAGES": "es_ES@euro"}, "es"),
        ({"LANG": "de_DE.UTF-8"}, "en"),
    ],
)
def test_ui_lang_from_env(env: dict[str, str], expected: str) -> None:
    assert i18n.ui_lang_from_env(env) == expected


# --- collation --------------------------------------------------------------------------------


def test_spanish_collation() -> None:
    assert sorted_by(["oso", "ñandú", "nube", "zorro", "Ñu"], "es") == [
        "nube",
        "ñandú",
        "Ñu",
        "oso",
        "zorro",
    ]
    key = sort_key("es")
    assert key("nube") < key("ñandú") < key("oso")
    assert isinstance(key("x"), bytes)


def test_russian_collation_sorts_yo_with_ye() -> None:
    words = ["яблоко", "ёж", "жук", "еда", "ель", "ёлка", "дом", "Ёмкость", "етот"]
    # Alphabetical order with ё treated as е (a secondary difference only).
    assert sorted_by(words, "ru") == [
        "дом",
        "еда",
        "ёж",
        "ёлка",
        "ель",
        "Ёмкость",
        "етот",
        "жук",
        "яблоко",
    ]
    assert sorted(words)[0] == "Ёмкость"  # what code-point order would do instead
    key = sort_key("ru")
    assert key("еда") < key("ёж") < key("жук")
    assert key("еж") < key("ёж") < key("ежа")


# --- cache ------------------------------------------------------------------------------------


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("GLOSSARY_CACHE_DIR", str(directory))
    monkeypatch.delenv("GLOSSARY_CACHE", raising=False)
    return directory


def test_cache_serves_a_second_load_and_is_invalidated_by_edits(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = copy_valid(tmp_path)
    first = loader.load_glossary(d)
    assert len(list(cache_dir.glob("entries-*.json"))) == 1
    real_load = loader._load

    def must_not_parse(directory: Path):  # type: ignore[no-untyped-def]
        raise AssertionError("parsed although the cache is valid")

    monkeypatch.setattr(loader, "_load", must_not_parse)
    second = loader.load_glossary(d)
    assert second == first
    assert second["pruning"].lang == first["pruning"].lang
    monkeypatch.setattr(loader, "_load", real_load)
    edit(d, "ddim", "    term: DDIM Sampler", "    term: DDIM Sampling")
    assert loader.load_glossary(d)["ddim"].term("en") == "DDIM Sampling"
    edit(d, "ddim", "kind: concept", "kind: idea")
    with pytest.raises(loader.GlossaryError):
        loader.load_glossary(d)
    assert [p.name for p in cache_dir.iterdir() if p.name.startswith(".")] == []


def test_corrupt_or_disabled_cache_is_ignored(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = loader.load_glossary(VALID)
    for path in cache_dir.glob("entries-*.json"):
        path.write_text("{not json", encoding="utf-8")
    assert loader.load_glossary(VALID) == g
    assert cache.read("x", 1) is None
    cache.write("x", 1, {"a": 1})
    assert cache.read("x", 1) == {"a": 1} and cache.read("x", 2) is None
    monkeypatch.setenv("GLOSSARY_CACHE", "0")
    assert cache.read("x", 1) is None


def test_cache_rechecks_implemented_modules(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = copy_valid(tmp_path)
    loader.load_glossary(d)
    monkeypatch.setattr(loader, "module_exists", lambda module: False)
    with pytest.raises(loader.GlossaryError, match=r"module 'reference\.pruning' does not exist"):
        loader.load_glossary(d)
