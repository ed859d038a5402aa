"""User-interface language: gettext catalogs for es, ru and en, and language names from Babel.

The command line's messages are marked with ``_()`` and ``ngettext()`` in the source; the
catalogs live in ``glossary/locale/<lang>/LC_MESSAGES/glossary.po`` (domain ``glossary``) and are
compiled to ``.mo`` files by ``scripts/i18n.py compile`` (Babel). Plural forms follow Babel's
CLDR rules: Spanish and Russian have three forms each, English two.

:func:`ui_lang_from_env` follows gettext's order of environment variables (``LANGUAGE``, then
``LC_ALL``, ``LC_MESSAGES``, ``LANG``): the first one that is set decides, and a locale this
project has no catalog for (``C``, ``de_DE``) falls back to English.
"""

from __future__ import annotations

import gettext
import importlib.util
import os
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from . import cache as disk_cache
from .schema import LANGS

DOMAIN = "glossary"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DEFAULT_LANG = "en"
ENV_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


@cache
def translator(lang: str) -> gettext.GNUTranslations | gettext.NullTranslations:
    """The compiled catalog for ``lang``; untranslated (English) strings if there is none."""
    return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[lang], fallback=True)


def _code(locale_name: str) -> str:
    """``ru_RU.UTF-8@euro`` -> ``ru``."""
    return locale_name.split(".")[0].split("@")[0].replace("-", "_").split("_")[0].lower()


def ui_lang_from_env(environ: dict[str, str] | None = None) -> str:
    """The UI language named by the environment, one of :data:`LANGS`; ``en`` otherwise."""
    env = os.environ if environ is None else environ
    for var in ENV_VARS:
        value = env.get(var, "")
        if not value:
            continue
        for name in value.split(":"):
            if _code(name) in LANGS:
                return _code(name)
        return DEFAULT_LANG
    return DEFAULT_LANG


def _babel_stamp() -> list[Any] | None:
    spec = importlib.util.find_spec("babel")
    if spec is None or spec.origin is None:
        return None
    stat = Path(spec.origin).stat()
    return [spec.origin, stat.st_size, stat.st_mtime_ns]


def _babel_name(code: str, in_lang: str) -> str:
    from babel import Locale  # loading CLDR locale data costs tens of milliseconds

    name = Locale.parse(code).get_display_name(Locale.parse(in_lang)) or code
    return name[:1].upper() + name[1:]


@lru_cache(maxsize=1)
def _project_names() -> dict[str, dict[str, str]]:
    """Names of the project's languages in each of them, from Babel, cached on disk."""
    key = [_babel_stamp(), list(LANGS)]
    names = disk_cache.read("language-names", key)
    if isinstance(names, dict) and all(isinstance(names.get(lg), dict) for lg in LANGS):
        return names
    names = {in_lang: {code: _babel_name(code, in_lang) for code in LANGS} for in_lang in LANGS}
    disk_cache.write("language-names", key, names)
    return names


@cache
def language_name(code: str, in_lang: str) -> str:
    """The name of language ``code`` written in language ``in_lang`` (``ru``, ``es`` -> Ruso).

    Names come from Babel's CLDR data (cached on disk by :mod:`glossary.cache`); the first
    letter is capitalized for use as a label.
    """
    if code in LANGS and in_lang in LANGS:
        return _project_names()[in_lang][code]
    return _babel_name(code, in_lang)
