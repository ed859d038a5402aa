"""Numbers, intervals, dates and interface labels in the page's language.

Numbers go through :func:`glossary.resulttext.format_number` (Babel: ``1,71`` in es and ru,
``1.71`` in en; Spanish groups from five digits on, as CLDR says); interface labels through the
gettext catalogs of :mod:`glossary.i18n` (run ``scripts/i18n.py extract update`` after changing
one).

A *ratio* (a speedup, a quality or memory ratio, an interaction factor) has one precision rule on
every page: three significant figures, trailing zeros kept (``1,75``, ``1,60``, ``0,778``,
``17,9``), so that a headline and its table always agree (:func:`ratio`). A ratio is never
grouped with a dot or a comma (``12.500`` reads as twelve and a half to an engineer): from five
digits on, its groups are separated by a narrow no-break space, as ISO 80000 writes them. An
interval never breaks across lines (a no-break space before it, word joiners around its dash),
and an interval whose two ends read the same (a baseline against itself, ``[1–1]``) is not
shown.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from glossary.resulttext import format_number

Translate = Callable[[str], str]
NOT_MEASURED = "—"
NBSP = "\u00a0"
"""No-break space: between a value and its interval."""
JOIN = "\u2060"
"""Word joiner: on both sides of an interval's dash, so that it never breaks there."""
GROUP = "\u202f"
"""Narrow no-break space: the group separator of a large ratio."""
RATIO_DIGITS = 3


def number(value: Any, lang: str, spec: str = ".4g") -> str:
    """A measured value for ``lang`` (``—`` when it was not measured)."""
    if value is None or isinstance(value, bool):
        return NOT_MEASURED
    return format_number(float(value), lang, spec)


def interval(span: Any, lang: str, spec: str = ".3g") -> str:
    """`` [lo–hi]`` in the locale's digits, unbreakable (``''`` without an interval, or when
    both ends read the same)."""
    if not span:
        return ""
    return _bracket(number(span[0], lang, spec), number(span[1], lang, spec))


def _bracket(lo: str, hi: str) -> str:
    if lo == hi:
        return ""
    return f"{NBSP}[{lo}{JOIN}–{JOIN}{hi}]"


def ratio(value: Any, lang: str) -> str:
    """A ratio with three significant figures in the locale's digits (``—`` when not
    measured); trailing zeros kept, groups (from five digits) separated by a narrow no-break
    space."""
    if value is None or isinstance(value, bool):
        return NOT_MEASURED
    from math import floor, isfinite, log10

    from babel.numbers import format_decimal

    x = float(value)
    if not isfinite(x):
        return NOT_MEASURED
    places = 0 if x == 0 else RATIO_DIGITS - 1 - floor(log10(abs(x)))
    x = round(x, places)  # negative places round 12 517 to 12 500
    if x and floor(log10(abs(x))) > RATIO_DIGITS - 1 - places:
        places -= 1  # 9.996 rounds to 10.00: still three significant figures (10.0)
    decimals = max(0, places)
    pattern = "#,##0." + "0" * decimals if decimals else "#,##0"
    grouped = abs(x) >= 10_000
    text = format_decimal(x, pattern, lang, group_separator=grouped)
    if grouped:
        from babel.numbers import get_group_symbol

        text = text.replace(get_group_symbol(lang), GROUP)
    return text.replace("\u00a0", GROUP) if grouped else text


def ratio_interval(span: Any, lang: str) -> str:
    """`` [lo–hi]`` of a ratio, each end by :func:`ratio`, unbreakable (``''`` without an
    interval, or when both ends read the same)."""
    if not span or span[0] is None or span[1] is None:
        return ""
    return _bracket(ratio(span[0], lang), ratio(span[1], lang))


def times(value: Any, span: Any, lang: str) -> str:
    """``1,75× [1,60–1,85]``: a speedup-like ratio with its interval (``—`` when not
    measured)."""
    if value is None:
        return NOT_MEASURED
    return ratio(value, lang) + "×" + ratio_interval(span, lang)


def ratio_with(value: Any, span: Any, lang: str) -> str:
    """``1,07 [1,02–1,12]``: a ratio with its interval (``—`` when not measured)."""
    if value is None:
        return NOT_MEASURED
    return ratio(value, lang) + ratio_interval(span, lang)


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
