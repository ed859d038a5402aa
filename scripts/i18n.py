"""Maintain the gettext catalogs of the ``glossary`` command (es, ru, en) with Babel.

Usage::

    python scripts/i18n.py extract   # glossary/**.py -> glossary/locale/glossary.pot
    python scripts/i18n.py update    # merge the .pot into each language's .po
    python scripts/i18n.py compile   # .po -> .mo
    python scripts/i18n.py check     # fail if anything above would change, or is incomplete
    python scripts/i18n.py new-results SLUG   # empty result catalogs of a technique (es, ru, en)

Result catalogs (symbolic message ids such as ``note.skipped-flops``, see
:mod:`glossary.resulttext`): the shared domain ``results`` in ``glossary/locale`` and one domain per
technique in ``reference/<package>/locale``. They are written by hand (English included: the ids
are not English) and read from the ``.po`` files directly; ``check`` also fails when the three
languages of a domain define different ids, leave one untranslated, or use different
placeholders.

Workflow after changing a message in the code: ``extract``, ``update``, translate the new
``msgstr`` entries in ``glossary/locale/{es,ru,en}/LC_MESSAGES/glossary.po`` (fill every plural
form: Babel's CLDR rules give es and ru three forms, en two), then ``compile``. Commit the .pot,
.po and .mo files.

``check`` fails when: the .pot differs from what ``extract`` would write; a .po lacks a message
of the .pot or keeps an obsolete one; a message is fuzzy, untranslated or has an empty plural
form; a translation's ``%(name)s`` placeholders differ from the original's; or a .mo is not
exactly what ``compile`` would write from its .po.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "glossary"
LOCALE_DIR = PACKAGE / "locale"
POT = LOCALE_DIR / "glossary.pot"
DOMAIN = "glossary"
LANGS = ("es", "ru", "en")
KEYWORDS = {"_": None, "gettext": None, "ngettext": (1, 2)}
PROJECT = "diffusion-efficiency-glossary"


def po_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def extract_catalog() -> Catalog:
    """Messages marked in the package's Python files, with file (not line) locations."""
    catalog = Catalog(project=PROJECT, version="0.1", charset="utf-8")
    method_map = [("**.py", "python")]
    for filename, lineno, message, comments, context in extract_from_dir(
        PACKAGE, method_map=method_map, keywords=KEYWORDS, comment_tags=("TRANSLATORS:",)
    ):
        catalog.add(
            message,
            None,
            [(f"glossary/{filename}", lineno)],
            auto_comments=comments,
            context=context,
        )
    return catalog


def message_keys(catalog: Catalog) -> list[tuple[object, ...]]:
    """What makes two templates equal: ids, plural ids, files and flags (not dates or lines)."""
    keys = []
    for m in catalog:
        if not m.id:
            continue
        files = tuple(sorted({loc[0] for loc in m.locations}))
        keys.append((m.id, m.context, files, tuple(sorted(m.flags - {"fuzzy"}))))
    return sorted(keys, key=repr)


def render_po(catalog: Catalog, **options: object) -> bytes:
    buf = io.BytesIO()
    write_po(buf, catalog, width=100, include_lineno=False, sort_output=True, **options)
    return buf.getvalue()


def render_mo(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    write_mo(buf, catalog, use_fuzzy=False)
    return buf.getvalue()


def read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as f:
        return read_po(f, locale=locale, domain=DOMAIN)


def cmd_extract() -> int:
    fresh = extract_catalog()
    if POT.exists() and message_keys(read(POT)) == message_keys(fresh):
        print(f"{POT.relative_to(ROOT)} is up to date")
        return 0
    POT.parent.mkdir(parents=True, exist_ok=True)
    POT.write_bytes(render_po(fresh))
    print(f"wrote {POT.relative_to(ROOT)} ({len(message_keys(fresh))} messages)")
    return 0


def cmd_update() -> int:
    template = read(POT)
    for lang in LANGS:
        path = po_path(lang)
        if path.exists():
            catalog = read(path, lang)
            catalog.update(template, no_fuzzy_matching=True)
            catalog.obsolete.clear()
        else:
            catalog = Catalog(
                locale=lang, domain=DOMAIN, project=PROJECT, version="0.1", charset="utf-8"
            )
            catalog.update(template, no_fuzzy_matching=True)
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render_po(catalog, ignore_obsolete=True))
        missing = sum(1 for m in catalog if m.id and not complete(m, catalog))
        print(f"updated {path.relative_to(ROOT)}: {missing} message(s) to translate")
    return 0


def cmd_compile() -> int:
    for lang in LANGS:
        catalog = read(po_path(lang), lang)
        mo_path(lang).write_bytes(render_mo(catalog))
        print(f"compiled {mo_path(lang).relative_to(ROOT)}")
    return 0


def complete(message: object, catalog: Catalog) -> bool:
    """Whether ``message`` is translated, in every plural form of the catalog's language."""
    string = message.string  # type: ignore[attr-defined]
    if isinstance(string, list | tuple):
        return len(string) == catalog.num_plurals and all(s for s in string)
    return bool(string)


def problems() -> list[str]:
    """Every reason the catalogs are out of date or incomplete (empty when all is well)."""
    found: list[str] = []
    if not POT.exists():
        return [f"{POT.relative_to(ROOT)} is missing; run: python scripts/i18n.py extract"]
    template = read(POT)
    if message_keys(template) != message_keys(extract_catalog()):
        found.append(
            f"{POT.relative_to(ROOT)} is out of date; run: python scripts/i18n.py "
            "extract && python scripts/i18n.py update"
        )
    wanted = {m.id if isinstance(m.id, str) else m.id[0] for m in template if m.id}
    for lang in LANGS:
        found += catalog_problems(lang, wanted)
    return found + result_catalog_problems()


def result_domains() -> list[str]:
    """The site's domains (``results``, ``guide``) and one per registered technique."""
    sys.path.insert(0, str(ROOT))
    from glossary.resulttext import SITE_DOMAINS
    from reference.registry import slugs

    return [*SITE_DOMAINS, *slugs()]


def _placeholders(text: object) -> set[str]:
    from glossary.resulttext import PLACEHOLDER

    texts = text if isinstance(text, list | tuple) else [text]
    return {m["name"] for s in texts for m in PLACEHOLDER.finditer(str(s))}


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def result_catalog_problems() -> list[str]:
    """Every reason a result catalog is incomplete or inconsistent across languages."""
    from glossary.resulttext import catalog_path

    found: list[str] = []
    for domain in result_domains():
        catalogs: dict[str, dict[str, object]] = {}
        for lang in LANGS:
            path = catalog_path(domain, lang)
            if not path.is_file():
                found.append(f"{_shown(path)} is missing")
                continue
            with path.open("rb") as fh:
                catalog = read_po(fh, locale=lang, domain=domain)
            catalogs[lang] = {}
            for m in catalog:
                if not m.id:
                    continue
                key = m.id if isinstance(m.id, str) else m.id[0]
                catalogs[lang][key] = m.string
                if m.fuzzy or not complete(m, catalog):
                    found.append(f"{_shown(path)}: untranslated or fuzzy {key!r}")
        english = catalogs.get("en", {})
        for lang, messages in catalogs.items():
            rel = _shown(catalog_path(domain, lang))
            for key in sorted(set(english) - set(messages)):
                found.append(f"{rel}: missing message {key!r} (defined in English)")
            for key in sorted(set(messages) - set(english)):
                found.append(f"{rel}: message {key!r} is not in the English catalog")
            for key in sorted(set(messages) & set(english)):
                if _placeholders(messages[key]) != _placeholders(english[key]):
                    found.append(f"{rel}: {key!r} uses other placeholders than English")
    return found


def cmd_new_results(slug: str) -> int:
    """Create the three empty result catalogs of technique ``slug`` (never overwrites)."""
    from glossary.resulttext import catalog_path

    for lang in LANGS:
        path = catalog_path(slug, lang)
        if path.exists():
            print(f"{path.relative_to(ROOT)} exists; left alone")
            continue
        catalog = Catalog(locale=lang, domain=slug, project=PROJECT, version="0.1", charset="utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render_po(catalog))
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


def catalog_problems(lang: str, wanted: set[str]) -> list[str]:
    path = po_path(lang)
    rel = path.relative_to(ROOT)
    if not path.exists():
        return [f"{rel} is missing; run: python scripts/i18n.py update"]
    catalog = read(path, lang)
    found: list[str] = []
    have = {m.id if isinstance(m.id, str) else m.id[0]: m for m in catalog if m.id}
    for msgid in sorted(wanted - set(have)):
        found.append(f"{rel}: missing message {msgid!r}; run: python scripts/i18n.py update")
    for msgid in sorted(set(have) - wanted):
        found.append(f"{rel}: obsolete message {msgid!r}; run: python scripts/i18n.py update")
    for msgid, m in sorted(have.items()):
        if m.fuzzy:
            found.append(f"{rel}: fuzzy translation of {msgid!r}")
        elif not complete(m, catalog):
            found.append(f"{rel}: untranslated (or an empty plural form of) {msgid!r}")
    for m, errors in catalog.check():
        for err in errors:
            found.append(f"{rel}: {m.id!r}: {err}")
    if not mo_path(lang).exists() or mo_path(lang).read_bytes() != render_mo(catalog):
        found.append(
            f"{mo_path(lang).relative_to(ROOT)} is out of date; run: python scripts/i18n.py compile"
        )
    return found


def cmd_check() -> int:
    found = problems()
    for line in found:
        print(line, file=sys.stderr)
    if found:
        return 1
    print("catalogs are up to date and complete")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=("extract", "update", "compile", "check", "new-results"))
    p.add_argument("slug", nargs="?", help="technique slug (new-results)")
    args = p.parse_args(argv)
    if args.command == "new-results":
        if not args.slug:
            p.error("new-results needs a technique slug")
        return cmd_new_results(args.slug)
    return {
        "extract": cmd_extract,
        "update": cmd_update,
        "compile": cmd_compile,
        "check": cmd_check,
    }[args.command]()


if __name__ == "__main__":
    raise SystemExit(main())
