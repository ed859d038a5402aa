"""The ``glossary`` command: look up, show, list, validate and export entries; run techniques.

Subcommands::

    glossary lookup QUERY [--lang L] [--to L] [--json] [--limit N]
    glossary show SLUG_OR_TERM [--lang L]
    glossary list [--lang L] [--kind K] [--category C]
    glossary validate [DIR]
    glossary terms [--lang L]
    glossary export --format json|csv|tbx|tbx2|skos [-o FILE]
    glossary run TECHNIQUE [ARGS...]
    glossary bench [TECHNIQUE ...] [--quick] [--check]

``--ui-lang es|ru|en`` (before the subcommand) picks the language of the messages; by default it
comes from ``LANGUAGE``/``LC_ALL``/``LC_MESSAGES``/``LANG``. ``--entries DIR`` reads entries
from another folder. Messages are gettext strings (``glossary/locale``); update the catalogs
with ``scripts/i18n.py`` after changing any of them.

Every failure is one line on stderr and a non-zero exit status: 1 for "not found" or invalid
entries, 2 for bad arguments. No input produces a traceback. The lookup path imports neither
torch nor numpy; ``run`` and ``bench`` import them only when they start a technique.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from . import i18n
from .loader import GlossaryError, load_glossary
from .model import Entry, Glossary
from .schema import CATEGORIES, KINDS, LANGS
from .schema import EXPORT_FORMATS as FORMATS

_translation = i18n.translator("en")
_ui_lang = "en"
MAX_ECHO = 60
SUGGEST_THRESHOLD = 50.0
"""Other candidates scoring below this are not worth showing after a match."""
WIDTH = 100


def _(message: str) -> str:
    """Translate ``message`` into the UI language."""
    return _translation.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """Translate a message with a count into the UI language, with its plural form."""
    return _translation.ngettext(singular, plural, n)


def set_ui_lang(lang: str) -> None:
    """Switch the messages to ``lang`` (one of ``es``, ``ru``, ``en``)."""
    global _translation, _ui_lang
    _ui_lang = lang if lang in LANGS else "en"
    _translation = i18n.translator(_ui_lang)


class CliError(Exception):
    """A user-facing error: printed as one line, exit status ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def clean_text(text: str) -> str:
    """Make command-line text safe to process and print: lone surrogates become U+FFFD.

    Python turns undecodable bytes of ``argv`` into lone surrogates (``surrogateescape``); they
    cannot be printed or encoded, so they are decoded back as replacement characters.
    """
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


def safe_json(data: Any) -> str:
    """JSON for a terminal: readable Unicode, but control characters (DEL, C1) and invisible
    format characters (bidirectional overrides such as U+202E, zero-width marks) escaped as
    ``\\uXXXX``, so that printed data cannot reorder or hide what the terminal shows."""
    import unicodedata

    text = json.dumps(data, ensure_ascii=False, indent=2)
    return "".join(
        f"\\u{ord(ch):04x}" if ch not in "\n" and unicodedata.category(ch) in ("Cc", "Cf") else ch
        for ch in text
    )


def echo(text: str, limit: int = MAX_ECHO) -> str:
    """A short, printable rendering of user input for messages."""
    text = clean_text(text)
    shown = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text[:limit])
    return "'" + shown + ("…" if len(text) > limit else "") + "'"


def one_line(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped (``\\n``), so that a
    message quoting a path or a value always prints as one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in clean_text(text))


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one clean line on stderr (exit status 2)."""

    argv: ClassVar[list[str]] = []
    """The arguments being parsed (set by :func:`main`), for hints in error messages."""

    def error(self, message: str) -> NoReturn:
        message = clean_text(message)
        dashed = [a for a in self.argv if a.startswith("-") and a not in ("-", "--")]
        if "QUERY" in message and dashed:
            message += "; " + _(
                "a query that starts with '-' goes after '--': glossary lookup -- %(query)s"
            ) % {"query": dashed[-1]}
        if len(message) > 300:
            message = message[:300] + "…"
        message = "".join(ch if ch.isprintable() else "?" for ch in message)
        self.exit(2, self.prog + ": " + _("error") + ": " + message + "\n")


def lang_code(value: str) -> str:
    """argparse type for language codes, with an error that lists the valid ones."""
    if value in LANGS:
        return value
    raise argparse.ArgumentTypeError(
        _("unknown language code %(code)s; valid codes: %(codes)s")
        % {"code": echo(value, 20), "codes": ", ".join(LANGS)}
    )


def output_path(value: str) -> Path:
    """argparse type for ``-o``: a path, never the empty string (which would mean ``.``)."""
    if not value.strip():
        raise argparse.ArgumentTypeError(_("the output path is empty; name a file"))
    return Path(clean_text(value))


def positive_int(value: str) -> int:
    """argparse type for ``--limit``: an integer from 1 to 100."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= 100:
        raise argparse.ArgumentTypeError(
            _("expected a whole number from 1 to 100, got %(value)s") % {"value": echo(value, 20)}
        )
    return n


def choice(options: Sequence[str], what: str) -> Any:
    """argparse type for a fixed set of words (kind, category, format)."""

    def check(value: str) -> str:
        if value in options:
            return value
        raise argparse.ArgumentTypeError(
            _("unknown %(what)s %(value)s; valid: %(options)s")
            % {"what": what, "value": echo(value, 20), "options": ", ".join(options)}
        )

    return check


def build_parser() -> Parser:
    """The argument parser, with help texts in the current UI language."""
    langs = "{" + ",".join(LANGS) + "}"
    p = Parser(
        prog="glossary",
        description=_("A trilingual (es/ru/en) glossary of diffusion-model efficiency."),
    )
    p.add_argument("--ui-lang", type=lang_code, metavar=langs, help=_("language of messages"))
    p.add_argument("--entries", type=Path, metavar="DIR", help=_("read entries from DIR"))
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    s = sub.add_parser("lookup", help=_("find a term in any language"))
    s.add_argument(
        "query",
        metavar="QUERY",
        help=_("a term, alias, library, method or phrase, in any language"),
    )
    s.add_argument("--lang", type=lang_code, metavar=langs, help=_("language of the query"))
    s.add_argument("--to", type=lang_code, metavar=langs, help=_("language of the definition"))
    s.add_argument("--json", action="store_true", help=_("machine-readable output"))
    s.add_argument(
        "--limit",
        type=positive_int,
        default=5,
        metavar="N",
        help=_("number of other candidates to show"),
    )

    s = sub.add_parser("show", help=_("show a whole entry"))
    s.add_argument("query", metavar="SLUG_OR_TERM")
    s.add_argument("--lang", type=lang_code, metavar=langs, help=_("language to show"))

    s = sub.add_parser("list", help=_("list entries in alphabetical order"))
    s.add_argument("--lang", type=lang_code, metavar=langs, help=_("language to show"))
    s.add_argument("--kind", type=choice(KINDS, "kind"), metavar="{" + ",".join(KINDS) + "}")
    s.add_argument(
        "--category",
        type=choice(tuple(CATEGORIES), "category"),
        metavar="CATEGORY",
        help=", ".join(CATEGORIES),
    )

    s = sub.add_parser("validate", help=_("check every entry file; list every problem"))
    s.add_argument("directory", nargs="?", type=Path, metavar="DIR")

    s = sub.add_parser(
        "terms", help=_("per concept: the preferred term and every variant still in use")
    )
    s.add_argument("--lang", type=lang_code, metavar=langs, help=_("language to report"))

    s = sub.add_parser("export", help=_("export the glossary"))
    s.add_argument(
        "--format",
        required=True,
        type=choice(FORMATS, "format"),
        metavar="{" + ",".join(FORMATS) + "}",
    )
    s.add_argument(
        "-o",
        "--output",
        type=output_path,
        metavar="FILE",
        help=_("write to FILE (default: standard output)"),
    )

    s = sub.add_parser("run", help=_("run a technique's reference implementation"))
    s.add_argument("technique", metavar="TECHNIQUE")
    s.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")

    sub.add_parser("bench", add_help=False, help=_("run or check the benchmarks"))
    return p


# --- helpers ----------------------------------------------------------------------------------


def out(text: str = "") -> None:
    print(text)


def lang_label(code: str) -> str:
    if _language_names is not None and code in _language_names.get(_ui_lang, {}):
        return _language_names[_ui_lang][code]
    return i18n.language_name(code, _ui_lang)


def kind_label(kind: str) -> str:
    return {"technique": _("technique"), "concept": _("concept")}.get(kind, kind)


def wrap(text: str, indent: str = "  ") -> str:
    return "\n".join(
        textwrap.fill(par, WIDTH, initial_indent=indent, subsequent_indent=indent)
        for par in text.split("\n\n")
    )


def implementation_line(entry: Entry) -> str | None:
    ref = entry.reference
    if ref is None:
        return None
    if ref.implemented:
        return _("Implementation: %(command)s") % {"command": ref.command}
    return _("Implementation planned (%(module)s)") % {"module": ref.module}


def load(args: argparse.Namespace) -> Glossary:
    return load_glossary(args.entries)


def find(g: Glossary, query: str, lang: str | None) -> Entry:
    from .lookup import resolve

    entry = resolve(g, clean_text(query), lang)
    if entry is None:
        raise CliError(
            _("no entry matches %(query)s; try: glossary lookup %(query)s") % {"query": echo(query)}
        )
    return entry


# --- lookup -----------------------------------------------------------------------------------


def cmd_lookup(args: argparse.Namespace) -> int:
    from .compiled import open_compiled
    from .lookup import MAX_QUERY_CHARS, decide
    from .normalize import normalize

    query = clean_text(args.query)
    if len(query) > MAX_QUERY_CHARS:
        print(
            _("note: the query is cut to its first %(n)d characters") % {"n": MAX_QUERY_CHARS},
            file=sys.stderr,
        )
        query = query[:MAX_QUERY_CHARS]
    if not normalize(query):
        raise CliError(_("empty query: give a term with letters or digits"), 2)
    index = open_compiled(args.entries)
    _use_language_names(index.meta("language_names"))
    found = index.search(query, args.lang, args.limit + 1, prefer=(_ui_lang, "en"))
    decision = decide(found, args.lang)
    best = decision.best
    if best is not None:
        ref = best.entry.reference
        if ref and ref.implemented and not runnable(best.entry.slug, ref.module):
            load(args)  # the module vanished or left the registry since the index was compiled
    if args.json:
        out(safe_json(lookup_json(query, found, decision, args)))
        return 0 if best is not None else 1
    if decision.kind == "ambiguous":
        out(
            _("%(query)s is ambiguous; it matches these entries equally well:")
            % {"query": echo(query)}
        )
        for c in decision.candidates:
            out(candidate_line(c))
        out(_("Give more of the term, or pick one: glossary show SLUG"))
        return 1
    if best is None:
        out(_("No entry matches %(query)s.") % {"query": echo(query)})
        if found:
            out(_("Nearest entries:"))
            for c in found[:3]:
                out(candidate_line(c))
        else:
            out(_("Nothing similar either; try `glossary list`."))
        return 1
    lang = args.to or args.lang or best.name.lang or _ui_lang
    print_match(best.entry, lang, best.name.text, best.score, best.where)
    others = [c for c in found[1:] if c.score >= SUGGEST_THRESHOLD]
    if others:
        out(_("Other candidates:"))
        for c in others:
            out(candidate_line(c))
    return 0


def where_label(field: str) -> str:
    """Where a lookup matched (:data:`glossary.lookup.FIELDS`), in the UI language."""
    labels = {
        "term": _("term"),
        "alias": _("alias"),
        "slug": _("slug"),
        "library": _("library"),
        "method": _("method"),
        "source": _("source"),
        "definition": _("definition"),
        "note": _("accuracy note"),
        "explanation": _("explanation"),
    }
    return labels.get(field, field)


def candidate_line(c: Any) -> str:
    """One candidate: score, slug, and what matched where (in which language)."""
    lang = f", {c.name.lang}" if c.name.lang else ""
    return f"  {c.score:5.1f}  {c.slug}  ({echo(c.name.text, 80)}: {where_label(c.where)}{lang})"


_language_names: dict[str, dict[str, str]] | None = None


def _use_language_names(value: str | None) -> None:
    """Language names compiled into the lookup index (saves loading Babel's locale data)."""
    global _language_names
    with contextlib.suppress(TypeError, ValueError):
        names = json.loads(value) if value else None
        if isinstance(names, dict) and all(isinstance(names.get(lg), dict) for lg in LANGS):
            _language_names = names


def print_match(entry: Entry, lang: str, matched: str, score: float, where: str) -> None:
    category = CATEGORIES[entry.category].get(_ui_lang, entry.category)
    out(f"{entry.slug}  ({kind_label(entry.kind)}, {category})")
    out(
        _("Matched %(name)s in the %(field)s (score %(score).0f)")
        % {"name": echo(matched, 200), "field": where_label(where), "score": score}
    )
    width = max(len(lang_label(code)) for code in LANGS) + 1
    for code in LANGS:
        out(f"  {(lang_label(code) + ':').ljust(width)} {entry.term(code)}")
    text = entry.lang[lang]
    out(_("Definition (%(language)s):") % {"language": lang_label(lang)})
    out(wrap(text.definition))
    if text.note:
        out(_("Accuracy note:"))
        out(wrap(text.note))
    line = implementation_line(entry)
    if line:
        out(line)


def lookup_json(query: str, found: list[Any], decision: Any, args: argparse.Namespace) -> dict:
    candidates = [
        {
            "slug": c.slug,
            "score": round(c.score, 1),
            "matched": c.name.text,
            "matched_lang": c.name.lang or None,
            "matched_field": c.where,
            "tier": c.tier,
            "terms": {code: c.term(code) for code in LANGS},
        }
        for c in found
    ]
    result: dict[str, Any] = {
        "query": query,
        "match": None,
        "ambiguous": decision.kind == "ambiguous",
        "candidates": candidates,
    }
    if decision.best is not None:
        best = decision.best
        e = best.entry
        lang = args.to or args.lang or best.name.lang or _ui_lang
        ref = e.reference
        result["match"] = {
            **candidates[0],
            "kind": e.kind,
            "category": e.category,
            "lang": lang,
            "definition": e.lang[lang].definition,
            "note": e.lang[lang].note,
            "implementation": (
                {
                    "module": ref.module,
                    "status": ref.status,
                    "command": ref.command if ref.implemented else None,
                }
                if ref
                else None
            ),
        }
        result["candidates"] = candidates[1:]
    return result


# --- show, list -------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    g = load(args)
    entry = find(g, args.query, args.lang)
    lang = args.lang or _ui_lang
    t = entry.lang[lang]
    category = CATEGORIES[entry.category][_ui_lang]
    out(f"{t.term}  [{entry.slug}; {kind_label(entry.kind)}, {category}]")
    for code in LANGS:
        if code != lang:
            out(f"  {lang_label(code)}: {entry.term(code)}")
    if t.aliases:
        out(_("Also called: %(aliases)s") % {"aliases": ", ".join(t.aliases)})
    out()
    out(_("Definition:"))
    out(wrap(t.definition))
    if t.note:
        out(_("Accuracy note:"))
        out(wrap(t.note))
    out()
    out(t.explanation)
    out()
    if entry.related:
        names = [f"{g[s].term(lang)} ({s})" for s in entry.related if s in g]
        out(_("Related: %(names)s") % {"names": ", ".join(names)})
    for lib in entry.libraries:
        out(_("Library: %(name)s, %(api)s") % {"name": lib.name, "api": lib.api})
    for src in entry.sources:
        out(
            _("Source: %(title)s (%(year)d) %(link)s")
            % {"title": src.title, "year": src.year, "link": src.link or ""}
        )
    line = implementation_line(entry)
    if line:
        out(line)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from .collation import sort_key

    g = load(args)
    lang = args.lang or _ui_lang
    entries = [
        e
        for e in g
        if (args.kind is None or e.kind == args.kind)
        and (args.category is None or e.category == args.category)
    ]
    key = sort_key(lang)
    entries.sort(key=lambda e: key(e.term(lang)))
    for e in entries:
        out(f"{e.term(lang)}  ({e.slug}, {kind_label(e.kind)})")
    n = len(entries)
    print(ngettext("%(n)d entry", "%(n)d entries", n) % {"n": n}, file=sys.stderr)
    return 0


# --- validate, export -------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    from .loader import ENTRIES_DIR, entry_files, validate

    directory = args.directory or args.entries or ENTRIES_DIR
    problems = validate(directory)
    for problem in problems:
        out(str(problem))
    if problems:
        n = len(problems)
        print(
            ngettext("%(n)d problem found", "%(n)d problems found", n) % {"n": n}, file=sys.stderr
        )
        return 1
    n = len(entry_files(Path(directory)))
    out(ngettext("%(n)d entry OK", "%(n)d entries OK", n) % {"n": n})
    formula_warnings(Path(directory))
    return 0


def formula_warnings(directory: Path) -> None:
    """Warn (stderr, exit status unchanged) about every term or alias that a spreadsheet would
    read as a formula; the CSV export defuses them (:func:`glossary.export.defuse`)."""
    from .export import formula_names

    for slug, field, text in formula_names(load_glossary(directory)):
        message = _(
            "warning: %(path)s: %(field)s: %(text)s starts with %(first)s, which a spreadsheet "
            "reads as a formula; the CSV export writes it with a leading '"
        )
        where = {"path": one_line(str(directory / f"{slug}.yaml")), "field": field}
        print(message % {**where, "text": echo(text), "first": echo(text[0])}, file=sys.stderr)


def status_label(status: str) -> str:
    """What a use of a variant is, in the UI language."""
    return {
        "flagged": _("to fix"),
        "seed": _("seed text, kept verbatim"),
        "allowed": _("allowed"),
    }[status]


def cmd_terms(args: argparse.Namespace) -> int:
    from .loader import parse_folder
    from .terms import places, report

    lang = args.lang or _ui_lang
    parsed, problems = parse_folder(args.entries)
    concepts, more = report(lang, parsed) if not problems else ([], [])
    problems += more
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1
    used = flagged = 0
    for concept in concepts:
        where = _("style rule %(rule)s") % {"rule": concept.rule.id}
        if concept.rule.concept:
            where += ", " + _("entry %(slug)s") % {"slug": concept.rule.concept}
        out(f"{concept.preferred}  ({where})")
        variants = concept.variants()
        if not variants:
            out("    " + _("no variant in use"))
        for variant, uses in variants:
            spots = ", ".join(
                f"{slug} ×{n}" + ("" if status == "flagged" else f" [{status_label(status)}]")
                for slug, status, n in places(uses)
            )
            out(f"    {variant}  {len(uses)}: {spots}")
            used += len(uses)
            flagged += sum(u.status == "flagged" for u in uses)
    summary = ngettext("%(n)d concept", "%(n)d concepts", len(concepts)) % {"n": len(concepts)}
    summary += "; " + ngettext("%(n)d use of a variant", "%(n)d uses of variants", used) % {
        "n": used
    }
    summary += ", " + ngettext("%(n)d to fix", "%(n)d to fix", flagged) % {"n": flagged}
    out(summary)
    return 1 if flagged else 0


def _write_error(exc: Any, target: Path) -> str:
    """The one line that says, in the UI language, why ``target`` cannot be written."""
    where = {"path": target, "folder": target.parent}
    return {
        "empty": _("the output path is empty; name a file"),
        "no-folder": _("cannot write %(path)s: folder %(folder)s does not exist") % where,
        "is-folder": _("cannot write %(path)s: it is a folder; name a file") % where,
        "not-a-file": _("cannot write %(path)s: not a regular file, pipe or terminal") % where,
    }.get(exc.kind, str(exc))


def cmd_export(args: argparse.Namespace) -> int:
    from .export import WRITERS, export_to

    g = load(args)
    if args.output is None:
        WRITERS[args.format](g, sys.stdout)
        return 0
    from .safewrite import WriteError

    target: Path = args.output
    try:
        export_to(g, args.format, target)
    except WriteError as exc:
        raise CliError(_write_error(exc, target)) from None
    except OSError as exc:
        raise CliError(
            _("cannot write %(path)s: %(error)s") % {"path": target, "error": exc.strerror or exc}
        ) from None
    print(_("wrote %(path)s") % {"path": one_line(str(target))}, file=sys.stderr)
    return 0


# --- run, bench -------------------------------------------------------------------------------


def runnable(slug: str, module: str) -> bool:
    """Whether ``module`` is the registered package of ``slug`` and exists."""
    from .loader import module_exists, registered

    try:
        return registered(slug, module) and module_exists(module)
    except GlossaryError:  # an unreadable $GLOSSARY_REGISTRY; loading reports it
        return False


def cmd_run(args: argparse.Namespace) -> int:
    import runpy

    from .loader import module_exists, registered

    g = load(args)
    entry = find(g, args.technique, None)
    ref = entry.reference
    if ref is None:
        raise CliError(
            _("%(slug)s is a concept; only techniques have an implementation")
            % {"slug": entry.slug}
        )
    if not ref.implemented:
        raise CliError(
            _(
                "%(slug)s: implementation planned (%(module)s); "
                "the entry's status is not implemented yet"
            )
            % {"slug": entry.slug, "module": ref.module}
        )
    if not registered(entry.slug, ref.module):
        raise CliError(
            _(
                "%(slug)s: %(module)s is not the package registered for it in "
                "reference/registry.py; glossary run only runs registered techniques"
            )
            % {"slug": entry.slug, "module": ref.module}
        )
    if not module_exists(ref.module):
        raise CliError(
            _("%(slug)s: module %(module)s is missing") % {"slug": entry.slug, "module": ref.module}
        )
    saved = sys.argv
    sys.argv = [ref.module, *args.args]
    try:
        runpy.run_module(ref.module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exit_code(exc.code)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise CliError(
            _("%(module)s failed: %(error)s (run `python -m %(module)s` to see the traceback)")
            % {"module": ref.module, "error": f"{type(exc).__name__}: {first}"}
        ) from exc
    finally:
        sys.argv = saved
    return 0


STACKING = "stacking"
"""The stacking study: run and checked by ``glossary bench`` like a technique, though it is not
one (it has no glossary entry and is not in the registry)."""
FIRST_STUDIES = ("baseline-sanity",)
"""Studies run before the techniques: is the baseline they are judged against sound?"""
LAST_STUDIES = (STACKING, "realshape", "realshape-gpu")
"""Studies run after the techniques (they apply the techniques' code)."""
ACCELERATOR_STUDIES = ("realshape-gpu",)
"""Studies whose standard run needs a CUDA device: run when named; when every study runs, they
are left out on a machine without one (their committed result is still checked)."""
STUDY_NAMES = (*FIRST_STUDIES, *LAST_STUDIES)
UNMEASURED: tuple[str, ...] = ("realshape-gpu",)
"""Studies whose first standard run is pending: ``glossary bench --check`` says so instead of
reporting a missing result. A test fails once such a study has a result (remove it here)."""
_VALUED = ("--threads", "--out")


def _parse_bench(rest: list[str]) -> tuple[list[str], list[str], bool]:
    """``rest`` without the positional study names; the studies named; whether any other
    technique is (a value of ``--threads``/``--out`` is neither)."""
    kept, named, others, i = [], [], False, 0
    while i < len(rest):
        arg = rest[i]
        if arg in _VALUED and i + 1 < len(rest):
            kept += [arg, rest[i + 1]]
            i += 2
            continue
        if arg in STUDY_NAMES:
            named.append(arg)
        else:
            kept.append(arg)
            others = others or not arg.startswith("-")
        i += 1
    return kept, named, others


def split_stacking(rest: list[str]) -> tuple[list[str], bool]:
    """``rest`` without the positional study names, and whether the stacking study is selected:
    named, or implied because no technique and no study is named."""
    kept, named, others = _parse_bench(rest)
    return kept, STACKING in named or not (others or named)


def _study_flags(rest: list[str]) -> list[str]:
    """The flags of ``glossary bench`` that a study's command line understands."""
    out, i = [], 0
    while i < len(rest):
        arg = rest[i]
        if arg in _VALUED and i + 1 < len(rest):
            out += [arg, rest[i + 1]]
            i += 1
        elif arg.startswith(tuple(f"{v}=" for v in _VALUED)) or arg == "--quick":
            out.append(arg)
        i += 1
    return out


def _run_study(name: str, argv: list[str]) -> int:
    if name == STACKING:
        from reference.stacking.cli import main as stacking_main

        return stacking_main(argv)  # --check reads; a run goes to the technique command line
    from reference.harness.study import STUDIES
    from reference.harness.study import main as study_main

    if argv == ["--check"] and name in UNMEASURED:
        print(
            _("%(study)s: not measured yet (its first standard run is pending)") % {"study": name}
        )
        return 0
    return study_main(next(s for s in STUDIES if s.slug == name), argv)


def _bench_study(name: str, rest: list[str]) -> int:
    if "--check" in rest:
        return _run_study(name, ["--check"])
    try:
        return _run_study(name, ["--bench", *_study_flags(rest)])
    except Exception as exc:  # reported like the runner reports a failed technique
        if "--traceback" in rest:
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"glossary bench: {name} failed: {type(exc).__name__}: {first}", file=sys.stderr)
        return 1


def thread_count(value: str) -> int:
    """argparse type for ``--threads``: a whole number from 1 to the machine's CPU count."""
    cpus = os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= cpus:
        raise argparse.ArgumentTypeError(
            _("expected a whole number from 1 to %(cpus)d (this machine's CPUs), got %(value)s")
            % {"cpus": cpus, "value": echo(value, 20)}
        )
    return n


def bench_parser() -> Parser:
    """The options of ``glossary bench``, checked here, in one line, before anything runs."""
    p = Parser(prog="glossary bench", description=_("run or check the benchmarks"))
    p.add_argument(
        "techniques",
        nargs="*",
        metavar="TECHNIQUE",
        help=_("technique or study slugs (default: every technique and study)"),
    )
    p.add_argument("--quick", action="store_true", help=_("the test configuration, in artifacts/"))
    p.add_argument(
        "--check", action="store_true", help=_("check the committed results; run nothing")
    )
    p.add_argument(
        "--out", type=output_path, metavar="DIR", help=_("write results to DIR (non-standard)")
    )
    p.add_argument("--threads", type=thread_count, metavar="N", help=_("torch threads (default 2)"))
    p.add_argument("--traceback", action="store_true", help=_("show the traceback of a failure"))
    return p


def check_bench(rest: list[str]) -> None:
    """Refuse unknown flags, bad values and unknown techniques of ``glossary bench`` (exit 2)
    before the harness is imported: a typo must never start the study."""
    args = bench_parser().parse_args(rest)
    try:
        from reference.registry import BY_SLUG
    except ImportError:
        return  # cmd_bench says that the harness is missing
    known = [*sorted(BY_SLUG), *STUDY_NAMES]
    for name in args.techniques:
        if name not in known:
            raise CliError(
                _("unknown technique %(name)s; known: %(known)s")
                % {"name": echo(name, 40), "known": ", ".join(known)},
                2,
            )


def cmd_bench(rest: list[str]) -> int:
    """The baseline sanity study first, then the techniques, then the other studies: all of
    them when nothing is named, else what is named."""
    check_bench(rest)
    try:
        import reference.harness.runner  # noqa: F401 (is the harness installed?)
    except ImportError as exc:
        raise CliError(
            _("the benchmark harness is not available (%(error)s)") % {"error": exc}, 2
        ) from exc
    kept, named, others = _parse_bench(rest)
    every = not (named or others)
    code = 0
    for study in FIRST_STUDIES:
        if every or study in named:
            code = max(code, _bench_study(study, rest))
    if others or every:
        code = max(code, bench_techniques(kept))
    for study in LAST_STUDIES:
        if study in named or (every and _can_run(study, rest)):
            code = max(code, _bench_study(study, rest))
    return code


def _can_run(study: str, rest: list[str]) -> bool:
    """Whether ``glossary bench`` with no study named runs (or checks) ``study`` here; says why
    not when it does not."""
    if study not in ACCELERATOR_STUDIES or "--check" in rest:
        return True
    import torch

    if torch.cuda.is_available():
        return True
    print(_("%(study)s: not run: it needs a CUDA device") % {"study": study})
    return False


def bench_techniques(kept: list[str]) -> int:
    """The techniques of ``glossary bench``: checked here, then handed to
    `reference.harness.runner` (every plan is checked before anything runs)."""
    from reference.harness import runner
    from reference.harness.entry import UsageError
    from reference.registry import slugs

    args = bench_parser().parse_args(kept)
    chosen = list(args.techniques) or slugs()
    if args.check:
        return runner.check(chosen)
    try:
        return runner.run_techniques(
            chosen, quick=args.quick, threads=args.threads, out=args.out,
            show_traceback=args.traceback,
        )  # fmt: skip
    except UsageError as exc:
        raise CliError(str(exc), 2) from None


def exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


COMMANDS = {
    "lookup": cmd_lookup,
    "show": cmd_show,
    "list": cmd_list,
    "validate": cmd_validate,
    "terms": cmd_terms,
    "export": cmd_export,
    "run": cmd_run,
}


# --- entry point ------------------------------------------------------------------------------


def ui_lang_from_argv(argv: Sequence[str]) -> str | None:
    """The ``--ui-lang`` value if given and valid (read before the parser is built)."""
    for i, arg in enumerate(argv):
        value = None
        if arg == "--ui-lang" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--ui-lang="):
            value = arg.split("=", 1)[1]
        if value in LANGS:
            return value
    return None


def _safe_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]


def _main(argv: list[str]) -> int:
    set_ui_lang(ui_lang_from_argv(argv) or i18n.ui_lang_from_env())
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        return cmd_bench(rest)
    if rest:
        parser.error(_("unrecognized arguments: %(args)s") % {"args": " ".join(rest)})
    return COMMANDS[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (never raises, never prints a traceback)."""
    _safe_streams()
    argv = list(sys.argv[1:] if argv is None else argv)
    Parser.argv = argv
    try:
        return _main(argv)
    except SystemExit as exc:
        return exit_code(exc.code)
    except CliError as exc:
        print(f"glossary: {one_line(str(exc))}", file=sys.stderr)
        return exc.code
    except GlossaryError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(_("glossary: the entries are invalid; run `glossary validate`"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(_("glossary: interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the promise: one line, never a traceback
        first = (clean_text(str(exc)).strip().splitlines() or [""])[0][:300]
        print("glossary: " + _("error") + f": {type(exc).__name__}: {first}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
