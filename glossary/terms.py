"""Term management: every use of a deprecated variant, in the entries and in the message catalogs.

The style sheets (:mod:`glossary.style`) name, for each concept, the preferred term and the
variants to avoid. This module applies them beyond the entries: to the gettext catalogs whose
words a reader sees, namely the shared result catalog and the site's and the command's labels in
``glossary/locale`` and each technique's result catalog under ``reference/*/locale`` (read only),
and it gathers every use, exempt or not, into the consistency report of ``glossary terms``: per
concept, the preferred term and each variant still in use, with counts and places.

A catalog message is checked in the catalog's language: its ``msgstr`` (each plural form); in
English, where a label catalog leaves ``msgstr`` empty because the ``msgid`` is the English text,
the ``msgid``. Only ``glossary validate`` and ``glossary terms`` import this module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import schema, style
from .problem import display

PACKAGE = Path(__file__).resolve().parent
LOCALE_DIR = PACKAGE / "locale"
REFERENCE_DIR = PACKAGE.parent / "reference"
MSGID_SHOWN = 40
"""Characters of a message id shown to say which message a use is in."""


def catalog_files(lang: str) -> list[tuple[str, Path]]:
    """(domain, path) of every ``.po`` catalog of ``lang``: glossary/locale, then reference/*."""
    found = sorted((LOCALE_DIR / lang / "LC_MESSAGES").glob("*.po"))
    found += sorted(REFERENCE_DIR.glob(f"*/locale/{lang}/LC_MESSAGES/*.po"))
    return [(path.stem, path) for path in found]


@lru_cache(maxsize=256)
def _messages(path: str, stamp: tuple[int, int], lang: str) -> tuple[tuple[int, str, str], ...]:
    """(line, msgid, text to check) of each message of one catalog, read once per version."""
    from babel.messages.pofile import read_po

    out = []
    with open(path, "rb") as fh:
        catalog = read_po(fh, locale=lang)
    for message in catalog:
        if not message.id:
            continue
        msgid = message.id[0] if isinstance(message.id, tuple) else message.id
        strings = message.string if isinstance(message.string, list | tuple) else [message.string]
        texts = [s for s in strings if s]
        if not texts and lang == "en":
            texts = list(message.id) if isinstance(message.id, tuple) else [message.id]
        out += [(message.lineno, msgid, text) for text in texts]
    return tuple(out)


def messages(path: Path, lang: str) -> tuple[tuple[int, str, str], ...]:
    """(line, msgid, text) of each message of the catalog at ``path`` in ``lang``."""
    stat = path.stat()
    return _messages(str(path), (stat.st_mtime_ns, stat.st_size), lang)


def _shown_id(msgid: str) -> str:
    text = " ".join(msgid.split())
    return text if len(text) <= MSGID_SHOWN else text[: MSGID_SHOWN - 1] + "…"


def catalog_uses(sheet: style.Sheet, files: Iterable[tuple[str, Path]]) -> list[style.Use]:
    """Every use of a variant of ``sheet`` in the catalogs ``files`` ((domain, path) pairs)."""
    out = []
    for domain, path in files:
        for line, msgid, text in messages(path, sheet.lang):
            for _n, rule, variant in style.check_text(sheet, domain, "", [(line, text)]):
                status = "allowed" if (domain, "msgstr") in rule.allow else "flagged"
                where = f'msgstr "{_shown_id(msgid)}"'
                out.append(
                    style.Use(display(path), line, where, domain, sheet.lang, rule, variant, status)
                )
    return out


def catalog_problems(catalogs: dict[str, list[tuple[str, Path]]] | None = None) -> list[Any]:
    """The validation problems of the catalogs (default: every catalog of every language)."""
    loaded, problems = style.sheets()
    if problems:
        return []  # the sheets' own problems are reported with the entries
    out = []
    for sheet in loaded:
        files = catalog_files(sheet.lang) if catalogs is None else catalogs.get(sheet.lang, [])
        out += [style.problem(u) for u in catalog_uses(sheet, files) if u.status == "flagged"]
    return out


@dataclass
class Concept:
    """One rule of a sheet as the report shows it: the preferred term and the variants in use."""

    rule: style.Rule
    preferred: str
    uses: list[style.Use] = field(default_factory=list)

    def variants(self) -> list[tuple[str, list[style.Use]]]:
        """Each variant form (lower case) with its uses, the most used first."""
        groups: dict[str, list[style.Use]] = {}
        for use in self.uses:
            groups.setdefault(use.variant.casefold(), []).append(use)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def field_kind(use: style.Use) -> str:
    """``explanation``, ``aliases``, … for an entry's field; ``msgstr`` for a catalog message."""
    if use.field.startswith("msgstr"):
        return "msgstr"
    return use.field.split(".")[-1].split("[", 1)[0]


def places(uses: list[style.Use]) -> list[tuple[str, str, int]]:
    """(``slug.field`` or ``domain.msgstr``, status, count) of ``uses``, in order of first use."""
    counts = Counter((f"{u.slug}.{field_kind(u)}", u.status) for u in uses)
    return [(where, status, n) for (where, status), n in counts.items()]


def report(lang: str, parsed: Sequence[Any]) -> tuple[list[Concept], list[Any]]:
    """The concepts of ``lang``'s sheet with every variant still in use in the ``parsed``
    entries (`glossary.loader.parse_folder`) and the catalogs, and the problems that stop the
    report (an unreadable sheet)."""
    if lang not in schema.LANGS:
        raise ValueError(lang)
    loaded, problems = style.sheets()
    sheet = next((s for s in loaded if s.lang == lang), None)
    if sheet is None:
        return [], list(problems)
    terms = {
        p.data.get("slug"): p.data["lang"].get(lang, {}).get("term")
        for p in parsed
        if isinstance(p.data.get("lang"), dict)
    }
    concepts = {
        r.id: Concept(r, terms.get(r.concept) or r.preferred if r.concept else r.preferred)
        for r in sheet.rules
    }
    for use in style.entry_uses(parsed, (sheet,)) + catalog_uses(sheet, catalog_files(lang)):
        concepts[use.rule.id].uses.append(use)
    return list(concepts.values()), []
