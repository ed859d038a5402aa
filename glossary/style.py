"""The house style of each language: style sheets and the check that enforces them.

A style sheet ``glossary/style/<lang>.yaml`` lists rules, one per concept; each rule names the
``preferred`` term, the deprecated variants to ``avoid`` (case-insensitive regular expressions,
written to cover the word's inflections), the ``reason`` (in the sheet's language) and, optionally,
``concept`` (the slug of the entry whose ``term`` is the preferred term, which validation holds to
it) and ``allow``: the entries and fields where a variant is correct (Russian "переобучение" where
it really means overfitting) or kept on purpose (an alias, so that the lookup finds the variant
people type).

:func:`uses` finds every use of a variant in the parsed entries (``term``, each alias,
``definition``, ``explanation`` and ``note`` of the sheet's language) and :func:`check` turns the
uses that are not exempt into one :class:`glossary.problem.Problem` each: ``path:line:
lang.ru.explanation: 'переобучать' is a variant to avoid; write 'повторное обучение' (rule
retraining) (hint: <reason>)``. Text quoted verbatim is not checked: inline code in backticks,
anything inside quotation marks ("…", “…”, «…») and URLs. The user's seed terms and definitions
stay byte-identical: the sheet's ``seed_verbatim`` lists each one (slug, field and the SHA-256 of
the text), and exactly those strings are exempt; an edited seed string is checked like any other.
The gettext catalogs are checked by :mod:`glossary.terms`, with the same sheets.

Only ``glossary validate`` and ``glossary terms`` use this module (through
:func:`glossary.loader.validate`); looking a term up never loads the style sheets. Messages are
gettext strings (``glossary/locale``).
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import i18n, schema
from .problem import Problem, display

STYLE_DIR = Path(__file__).resolve().parent / "style"
ENTRIES_DIR = Path(__file__).resolve().parent / "entries"
CHECKED_FIELDS: tuple[str, ...] = ("term", "aliases", "definition", "explanation", "note")
"""The fields of each language block that the style sheets apply to."""
ALLOW_FIELDS: tuple[str, ...] = (*CHECKED_FIELDS, "msgstr")
"""Where an ``allow`` item may point: an entry's field, or ``msgstr`` of a catalog domain."""
SEED_FIELDS: tuple[str, ...] = ("term", "definition")
"""The fields that can hold the user's seed text."""
RULE_KEYS: tuple[str, ...] = ("id", "preferred", "concept", "avoid", "reason", "allow")
SHEET_KEYS: tuple[str, ...] = ("lang", "description", "seed_verbatim", "rules")
QUOTED = re.compile(r"`[^`]*`|\"[^\"]{0,400}\"|“[^”]{0,400}”|«[^»]{0,400}»|https?://\S+")
"""Spans that quote something verbatim (code, titles, someone else's words): not checked."""
BLOCK_KEY = re.compile(r"^(\s*)[A-Za-z_]+:\s*[|>][-+0-9]*\s*$")
_CYRILLIC = re.compile(r"[А-Яа-яЁё]")
_LANGUAGE_HINTS = {
    "es": re.compile(r"\b(el|la|los|las|de|que|en|se|una?)\b", re.IGNORECASE),
    "en": re.compile(r"\b(the|is|of|and|a|an|to|in|it)\b", re.IGNORECASE),
}


def _(message: str) -> str:
    """Translate into the command line's UI language (or the environment's, outside it)."""
    cli = sys.modules.get("glossary.cli")
    lang = getattr(cli, "_ui_lang", None) or i18n.ui_lang_from_env()
    return i18n.translator(lang).gettext(message)


@dataclass(frozen=True)
class Rule:
    """One rule of a style sheet: write ``preferred``, not anything ``avoid`` matches."""

    id: str
    preferred: str
    avoid: tuple[re.Pattern[str], ...]
    reason: str
    allow: frozenset[tuple[str, str]]
    """(slug, field) pairs where a variant is correct, e.g. ("fid", "explanation")."""
    concept: str | None = None
    """The slug of the entry whose term in this language is ``preferred``, if there is one."""


@dataclass(frozen=True)
class Sheet:
    """The style sheet of one language."""

    lang: str
    path: Path
    rules: tuple[Rule, ...]
    seed: frozenset[tuple[str, str, str]]
    """(slug, field, SHA-256 of the text) of each seed string of this language, kept verbatim."""

    @property
    def seed_verbatim(self) -> frozenset[str]:
        """The slugs that hold seed text in this language."""
        return frozenset(slug for slug, _field, _digest in self.seed)

    def is_seed(self, slug: str, field: str, text: str) -> bool:
        """Whether ``text`` is, byte for byte, the seed string of ``slug``'s ``field``."""
        return (slug, field, digest(text)) in self.seed


def digest(text: str) -> str:
    """The SHA-256 of ``text`` in UTF-8, as the sheets' ``seed_verbatim`` records it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sheet_path(lang: str, directory: Path | None = None) -> Path:
    return (directory or STYLE_DIR) / f"{lang}.yaml"


def _sheet_problem(path: Path, message: str) -> Problem:
    return Problem(display(path), 1, "style", message)


def load_sheet(lang: str, directory: Path | None = None) -> tuple[Sheet | None, list[Any]]:
    """The style sheet of ``lang`` and the problems of the sheet (:func:`sheet_problems`)."""
    import yaml

    path = sheet_path(lang, directory)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return None, [
            _sheet_problem(
                path,
                _("cannot read the style sheet: %(error)s") % {"error": exc.strerror or str(exc)},
            )
        ]
    except yaml.YAMLError as exc:
        return None, [_sheet_problem(path, _("invalid YAML: %(error)s") % {"error": exc})]
    problems = sheet_problems(data, lang, path)
    if problems:
        return None, problems
    rules = tuple(
        Rule(
            id=r["id"],
            preferred=r["preferred"],
            avoid=tuple(re.compile(p, re.IGNORECASE) for p in r["avoid"]),
            reason=r["reason"].strip(),
            allow=frozenset((a["slug"], a["field"]) for a in r.get("allow") or []),
            concept=r.get("concept"),
        )
        for r in data["rules"]
    )
    seed = data.get("seed_verbatim") or {}
    strings = frozenset((s["slug"], s["field"], s["sha256"]) for s in seed.get("strings", []))
    return Sheet(lang, path, rules, strings), []


def sheet_problems(data: Any, lang: str, path: Path) -> list[Any]:
    """Everything wrong with a parsed style sheet: shape, regexes, reasons in the right language.

    Each rule needs ``id``, ``preferred``, a non-empty ``avoid`` list of valid regular expressions
    that do not match the preferred term itself, and a ``reason`` written in the sheet's language
    (Cyrillic for ru, none for es and en, plus a few common words of the language: a heuristic);
    each ``allow`` item needs ``slug``, ``field`` (one of the checked fields) and ``reason``.
    """
    out: list[Any] = []

    def bad(message: str) -> None:
        out.append(_sheet_problem(path, message))

    if not isinstance(data, dict):
        bad(_("a style sheet is a mapping with lang and rules"))
        return out
    for key in data:
        if key not in SHEET_KEYS:
            bad(_("unknown key '%(key)s'") % {"key": key})
    if data.get("lang") != lang:
        bad(_("lang must be '%(lang)s'") % {"lang": lang})
    if not _seed_ok(data.get("seed_verbatim")):
        bad(_("seed_verbatim needs a reason and a list of strings (slug, field, sha256)"))
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        bad(_("rules must be a non-empty list"))
        return out
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        where = {"n": i + 1}
        if not isinstance(rule, dict):
            bad(_("rule %(n)d is not a mapping") % where)
            continue
        for key in rule:
            if key not in RULE_KEYS:
                bad(_("rule %(n)d: unknown key '%(key)s'") % (where | {"key": key}))
        for key in ("id", "preferred", "reason"):
            if not _text(rule.get(key)):
                bad(_("rule %(n)d: missing %(key)s") % (where | {"key": key}))
        if "concept" in rule and not _text(rule.get("concept")):
            bad(_("rule %(n)d: concept must be the slug of an entry") % where)
        if rule.get("id") in seen:
            bad(_("rule %(n)d: id '%(id)s' is used twice") % (where | {"id": rule.get("id")}))
        seen.add(rule.get("id"))
        _check_avoid(rule, where, bad)
        reason = rule.get("reason")
        if _text(reason) and not _in_language(reason, lang):
            bad(_("rule %(n)d: the reason is not written in %(lang)s") % (where | {"lang": lang}))
        for item in rule.get("allow") or []:
            if not (
                isinstance(item, dict)
                and _text(item.get("slug"))
                and item.get("field") in ALLOW_FIELDS
                and _text(item.get("reason"))
            ):
                bad(_("rule %(n)d: each allow item needs slug, field and reason") % where)
    return out


def _check_avoid(rule: dict[str, Any], where: dict[str, Any], bad: Any) -> None:
    avoid = rule.get("avoid")
    if not isinstance(avoid, list) or not avoid:
        bad(_("rule %(n)d: avoid must be a non-empty list of patterns") % where)
        return
    preferred = rule.get("preferred") if _text(rule.get("preferred")) else ""
    for pattern in avoid:
        try:
            compiled = re.compile(str(pattern), re.IGNORECASE)
        except re.error as exc:
            bad(
                _("rule %(n)d: bad pattern %(pattern)s: %(error)s")
                % (where | {"pattern": pattern, "error": exc})
            )
            continue
        if preferred and compiled.search(preferred):
            bad(
                _("rule %(n)d: pattern %(pattern)s matches the preferred term")
                % (where | {"pattern": pattern})
            )


def _seed_ok(seed: Any) -> bool:
    if seed is None:
        return True
    if not (isinstance(seed, dict) and _text(seed.get("reason"))):
        return False
    strings = seed.get("strings")
    return isinstance(strings, list) and all(
        isinstance(s, dict)
        and _text(s.get("slug"))
        and s.get("field") in SEED_FIELDS
        and re.fullmatch(r"[0-9a-f]{64}", str(s.get("sha256", "")))
        for s in strings
    )


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _in_language(text: str, lang: str) -> bool:
    cyrillic = len(_CYRILLIC.findall(text))
    letters = sum(ch.isalpha() for ch in text) or 1
    if lang == "ru":
        return cyrillic / letters > 0.5
    hint = _LANGUAGE_HINTS.get(lang)
    return cyrillic == 0 and (hint is None or bool(hint.search(text)))


@lru_cache(maxsize=8)
def _sheets(directory: str | None) -> tuple[tuple[Sheet, ...], tuple[Any, ...]]:
    sheets, problems = [], []
    for lang in schema.LANGS:
        sheet, found = load_sheet(lang, Path(directory) if directory else None)
        problems += found
        if sheet is not None:
            sheets.append(sheet)
    return tuple(sheets), tuple(problems)


def _field_text(raw_lines: list[str], key_line: int, value: str) -> list[tuple[int, str]]:
    """(line number, text) of a field's value, from the file when it is a block scalar."""
    if 1 <= key_line <= len(raw_lines):
        head = BLOCK_KEY.match(raw_lines[key_line - 1])
        if head:
            indent = len(head.group(1))
            out = []
            for n in range(key_line + 1, len(raw_lines) + 1):
                line = raw_lines[n - 1]
                if line.strip() and len(line) - len(line.lstrip()) <= indent:
                    break
                out.append((n, line.strip()))
            return out
    return [(key_line, " ".join(value.split()))]


def _masked(text: str) -> str:
    return QUOTED.sub(lambda m: " " * len(m.group(0)), text)


def check_text(
    sheet: Sheet, slug: str, field: str, pieces: list[tuple[int, str]]
) -> list[tuple[int, Rule, str]]:
    """(line, rule, variant found) for every use of a variant in ``pieces`` of one field."""
    text = "\n".join(t for _n, t in pieces)
    starts, pos = [], 0
    for n, t in pieces:
        starts.append((pos, n))
        pos += len(t) + 1
    flat = _masked(text.replace("\n", " "))
    found: list[tuple[int, int, Rule, str]] = []
    for rule in sheet.rules:
        if (slug, field) in rule.allow:
            continue
        spans = sorted(
            (m.start(), -m.end()) for pattern in rule.avoid for m in pattern.finditer(flat)
        )
        end = -1
        for start, neg_end in spans:  # patterns of one rule that overlap report one use
            if start < end:
                continue
            end = -neg_end
            line = next(n for p, n in reversed(starts) if p <= start)
            found.append((start, line, rule, " ".join(text[start:end].split())))
    return [(line, rule, variant) for _s, line, rule, variant in sorted(found, key=lambda x: x[0])]


@dataclass(frozen=True)
class Use:
    """One use of a deprecated variant: where, which rule, the text found and whether it is exempt.

    ``status`` is ``"flagged"`` (a problem), ``"seed"`` (the user's seed text, kept verbatim) or
    ``"allowed"`` (listed under the rule's ``allow``).
    """

    path: str
    line: int
    field: str
    slug: str
    lang: str
    rule: Rule
    variant: str
    status: str


def _status(sheet: Sheet, rule: Rule, slug: str, field: str, text: str) -> str:
    base = field.split("[", 1)[0]
    if base in SEED_FIELDS and sheet.is_seed(slug, base, text):
        return "seed"
    return "allowed" if (slug, base) in rule.allow else "flagged"


def _pieces(p: Any, raw_lines: list[str], lang: str, field: str, value: Any) -> Iterator[Any]:
    """(field label, text, [(line, text)]) of one field; one item per alias."""
    key = ("lang", lang, field)
    if field == "aliases":
        for i, alias in enumerate(value if isinstance(value, list) else []):
            if isinstance(alias, str):
                line = p.lines.get((*key, i), p.lines.get(key, 0))
                yield f"{field}[{i}]", alias, [(line, alias)]
    elif isinstance(value, str):
        yield field, value, _field_text(raw_lines, p.lines.get(key, 0), value)


def entry_uses(parsed: list[Any], sheets: tuple[Sheet, ...]) -> list[Use]:
    """Every use of a variant in the parsed entries, exempt or not, in file order."""
    out: list[Use] = []
    for p in parsed:
        langs = p.data.get("lang")
        if not isinstance(langs, dict):
            continue
        slug = p.data.get("slug") if isinstance(p.data.get("slug"), str) else p.path.stem
        try:
            raw_lines = p.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            raw_lines = []
        for sheet in sheets:
            block = langs.get(sheet.lang)
            if not isinstance(block, dict):
                continue
            for field in CHECKED_FIELDS:
                for label, text, pieces in _pieces(
                    p, raw_lines, sheet.lang, field, block.get(field)
                ):
                    for line, rule, variant in check_text(sheet, slug, "", pieces):
                        out.append(
                            Use(
                                p.display,
                                line or p.lines.get(("lang", sheet.lang, field), 1),
                                f"lang.{sheet.lang}.{label}",
                                slug,
                                sheet.lang,
                                rule,
                                variant,
                                _status(sheet, rule, slug, label, text),
                            )
                        )
    return out


def problem(use: Use) -> Problem:
    """The validation problem of a flagged use."""
    return Problem(
        use.path,
        use.line,
        use.field,
        _("'%(variant)s' is a variant to avoid; write '%(preferred)s' (style rule %(rule)s)")
        % {"variant": use.variant, "preferred": use.rule.preferred, "rule": use.rule.id},
        use.rule.reason,
    )


def concept_problems(parsed: list[Any], sheets: tuple[Sheet, ...]) -> list[Any]:
    """A rule's ``concept`` must be an entry whose term in the sheet's language starts the
    rule's ``preferred``: the entry's term is the preferred term of its concept. Checked when the
    parsed entries are the project's own (``glossary/entries``), which the sheets speak of."""
    own = ENTRIES_DIR.resolve()
    mine = [p for p in parsed if p.path.resolve().parent == own]
    if not mine:
        return []  # another folder of entries (a fixture set): the sheets speak of the project's
    terms = {
        p.data.get("slug"): p.data.get("lang") for p in mine if isinstance(p.data.get("lang"), dict)
    }
    out = []
    for sheet in sheets:
        for rule in sheet.rules:
            if rule.concept is None:
                continue
            block = terms.get(rule.concept)
            term = block.get(sheet.lang, {}).get("term") if isinstance(block, dict) else None
            if not isinstance(term, str):
                message = _("rule %(rule)s: concept '%(slug)s' is not an entry") % {
                    "rule": rule.id,
                    "slug": rule.concept,
                }
            elif not rule.preferred.casefold().startswith(term.casefold()):
                message = _(
                    "rule %(rule)s: the preferred term must be the term of '%(slug)s', '%(term)s'"
                ) % {"rule": rule.id, "slug": rule.concept, "term": term}
            else:
                continue
            out.append(Problem(display(sheet.path), 1, "style", message))
    return out


def sheets(directory: Path | None = None) -> tuple[tuple[Sheet, ...], tuple[Any, ...]]:
    """The style sheets of every language and the problems of the sheets."""
    return _sheets(str(directory) if directory else None)


def check(parsed: list[Any], directory: Path | None = None) -> list[Any]:
    """Style problems of the parsed entries (``glossary.loader._Parsed``), one per variant used
    that is neither the user's seed text nor allowed, plus the problems of the sheets."""
    loaded, problems = sheets(directory)
    out: list[Any] = list(problems)
    if len(loaded) == len(schema.LANGS) and parsed:
        out += concept_problems(parsed, loaded)
    out += [problem(u) for u in entry_uses(parsed, loaded) if u.status == "flagged"]
    return out
