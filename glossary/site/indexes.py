"""The index pages of each language: the A-Z index and the category pages.

The A-Z index buckets every term and alias under the letters of the language's alphabet with
ICU's alphabetic index (so ``Ñ`` is its own letter in Spanish and ``Ё`` files under ``Е``), in the
language's collation. Its letter bar lists the page's own script first and then the others, each
group on its own line with its name, so that a Russian reader never mistakes a Latin ``A`` for a
Cyrillic ``А``; ICU's ``…`` buckets (names before the first letter, between scripts, after the
last) are joined into one, and every bucket has its own anchor. The home pages are hand-written
(``site_src/<lang>/index.md``); the comparison page is :mod:`glossary.site.compare`.
"""

from __future__ import annotations

import re
from typing import Any

from glossary.model import Entry
from glossary.schema import CATEGORIES
from glossary.site.context import Context
from glossary.site.formatting import translator
from glossary.site.markdown import escape_markdown, escape_text
from glossary.site.urls import sorted_entries, term_link


def bucket_id(label: str) -> str:
    """The anchor of a letter: ``letter-a``, or code points for other scripts."""
    if re.fullmatch(r"[A-Za-z]", label):
        return f"letter-{label.lower()}"
    return "letter-" + "-".join(f"u{ord(c):04x}" for c in label)


def bucket_ids(labels: list[str]) -> list[str]:
    """One anchor per bucket, unique on the page: a label that comes again (ICU's ``…``
    buckets) gets ``-2``, ``-3``."""
    seen: dict[str, int] = {}
    ids = []
    for label in labels:
        base = bucket_id(label)
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return ids


def merge_other(buckets: list[tuple[str, list[Any]]], lang: str) -> list[tuple[str, list[Any]]]:
    """ICU's ``…`` buckets (digits, Greek letters: before, between and after the alphabets)
    joined into one, in collation order, so that the letter bar shows one ``…``."""
    from glossary.collation import sort_key

    other = [item for label, items in buckets if script(label) == "other" for item in items]
    kept = [bucket for bucket in buckets if script(bucket[0]) != "other"]
    if not other:
        return kept
    key = sort_key(lang)
    return [*kept, ("…", sorted(other, key=lambda item: key(item[0])))]


SCRIPT_OF_LANG = {"es": "latin", "en": "latin", "ru": "cyrillic"}


def script(label: str) -> str:
    """``latin``, ``cyrillic`` or ``other`` (a ``…`` bucket, a digit): the script of a label."""
    import unicodedata

    letter = next((c for c in label if c.isalpha()), "")
    name = unicodedata.name(letter, "") if letter else ""
    for found in ("LATIN", "CYRILLIC"):
        if name.startswith(found):
            return found.lower()
    return "other"


def letter_bar(labels: list[str], ids: list[str], lang: str, _: Any) -> list[str]:
    """The letter bar: the page's own script first, then the others, one line each."""
    own = SCRIPT_OF_LANG.get(lang, "latin")
    order = [own] + [s for s in ("latin", "cyrillic", "other") if s != own]
    names = {"latin": _("Latin"), "cyrillic": _("Cyrillic"), "other": _("Other")}
    lines = []
    for group in order:
        links = [
            f"[{escape_text(label)}](#{anchor})"
            for label, anchor in zip(labels, ids, strict=True)
            if script(label) == group
        ]
        if links:
            lines += [f"**{names[group]}:** " + " · ".join(links), ""]
    return lines


def alphabetic_buckets(names: list[tuple[str, Any]], lang: str) -> list[tuple[str, list[Any]]]:
    """Group ``(name, payload)`` pairs under the letters of ``lang``'s alphabet (ICU), in
    collation order; Latin letters follow in es and ru for Latin-script names."""
    import icu

    from glossary.collation import sort_key

    index = icu.AlphabeticIndex(icu.Locale(lang))
    if lang != "en":
        index.addLabels(icu.Locale.getEnglish())
    key = sort_key(lang)
    for i, (name, _payload) in enumerate(names):
        index.addRecord(name, i)
    buckets: list[tuple[str, list[Any]]] = []
    while index.nextBucket():
        items = []
        while index.nextRecord():
            items.append(names[index.recordData])
        if items:
            items.sort(key=lambda pair: key(pair[0]))
            buckets.append((index.bucketLabel, [payload for _name, payload in items]))
    return buckets


def _names(lang: str, ctx: Context) -> list[tuple[str, Any]]:
    names: list[tuple[str, Any]] = []
    for entry in ctx.glossary:
        text = entry.text(lang)
        names.append((text.term, (text.term, entry, True)))
        names += [(alias, (alias, entry, False)) for alias in text.aliases if alias != text.term]
    return names


def _bucket_lines(items: list[tuple[str, Entry, bool]], lang: str) -> list[str]:
    lines = []
    for name, entry, is_term in items:
        if is_term:
            lines.append(f"- [{escape_text(name)}](terms/{entry.slug}.md)")
        else:
            lines.append(f"- *{escape_text(name)}* → {term_link(entry, lang, 'terms/')}")
    return [*lines, ""]


def az_page(lang: str, ctx: Context) -> str:
    """Every term and alias of ``lang``, bucketed by letter, in ``lang``'s collation."""
    _ = translator(lang)
    buckets = merge_other(alphabetic_buckets(_names(lang, ctx), lang), lang)
    own = SCRIPT_OF_LANG.get(lang, "latin")
    rank = {own: 0, "other": 2}
    buckets.sort(key=lambda bucket: rank.get(script(bucket[0]), 1))  # stable: collation kept
    labels = [label for label, _items in buckets]
    ids = bucket_ids(labels)
    lines = [
        "# " + _("A–Z index"),
        "",
        _("Every term and its other names, in alphabetical order."),
        "",
        *letter_bar(labels, ids, lang, _),
    ]
    for (label, items), anchor in zip(buckets, ids, strict=True):
        lines += [f"## {escape_text(label)} {{#{anchor}}}", ""]
        lines += _bucket_lines(items, lang)
    return "\n".join(lines).rstrip() + "\n"


def category_page(category: str, lang: str, ctx: Context) -> str:
    """The entries of one category: techniques first, then concepts."""
    _ = translator(lang)
    entries = ctx.glossary.in_category(category)
    lines = [f"# {escape_text(CATEGORIES[category][lang])}", ""]
    for kind, title, anchor in (
        ("technique", _("Techniques"), "techniques"),
        ("concept", _("Concepts"), "concepts"),
    ):
        group = sorted_entries((e for e in entries if e.kind == kind), lang)
        if not group:
            continue
        lines += [f"## {title} {{#{anchor}}}", ""]
        for entry in group:
            text = entry.text(lang)
            definition = " ".join(escape_markdown(text.definition).split())
            if text.note:  # the correction travels with the definition it corrects
                note = " ".join(escape_markdown(text.note).split())
                label = _("Accuracy note")
                definition += f" **{label}:** {note}"
            lines.append(f"- {term_link(entry, lang, '../terms/')}: {definition}")
        lines.append("")
    if not entries:
        lines += [_("No entries in this category yet."), ""]
    return "\n".join(lines).rstrip() + "\n"


def categories_index(lang: str, ctx: Context) -> str:
    """All categories with their number of entries."""
    _ = translator(lang)
    lines = ["# " + _("Categories"), ""]
    for category in CATEGORIES:
        count = len(ctx.glossary.in_category(category))
        label = escape_text(CATEGORIES[category][lang])
        lines.append(f"- [{label}]({category}.md) ({count})")
    return "\n".join(lines) + "\n"
