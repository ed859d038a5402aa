"""Numbers, intervals, dates and interface labels in the page's language.

Numbers go through :func:`glossary.resulttext.format_number` (Babel: ``1,71`` in es and ru,
``1.71`` in en; Spanish groups from five digits on, as CLDR says); interface labels through the
gettext catalogs of :mod:`glossary.i18n` (run ``scripts/i18n.py extract update`` after changing
one).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from glossary.resulttext import format_number

Translate = Callable[[str], str]
NOT_MEASURED = "—"


def number(value: Any, lang: str, spec: str = ".4g") -> str:
    """A measured value for ``lang`` (``—`` when it was not measured)."""
    if value is None or isinstance(value, bool):
        return NOT_MEASURED
    return format_number(float(value), lang, spec)


def interval(span: Any, lang: str, spec: str = ".3g") -> str:
    """`` [lo–hi]`` in the locale's digits (``''`` without an interval)."""
    if not span:
        return ""
    return f" [{number(span[0], lang, spec)}–{number(span[1], lang, spec)}]"


def format_date(iso: str, lang: str) -> str:
    """Format an ISO-8601 timestamp as a localized date and UTC time; pass unknown text on."""
    from babel.dates import format_datetime

    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    text = format_datetime(when, format="medium", tzinfo=when.tzinfo, locale=lang)
    offset = when.utcoffset()
    return f"{text} UTC" if offset is not None and not offset else text


def translator(lang: str) -> Translate:
    """The gettext function of ``lang`` from :mod:`glossary.i18n`."""
    from glossary import i18n

    t: Any = i18n.translator(lang)
    return t.gettext if hasattr(t, "gettext") else t
