"""The words of a benchmark result, in the reader's language, from gettext catalogs.

Result files hold message ids and numbers (:mod:`reference.harness.schema`). This module turns
them into text: ``metric.latency_ms`` -> "Latencia", a row's ``{"method": "deepcache",
"interval": 3}`` -> "DeepCache N=3", a note id with its parameters -> a sentence whose numbers are
formatted for the locale by Babel ("1 318,5" in Russian, "1318,5" in Spanish, "1,318.5" in
English).

Catalogs
--------
* the shared domain ``results`` (``glossary/locale/<lang>/LC_MESSAGES/results.po``): metric names,
  units, roles, aim states, anomalies and the notes every benchmark can use;
* ``guide``, beside it: the words of the site's "What should I use?" page;
* ``production``, beside it: what each technique's ``apply_x`` call does and why it refuses a
  class (:mod:`glossary.site.production`);
* one domain per technique, named by its slug, beside its code
  (``reference/<package>/locale/<lang>/LC_MESSAGES/<slug>.po``): its configuration methods,
  custom metrics, aims, notes, figure captions and command-line options.

Message ids are symbolic (``note.skipped-flops``), so the English text lives in the English
catalog like every other language, and a result never stores a sentence. Placeholders are
Python's named conversions, ``%(name)s`` for identifiers and ``%(f).3f``, ``%(n)d`` or
``%(x).3g`` for numbers (a percentage is written ``%(p).1f %%``); a message with plural forms
picks its form by the parameter ``n``.
The ``.po`` files are read with Babel (no compile step; read once per process).

Imports the standard library and Babel only (the ``glossary`` command stays torch-free).
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
REFERENCE_DIR = Path(__file__).resolve().parent.parent / "reference"
SHARED_DOMAIN = "results"
SITE_DOMAINS = (SHARED_DOMAIN, "guide", "production")
"""Domains kept in ``glossary/locale`` (the shared one, the guide page's own, and the words of
the technique pages' "On a diffusers model" sections)."""
BORROWS = {"realshape-gpu": "realshape"}
"""A study that measures another study's comparison on other hardware uses that study's words
after its own (its catalog holds only what differs: the title)."""
LANGS = ("es", "ru", "en")
MIN_GROUPING_DIGITS = {"es": 2, "ru": 1, "en": 1}
"""CLDR's ``minimumGroupingDigits`` (Babel does not apply it): Spanish writes 1318,5 but
12.318,5, so that a four-digit number is not read as a decimal."""
PLACEHOLDER = re.compile(r"%\((?P<name>[a-z_][a-z0-9_]*)\)(?P<spec>\.\d+[fg]|[sdfg])")


ENTRIES_DIR = Path(__file__).resolve().parent / "entries"


@cache
def entry_term(slug: str, lang: str) -> str | None:
    """The term of glossary entry ``slug`` in ``lang``, the name a reader sees for it everywhere
    (``None`` without such an entry). It is read from the entry's file, so that a command line
    of ``reference`` names a technique like the site does without loading the glossary."""
    import yaml

    path = ENTRIES_DIR / f"{slug}.yaml"
    if not path.is_file():
        return None
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    term = (data.get("lang", {}).get(lang) or {}).get("term") if isinstance(data, dict) else None
    return str(term) if term else None


def term_with_method(term: str | None, method: str) -> str:
    """A technique's display name: the entry's ``term``, then the specific ``method`` where it
    says more ("Método del Acelerador (predicción de pasos)"); ``method`` alone without a term."""
    if not term or term.casefold() == method.casefold():
        return term or method
    return f"{term} ({method})"


def domains_of(slug: str) -> tuple[str, ...]:
    """The catalogs a result's text is looked up in, in order: its own, the one it borrows
    (`BORROWS`), the shared one."""
    return (slug, *([BORROWS[slug]] if slug in BORROWS else []), SHARED_DOMAIN)


def catalog_path(domain: str, lang: str) -> Path:
    """The ``.po`` file of ``domain`` in ``lang`` (shared domain or a technique slug)."""
    if domain in SITE_DOMAINS:
        return LOCALE_DIR / lang / "LC_MESSAGES" / f"{domain}.po"
    package = domain.replace("-", "_")
    return REFERENCE_DIR / package / "locale" / lang / "LC_MESSAGES" / f"{domain}.po"


@cache
def _catalog(domain: str, lang: str) -> tuple[dict[str, Any], Callable[[int], int]]:
    """``{msgid: str | tuple of plural forms}`` and the plural-index function."""
    from babel.messages.pofile import read_po

    path = catalog_path(domain, lang)
    if not path.is_file():
        return {}, lambda n: 0 if n == 1 else 1
    with path.open("rb") as fh:
        catalog = read_po(fh, locale=lang, domain=domain)
    messages: dict[str, Any] = {}
    for m in catalog:
        if not m.id:
            continue
        key = m.id[0] if isinstance(m.id, tuple) else m.id
        if m.string and not m.fuzzy:
            messages[key] = m.string
    plural = gettext.c2py(catalog.plural_expr)  # type: ignore[attr-defined]
    return messages, plural


def _lookup(msgid: str, domains: Iterable[str], lang: str, n: Any) -> str | None:
    for domain in domains:
        messages, plural = _catalog(domain, lang)
        text = messages.get(msgid)
        if isinstance(text, tuple):
            count = int(n) if isinstance(n, int | float) else 1
            index = min(plural(count), len(text) - 1)
            return text[index]
        if text:
            return text
    return None


def format_number(value: float, lang: str, spec: str = ".3g") -> str:
    """``value`` with the locale's digits, separators and minus sign (Babel)."""
    from math import floor, log10

    from babel.numbers import format_decimal

    grouped = abs(value) >= 10 ** (2 + MIN_GROUPING_DIGITS.get(lang, 1))
    if spec == "d":
        return format_decimal(round(value), locale=lang, group_separator=grouped)
    digits = int(spec[1:-1]) if len(spec) > 1 and spec[0] == "." else (3 if spec == "g" else 2)
    if spec[-1] == "g":
        if value == 0:
            return format_decimal(0, locale=lang)
        decimals = max(0, digits - 1 - floor(log10(abs(value))))
        pattern = "#,##0." + "#" * decimals if decimals else "#,##0"
        return format_decimal(round(value, decimals), pattern, lang, group_separator=grouped)
    pattern = "#,##0." + "0" * digits if digits else "#,##0"
    return format_decimal(value, format=pattern, locale=lang, group_separator=grouped)


def fill(template: str, params: Mapping[str, Any], lang: str) -> str:
    """Replace each placeholder of ``template`` by its parameter, formatted for ``lang``."""

    def one(match: re.Match[str]) -> str:
        return _one(params[match["name"]], match["spec"])

    def _one(value: Any, spec: str) -> str:
        if isinstance(value, list | tuple):
            return ", ".join(_one(v, spec) for v in value)
        if isinstance(value, str | bool) or value is None:
            return "—" if value is None else str(value)
        if spec == "s":
            return format_number(float(value), lang, ".4g")
        return format_number(float(value), lang, spec)

    return PLACEHOLDER.sub(one, template).replace("%%", "%")


class ResultText:
    """The text of one technique's result in one language."""

    def __init__(self, slug: str, lang: str) -> None:
        if lang not in LANGS:
            raise ValueError(f"unknown language {lang!r}; use one of {', '.join(LANGS)}")
        self.slug, self.lang = slug, lang
        self.domains = domains_of(slug)

    def message(self, msgid: str, params: Mapping[str, Any] | None = None) -> str:
        """The message ``msgid`` filled with ``params``; the id itself if no catalog has it."""
        params = params or {}
        text = _lookup(msgid, self.domains, self.lang, params.get("n"))
        if text is None:
            return msgid
        return fill(text, params, self.lang)

    def metric(self, key: str) -> str:
        return self.message(f"metric.{key}")

    def unit(self, unit: str) -> str:
        return "" if not unit else self.message(f"unit.{unit}")

    def role(self, role: str) -> str:
        return self.message(f"role.{role}")

    def state(self, state: str) -> str:
        return self.message(f"state.{state}")

    def config(self, config: Mapping[str, Any], prefix: str = "config.") -> str:
        """A row's configuration: the message ``<prefix><method>`` filled with its other keys,
        each word-valued one in the reader's language (`word`)."""
        params = {k: self.word(k, v) for k, v in config.items() if k != "method"}
        return self.message(f"{prefix}{config['method']}", params)

    def word(self, key: str, value: Any) -> Any:
        """A word-valued parameter in the reader's language: the message ``<key>.<value>``
        (``sampler.ddim`` -> "DDIM") where a catalog has one; any other value unchanged."""
        if not isinstance(value, str):
            return value
        text = _lookup(f"{key}.{value}", self.domains, self.lang, None)
        return value if text is None else text

    def aim(self, aim: Mapping[str, Any]) -> str:
        return self.message(f"aim.{aim['id']}", {"target": aim["target"], **aim["params"]})

    def note(self, note: Mapping[str, Any]) -> str:
        return self.message(f"note.{note['id']}", note["params"])

    def anomaly(self, anomaly: Mapping[str, Any]) -> str:
        return self.message(f"anomaly.{anomaly['id']}", anomaly["params"])

    def caption(self, figure: Mapping[str, Any]) -> str:
        return self.message(f"figure.{figure['caption']}")

    def title(self) -> str:
        return self.message("title")


def _uses(result: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every ``(message id, parameters)`` a result's rendering needs."""
    uses: list[tuple[str, dict[str, Any]]] = [("title", {})]
    uses += [(f"metric.{k}", {}) for k in result["metrics"]]
    uses += [(f"unit.{m['unit']}", {}) for m in result["metrics"].values() if m["unit"]]
    for row in result["rows"]:
        params = {k: v for k, v in row["config"].items() if k != "method"}
        uses += [(f"role.{row['role']}", {}), (f"config.{row['config']['method']}", params)]
    for a in result["aims"]:
        uses += [
            (f"aim.{a['id']}", {"target": a["target"], **a["params"]}),
            (f"state.{a['state']}", {}),
        ]
    uses += [(f"note.{n['id']}", n["params"]) for n in result["notes"]]
    uses += [(f"anomaly.{x['id']}", x["params"]) for x in result["anomalies"]]
    uses += [(f"figure.{f['caption']}", {}) for f in result["figures"]]
    return uses


def missing_messages(result: Mapping[str, Any], lang: str = "en") -> list[str]:
    """Ids a result uses that the catalogs of ``lang`` lack, and placeholders without a value."""
    slug = result["slug"]
    domains = domains_of(slug)
    out: list[str] = []
    for msgid, params in _uses(result):
        text = _lookup(msgid, domains, lang, params.get("n"))
        if text is None:
            out.append(f"message {msgid!r} is not in the {lang} catalog of {slug} or results")
            continue
        missing = sorted({m["name"] for m in PLACEHOLDER.finditer(text)} - set(params))
        if missing:
            out.append(f"message {msgid!r} needs parameter(s) {', '.join(missing)}")
    return sorted(set(out))
