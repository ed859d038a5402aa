"""Load and validate the glossary entries (``glossary/entries/*.yaml``).

:func:`validate` reports every problem of a directory at once, each as a :class:`Problem` that
prints as one line ``path:line: field: message (hint: ...)``. :func:`load_glossary` returns a
:class:`glossary.model.Glossary` or raises :class:`GlossaryError` holding those problems.

The rules come from :mod:`glossary.schema`. Files are parsed by :class:`PlainLoader`, a
``yaml.SafeLoader`` that refuses anchors, aliases and tags (they make entries hard to review and
can expand a small file into a huge document), and that remembers the line of every key so that
problems point at the right line. Checks that span files follow: unique slugs, unique terms and
aliases per language (compared with :func:`glossary.normalize.normalize`), existing related
slugs, and the reference module of each technique (below).

**The technique registry.** An implemented technique's ``reference.module`` must be the package
that the project's technique registry, ``reference/registry.py``, lists for the entry's slug; a
planned one may name any module, but not the package of another registered slug, and a
registered slug must name its own package (so ``module: os`` is refused, and ``glossary run``
only ever runs registered code). :func:`technique_registry` reads the registry (``slug ->
package``): ``reference.registry`` imports only the standard library and is imported on first
use, so validating and looking up never import torch, numpy or diffusers. The module must also
exist, which is checked with ``importlib.util.find_spec`` (it imports only the parent packages).

Tests whose fixture entries name fixture modules add to the registry through the environment
variable ``GLOSSARY_REGISTRY`` (:data:`REGISTRY_ENV`): the path of a JSON object ``{"slug":
"package", ...}`` merged over the project's registry (a slug listed there replaces the
project's). It is read on every load, and a cached glossary is keyed by the merged registry.
"""

from __future__ import annotations

import importlib.util
import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import cache, schema
from .model import Entry, Glossary, LangText, Library, Reference, Source
from .normalize import normalize
from .problem import Problem
from .problem import display as _display
from .problem import shown as _shown

ENTRIES_DIR = Path(__file__).resolve().parent / "entries"
REGISTRY_ENV = "GLOSSARY_REGISTRY"
REGISTRY_FILE = "reference/registry.py"

PathKey = tuple[str | int, ...]


def __getattr__(name: str) -> Any:
    # PlainLoader and parse_yaml live in glossary.plainyaml, imported on first use so that a
    # cached load never imports PyYAML.
    if name in ("PlainLoader", "parse_yaml"):
        from . import plainyaml

        return getattr(plainyaml, name)
    raise AttributeError(name)


class GlossaryError(Exception):
    """The glossary could not be loaded; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def _close(word: str, options: list[str], n: int = 1) -> list[str]:
    import difflib  # only needed when there is a problem to report

    return difflib.get_close_matches(word, options, n=n)


def field_name(path: PathKey) -> str:
    """Format a key path as ``lang.es.term`` or ``sources[0].arxiv``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "entry"


class _FileChecker:
    """Checks one parsed file and collects problems with their lines."""

    def __init__(self, display: str, lines: dict[PathKey, int]) -> None:
        self.display = display
        self.lines = lines
        self.problems: list[Problem] = []

    def line(self, path: PathKey) -> int:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def add(self, path: PathKey, message: str, hint: str | None = None) -> None:
        self.problems.append(
            Problem(self.display, self.line(path), field_name(path), message, hint)
        )

    def mapping(self, value: Any, fields: tuple[schema.Field, ...], path: PathKey) -> bool:
        """Check keys and value types of a mapping; return whether it is a mapping at all."""
        if not isinstance(value, dict):
            self.add(
                path,
                f"expected a mapping, got {_kind(value)}",
                "write `key: value` lines indented under this key",
            )
            return False
        allowed = [f.name for f in fields]
        for key in value:
            if key not in allowed:
                close = _close(str(key), allowed, n=1)
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else "allowed keys: " + ", ".join(allowed)
                )
                self.add((*path, str(key)), f"unknown key '{key}'", hint)
        for f in fields:
            if f.name not in value:
                if f.required:
                    self.add(path, f"missing key '{f.name}'", f.description)
                continue
            self.typed(value[f.name], f, (*path, f.name))
        return True

    def typed(self, value: Any, f: schema.Field, path: PathKey) -> None:
        if f.type == "str":
            self.text(value, path)
            if isinstance(value, str) and value.strip() and f.choices and value not in f.choices:
                self.add(path, f"'{value}' is not allowed", "one of: " + ", ".join(f.choices))
            self.pattern(value, f, path)
        elif f.type == "int":
            if not isinstance(value, int) or isinstance(value, bool):
                self.add(path, f"expected an integer, got {_kind(value)}")
        elif f.type == "bool":
            if not isinstance(value, bool):
                self.add(path, f"expected true or false, got {_kind(value)}")
        elif f.type in ("list[str]", "list[mapping]"):
            if not isinstance(value, list):
                self.add(
                    path,
                    f"expected a list, got {_kind(value)}",
                    "write [a, b] or one `- item` per line; [] when empty",
                )
            elif f.type == "list[str]":
                for i, item in enumerate(value):
                    self.text(item, (*path, i))
                    self.pattern(item, f, (*path, i))

    def pattern(self, value: Any, f: schema.Field, path: PathKey) -> None:
        """The schema's pattern of ``f``, matched in full: the one format check of a field."""
        if _ok(value) and not f.matches(value):
            self.add(path, f.invalid.format(value=_shown(value)), f.hint)

    def text(self, value: Any, path: PathKey) -> None:
        if not isinstance(value, str):
            hint = "quote it" if isinstance(value, int | float) else None
            self.add(path, f"expected text, got {_kind(value)}", hint)
        elif not value.strip():
            self.add(path, "empty text", "write the text or remove the key if it is optional")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    names = {
        dict: "a mapping",
        list: "a list",
        str: "text",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }
    return names.get(type(value), type(value).__name__)


def _ok(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_entry(c: _FileChecker, data: Any, stem: str) -> None:
    """Schema checks of one entry that need nothing but the file itself."""
    if not c.mapping(data, schema.TOP_FIELDS, ()):
        return
    slug = data.get("slug")
    if _ok(slug) and schema.SLUG_RE.fullmatch(slug) and slug != stem:
        c.add(
            ("slug",),
            f"slug '{slug}' does not match the file name '{stem}.yaml'",
            f"rename the file to {slug}.yaml or set slug: {stem}",
        )
    related = data.get("related")
    if isinstance(related, list):
        seen: set[str] = set()
        for i, item in enumerate(related):
            if not _ok(item):
                continue
            if not schema.SLUG_RE.fullmatch(item):
                continue  # reported by the field's pattern
            if item == slug:
                c.add(("related", i), "an entry cannot be related to itself")
            elif item in seen:
                c.add(("related", i), f"'{item}' is listed twice")
            seen.add(item)
    _check_kind(c, data)
    _check_reference(c, data.get("reference"))
    _check_list(c, data.get("libraries"), schema.LIBRARY_FIELDS, "libraries", _check_library)
    _check_list(c, data.get("sources"), schema.SOURCE_FIELDS, "sources", _check_source)
    _check_langs(c, data.get("lang"))


def _check_kind(c: _FileChecker, data: dict[str, Any]) -> None:
    kind = data.get("kind")
    if kind == "technique":
        if "reference" not in data:
            c.add(
                (),
                "missing key 'reference'",
                "techniques need a reference block (module and status)",
            )
        sources = data.get("sources")
        if isinstance(sources, list) and not sources:
            c.add(
                ("sources",),
                "a technique needs at least one source",
                "cite the paper that introduced it",
            )
    elif kind == "concept" and "reference" in data:
        c.add(
            ("reference",),
            "concepts have no reference implementation",
            "remove the reference block or make the entry a technique",
        )


def _check_reference(c: _FileChecker, ref: Any) -> None:
    if ref is None:
        return
    c.mapping(ref, schema.REFERENCE_FIELDS, ("reference",))


def _check_list(
    c: _FileChecker, items: Any, fields: tuple[schema.Field, ...], key: str, extra: Any
) -> None:
    if not isinstance(items, list):
        return
    for i, item in enumerate(items):
        if c.mapping(item, fields, (key, i)):
            extra(c, item, (key, i))


def _check_library(c: _FileChecker, lib: dict[str, Any], path: PathKey) -> None:
    """A library has nothing to check beyond its fields' types and patterns."""


def _check_source(c: _FileChecker, src: dict[str, Any], path: PathKey) -> None:
    year = src.get("year")
    if isinstance(year, int) and not schema.MIN_YEAR <= year <= schema.MAX_YEAR:
        c.add(
            (*path, "year"), f"year {year} is out of range", f"{schema.MIN_YEAR}-{schema.MAX_YEAR}"
        )
    authors = src.get("authors")
    if isinstance(authors, list) and not authors:
        c.add((*path, "authors"), "a source needs at least one author")
    for i, author in enumerate(authors if isinstance(authors, list) else []):
        if isinstance(author, str) and schema.ET_AL_RE.fullmatch(author):
            c.add(
                (*path, "authors", i),
                f"'{author.strip()}' is not an author",
                "list the real authors, or the first ones and set authors_truncated: true",
            )
    _check_years(c, src, path)
    if not any(k in src for k in schema.SOURCE_LINK_KEYS):
        c.add(path, "a source needs an arxiv id, a doi or a url", "so that readers can find it")


def _check_years(c: _FileChecker, src: dict[str, Any], path: PathKey) -> None:
    """One year policy: ``year`` is the venue year, ``arxiv_year`` keeps the preprint year."""
    year, arxiv, arxiv_year = src.get("year"), src.get("arxiv"), src.get("arxiv_year")
    if not isinstance(year, int) or isinstance(year, bool):
        return
    venue = src.get("venue")
    found = schema.VENUE_YEAR_RE.search(venue) if _ok(venue) else None
    if found and int(found.group()) != year:
        c.add(
            (*path, "year"),
            f"year {year} differs from the venue '{venue}'",
            f"year is the venue year: set year: {found.group()}"
            + (
                ""
                if arxiv_year is not None or not arxiv
                else " and keep the arXiv year in arxiv_year"
            ),
        )
    id_year = schema.arxiv_id_year(arxiv) if _ok(arxiv) else None
    if isinstance(arxiv_year, int) and not isinstance(arxiv_year, bool):
        if not _ok(arxiv):
            c.add((*path, "arxiv_year"), "arxiv_year without an arxiv id", "add the id or drop it")
        elif id_year is not None and arxiv_year != id_year:
            c.add(
                (*path, "arxiv_year"),
                f"arxiv_year {arxiv_year} does not match the id '{arxiv}'",
                f"the id was posted in {id_year}",
            )
        elif arxiv_year > year:
            c.add((*path, "arxiv_year"), f"arxiv_year {arxiv_year} is after year {year}")


def _check_langs(c: _FileChecker, langs: Any) -> None:
    if langs is None:
        return
    if not isinstance(langs, dict):
        c.add(("lang",), f"expected a mapping, got {_kind(langs)}")
        return
    for code in langs:
        if code not in schema.LANGS:
            c.add(
                ("lang", str(code)),
                f"unknown language '{code}'",
                "languages: " + ", ".join(schema.LANGS),
            )
    with_note: list[str] = []
    for code in schema.LANGS:
        if code not in langs:
            c.add(
                ("lang",),
                f"missing language '{code}'",
                "every entry is written in " + ", ".join(schema.LANGS),
            )
            continue
        block = langs[code]
        if not c.mapping(block, schema.LANG_FIELDS, ("lang", code)):
            continue
        if "note" in block:
            with_note.append(code)
        _check_names(c, block, code)
    if with_note and len(with_note) < len(schema.LANGS):
        missing = [code for code in schema.LANGS if code not in with_note]
        c.add(
            ("lang", with_note[0], "note"),
            f"note present in {', '.join(with_note)} but missing in {', '.join(missing)}",
            "an accuracy note must be written in every language or in none",
        )


def _check_names(c: _FileChecker, block: dict[str, Any], code: str) -> None:
    names: list[tuple[PathKey, str]] = []
    if _ok(block.get("term")):
        names.append((("lang", code, "term"), block["term"]))
    aliases = block.get("aliases")
    if isinstance(aliases, list):
        names += [(("lang", code, "aliases", i), a) for i, a in enumerate(aliases) if _ok(a)]
    seen: dict[str, str] = {}
    for path, name in names:
        bad = [ch for ch in schema.FORBIDDEN_IN_TERMS if ch in name]
        if bad:
            c.add(path, f"{name!r} contains {bad[0]!r}", "a term or alias is one line without ';'")
        if len(name) > schema.MAX_TERM_CHARS:
            c.add(path, f"longer than {schema.MAX_TERM_CHARS} characters")
        key = normalize(name)
        if not key:
            c.add(path, f"{name!r} has no letters or digits")
        elif key in seen:
            c.add(
                path,
                f"'{name}' repeats '{seen[key]}' of the same entry",
                "remove the duplicate alias",
            )
        else:
            seen[key] = name


@dataclass
class _Parsed:
    path: Path
    display: str
    data: dict[str, Any]
    lines: dict[PathKey, int]
    clean: bool


def _read_file(path: Path, display: str) -> tuple[str | None, list[Problem]]:
    size = path.stat().st_size
    if size > schema.MAX_FILE_BYTES:
        return None, [
            Problem(
                display,
                1,
                "file",
                f"file is {size} bytes, over the limit of {schema.MAX_FILE_BYTES} bytes",
                "split the explanation or shorten it; entries are meant to be short",
            )
        ]
    raw = path.read_bytes()
    if b"\x00" in raw:
        offset = raw.index(b"\x00")
        return None, [
            Problem(
                display,
                raw[:offset].count(b"\n") + 1,
                "file",
                f"contains a NUL byte (offset {offset})",
                "remove it; entries are plain UTF-8 text",
            )
        ]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, [
            Problem(
                display,
                line,
                "file",
                f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                "save the file as UTF-8",
            )
        ]
    return text.removeprefix("\ufeff"), []


def _control_character(display: str, text: str, exc: Any) -> Problem:
    """The problem of a character YAML does not accept (``exc``: a ``yaml.reader.ReaderError``)."""
    char = exc.character if isinstance(exc.character, int) else 0
    return Problem(
        display,
        text[: exc.position].count("\n") + 1,
        "file",
        f"contains the control character U+{char:04X} (offset {exc.position})",
        "remove it; entries are plain UTF-8 text",
    )


def _parse_file(path: Path) -> tuple[_Parsed | None, list[Problem]]:
    import yaml

    from .plainyaml import Refused, parse_yaml, too_deep

    display = _display(path)
    text, problems = _read_file(path, display)
    if text is None:
        return None, problems
    try:
        deep = too_deep(text, schema.MAX_DEPTH)
        if deep is not None:
            return None, [
                Problem(
                    display,
                    deep,
                    "yaml",
                    f"nested more than {schema.MAX_DEPTH} levels deep",
                    "entries are flat: a few levels of keys and lists",
                )
            ]
        data, lines, dups = parse_yaml(text)
    except Refused as exc:
        line = exc.mark.line + 1 if exc.mark else 1
        return None, [Problem(display, line, "yaml", exc.message, exc.hint)]
    except yaml.reader.ReaderError as exc:  # a control character; it has no line mark
        return None, [_control_character(display, text, exc)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        message = exc.problem or exc.context or "invalid YAML"
        return None, [
            Problem(
                display,
                line,
                "yaml",
                f"invalid YAML: {message}",
                "check indentation, colons and quotes around this line",
            )
        ]
    except yaml.YAMLError as exc:
        return None, [Problem(display, 1, "yaml", f"invalid YAML: {exc}")]
    checker = _FileChecker(display, lines)
    for dup_path, dup_line in dups:
        checker.problems.append(
            Problem(
                display,
                dup_line,
                field_name(dup_path),
                f"key '{dup_path[-1]}' appears twice",
                "keep one; YAML would silently use the last",
            )
        )
    _check_entry(checker, data, path.stem)
    parsed = _Parsed(
        path, display, data if isinstance(data, dict) else {}, lines, clean=not checker.problems
    )
    return parsed, checker.problems


def module_exists(module: str) -> bool:
    """Whether ``module`` can be imported, checked without importing it (only its parents)."""
    parts = module.split(".")
    try:
        for i in range(1, len(parts) + 1):
            if importlib.util.find_spec(".".join(parts[:i])) is None:
                return False
    except (ImportError, ValueError, AttributeError):
        return False
    return True


def _project_registry() -> dict[str, str]:
    """``slug -> package`` of ``reference/registry.py`` (empty when ``reference`` is absent)."""
    try:
        from reference import registry
    except ImportError:
        return {}
    return {t.slug: t.package for t in registry.TECHNIQUES}


def _registry_file_problem(path: str, message: str) -> GlossaryError:
    return GlossaryError(
        [
            Problem(
                path,
                1,
                "registry",
                message,
                f'a JSON object {{"slug": "package"}} ({REGISTRY_ENV})',
            )
        ]
    )


def _extra_registry(path: str) -> dict[str, str]:
    """The JSON object ``{slug: package}`` of the file ``path`` (see :data:`REGISTRY_ENV`)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise _registry_file_problem(path, f"cannot read: {exc.strerror}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _registry_file_problem(path, f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _registry_file_problem(path, f"expected a JSON object, got {_kind(data)}")
    for slug, package in data.items():
        if not schema.SLUG_RE.fullmatch(slug):
            raise _registry_file_problem(path, f"'{slug}' is not a slug")
        if not isinstance(package, str) or not schema.MODULE_RE.fullmatch(package):
            shown = f"'{package}'" if isinstance(package, str) else _kind(package)
            raise _registry_file_problem(path, f"{slug}: {shown} is not a dotted module path")
    return data


def technique_registry() -> dict[str, str]:
    """``slug -> package`` of every registered technique.

    The project's ``reference/registry.py``, with the file named by ``$GLOSSARY_REGISTRY``
    merged over it. Raises :class:`GlossaryError` (one problem naming that file) when the file
    is unreadable, is not a JSON object of slugs and module paths, or registers one package
    under two slugs.
    """
    registry = _project_registry()
    extra = os.environ.get(REGISTRY_ENV)
    if extra:
        registry |= _extra_registry(extra)
        packages = list(registry.values())
        twice = sorted({p for p in packages if packages.count(p) > 1})
        if twice:
            raise _registry_file_problem(extra, f"package '{twice[0]}' is registered twice")
    return registry


def registered(slug: str, module: str, registry: Mapping[str, str] | None = None) -> bool:
    """Whether ``module`` is the package that the technique registry lists for ``slug``."""
    return (technique_registry() if registry is None else registry).get(slug) == module


def _registry_problem(
    slug: str, module: str, implemented: bool, registry: Mapping[str, str]
) -> tuple[str, str] | None:
    """Why an entry's ``reference.module`` disagrees with the registry: (message, hint)."""
    own = registry.get(slug)
    if own == module:
        return None
    fix = f"set module: {own}" if own else None
    owner = next((other for other, package in registry.items() if package == module), None)
    if owner is not None:
        message = f"'{module}' is the registered package of '{owner}', not of '{slug}'"
        return message, fix or "name this technique's own package"
    if implemented:
        message = f"'{module}' is not a registered technique package ({REGISTRY_FILE})"
        return message, fix or "register it or set status: planned"
    if own is not None:
        message = f"technique '{slug}' is registered with the package '{own}' ({REGISTRY_FILE})"
        return message, f"set module: {own}"
    return None


def _check_module(p: _Parsed, registry: Mapping[str, str], add: Any) -> None:
    """The technique's ``reference.module`` against the registry, then on disk."""
    ref = p.data.get("reference")
    if not isinstance(ref, dict) or p.data.get("kind") != "technique":
        return
    module = ref.get("module")
    if not (_ok(module) and schema.MODULE_RE.fullmatch(module)):
        return  # reported by the field's pattern
    slug = p.data.get("slug") if _ok(p.data.get("slug")) else p.path.stem
    implemented = ref.get("status") == "implemented"
    found = _registry_problem(slug, module, implemented, registry)
    if found is not None:
        add(p, ("reference", "module"), *found)
    elif implemented and not module_exists(module):
        add(
            p,
            ("reference", "module"),
            f"module '{module}' does not exist but status is implemented",
            "write the module or set status: planned",
        )


def _check_across(
    files: list[_Parsed], stems: set[str], registry: Mapping[str, str]
) -> list[Problem]:
    """Rules across files; ``stems`` names every entry file, parsed or not; ``registry`` maps
    slugs to packages (:func:`technique_registry`)."""
    problems: list[Problem] = []

    def add(p: _Parsed, path: PathKey, message: str, hint: str | None = None) -> None:
        c = _FileChecker(p.display, p.lines)
        c.add(path, message, hint)
        problems.extend(c.problems)

    by_slug: dict[str, _Parsed] = {}
    for p in files:
        slug = p.data.get("slug")
        if not _ok(slug):
            continue
        if slug in by_slug:
            add(
                p,
                ("slug",),
                f"duplicate slug '{slug}', also in {by_slug[slug].display}",
                "every entry needs its own slug",
            )
        else:
            by_slug[slug] = p
    slugs = set(by_slug) | stems
    names: dict[tuple[str, str], tuple[str, str, _Parsed]] = {}
    for p in files:
        related = p.data.get("related")
        for i, item in enumerate(related if isinstance(related, list) else []):
            if _ok(item) and schema.SLUG_RE.fullmatch(item) and item not in slugs:
                close = _close(item, sorted(slugs), n=1)
                add(
                    p,
                    ("related", i),
                    f"related slug '{item}' does not exist",
                    f"did you mean '{close[0]}'?" if close else "add that entry first",
                )
        _check_module(p, registry, add)
        _collect_names(p, names, add)
    from .links import check as check_links

    check_links({slug: (p, p.data) for slug, p in by_slug.items()}, add)
    return problems


def _collect_names(
    p: _Parsed, names: dict[tuple[str, str], tuple[str, str, _Parsed]], add: Any
) -> None:
    langs = p.data.get("lang")
    if not isinstance(langs, dict):
        return
    slug = p.data.get("slug") if _ok(p.data.get("slug")) else p.path.stem
    for code in schema.LANGS:
        block = langs.get(code)
        if not isinstance(block, dict):
            continue
        entries: list[tuple[PathKey, Any]] = [(("lang", code, "term"), block.get("term"))]
        aliases = block.get("aliases")
        if isinstance(aliases, list):
            entries += [(("lang", code, "aliases", i), a) for i, a in enumerate(aliases)]
        for path, name in entries:
            if not _ok(name):
                continue
            key = normalize(name)
            if not key:
                continue
            other = names.get((code, key))
            if other is None:
                names[(code, key)] = (slug, name, p)
            elif other[0] != slug:
                add(
                    p,
                    path,
                    f"'{name}' collides with '{other[1]}' of entry '{other[0]}' in language {code}",
                    "names must identify one entry per language; drop or qualify one of them",
                )


def _build(p: _Parsed) -> Entry:
    d = p.data
    ref = d.get("reference")
    langs = {
        code: LangText(
            term=block["term"].strip(),
            aliases=tuple(a.strip() for a in block["aliases"]),
            definition=block["definition"].strip(),
            explanation=block["explanation"].strip(),
            note=block["note"].strip() if "note" in block else None,
        )
        for code, block in ((code, d["lang"][code]) for code in schema.LANGS)
    }
    return Entry(
        slug=d["slug"],
        kind=d["kind"],
        category=d["category"],
        related=tuple(d["related"]),
        one_way=tuple(d.get("one_way", ())),
        reference=Reference(ref["module"], ref["status"]) if ref else None,
        libraries=tuple(Library(x["name"], x["api"], x.get("url")) for x in d["libraries"]),
        sources=tuple(
            Source(
                s["title"],
                tuple(s["authors"]),
                s["year"],
                s.get("arxiv"),
                s.get("doi"),
                s.get("url"),
                s.get("venue"),
                arxiv_year=s.get("arxiv_year")
                or (schema.arxiv_id_year(s["arxiv"]) if s.get("arxiv") else None),
                authors_truncated=bool(s.get("authors_truncated", False)),
            )
            for s in d["sources"]
        ),
        lang=langs,
        path=p.path,
    )


def entry_files(directory: Path) -> list[Path]:
    """The ``*.yaml`` files of ``directory`` in name order (``*.yml`` counts as a mistake)."""
    return sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml"))


def parse_folder(directory: Path | None = None) -> tuple[list[_Parsed], list[Problem]]:
    """Every entry file of ``directory`` (default: the package's entries) parsed, without the
    checks across entries, and the problems that stop a report on them (no such folder, no
    entry file, a file that cannot be parsed)."""
    folder = Path(directory) if directory is not None else ENTRIES_DIR
    if not folder.is_dir() or not entry_files(folder):
        return [], [
            Problem(
                str(folder),
                1,
                "directory",
                "not a directory" if not folder.is_dir() else "holds no entry files (*.yaml)",
                "pass the folder that holds the entry files",
            )
        ]
    parsed, found = [], []
    for path in entry_files(folder):
        p, trouble = _parse_file(path)
        found += trouble
        if p is not None:
            parsed.append(p)
    return parsed, found


def _load(
    directory: Path | None, style: bool = False, catalogs: bool = False
) -> tuple[Glossary | None, list[Problem]]:
    directory = Path(directory) if directory is not None else ENTRIES_DIR
    if not directory.is_dir():
        return None, [
            Problem(
                str(directory),
                1,
                "directory",
                "not a directory",
                "pass the folder that holds the entry files",
            )
        ]
    registry, problems = _registry_or_problems()
    parsed: list[_Parsed] = []
    if not entry_files(directory):
        return None, [
            Problem(
                str(directory),
                1,
                "directory",
                "holds no entry files (*.yaml)",
                "pass the folder that holds the entry files",
            )
        ]
    for path in entry_files(directory):
        if path.suffix == ".yml":
            problems.append(
                Problem(
                    _display(path),
                    1,
                    "file",
                    "entry files end in .yaml",
                    f"rename it to {path.stem}.yaml",
                )
            )
            continue
        try:
            p, found = _parse_file(path)
        except OSError as exc:
            problems.append(Problem(_display(path), 1, "file", f"cannot read: {exc.strerror}"))
            continue
        problems += found
        if p is not None:
            parsed.append(p)
    problems += _check_across(parsed, {p.stem for p in entry_files(directory)}, registry)
    if style:  # the house style (glossary/style/*.yaml); only validate pays for it
        from . import style as house_style

        problems += house_style.check(parsed)
    if catalogs:  # the words of the results and the labels, against the same sheets
        from . import terms

        problems += terms.catalog_problems()
    if problems:
        return None, problems
    return Glossary({p.data["slug"]: _build(p) for p in parsed}), []


def _registry_or_problems() -> tuple[dict[str, str], list[Problem]]:
    """The registry to validate with, and the problem of ``$GLOSSARY_REGISTRY`` if any."""
    try:
        return technique_registry(), []
    except GlossaryError as exc:
        return _project_registry(), exc.problems


def validate(directory: Path | None = None, catalogs: bool | None = None) -> list[Problem]:
    """Every problem of the entries in ``directory`` (default: the package's entries).

    This includes the house style of each language (:mod:`glossary.style`), which loading for a
    lookup skips, and, with ``catalogs`` (by default when ``directory`` is the package's own
    entries), the style of the message catalogs (:mod:`glossary.terms`).
    """
    if catalogs is None:
        own = ENTRIES_DIR.resolve()
        catalogs = directory is None or Path(directory).resolve() == own
    return _load(directory, style=True, catalogs=catalogs)[1]


def _fingerprint(directory: Path, files: list[Path], registry: Mapping[str, str]) -> list[Any]:
    """What a cached glossary depends on: entry bytes, the code that validated them and the
    technique registry."""
    code = Path(__file__).resolve().parent
    stamp = [
        [f.name, f.stat().st_size, f.stat().st_mtime_ns]
        for f in (code / "loader.py", code / "schema.py", code / "plainyaml.py")
    ]
    digests = [[f.name, f.stat().st_mtime_ns, zlib.crc32(f.read_bytes())] for f in files]
    return [str(directory.resolve()), stamp, digests, dict(registry)]


def _from_cache(directory: Path, key: list[Any], name: str) -> Glossary | None:
    value = cache.read(name, key)
    if not isinstance(value, list):
        return None
    try:
        parsed = [_Parsed(directory / f"{d['slug']}.yaml", "", d, {}, True) for d in value]
        glossary = Glossary({p.data["slug"]: _build(p) for p in parsed})
    except (KeyError, TypeError, AttributeError, ValueError):
        return None
    for entry in glossary:  # a module may have been deleted since the cache was written
        ref = entry.reference
        if ref and ref.implemented and not module_exists(ref.module):
            return None
    return glossary


def load_glossary(directory: Path | None = None) -> Glossary:
    """Load and validate the entries of ``directory`` (default: the package's entries).

    Raises :class:`GlossaryError` listing every problem if anything is wrong. A valid glossary
    is cached (:mod:`glossary.cache`), keyed by the mtime and CRC-32 of every entry file and by
    the technique registry, so the next load skips YAML parsing; ``validate`` never uses the
    cache.
    """
    directory = Path(directory) if directory is not None else ENTRIES_DIR
    key: list[Any] | None = None
    name = ""
    registry, registry_problems = _registry_or_problems()
    if cache.enabled() and directory.is_dir() and not registry_problems:
        try:
            key = _fingerprint(directory, entry_files(directory), registry)
        except OSError:
            key = None
        if key is not None:
            name = f"entries-{zlib.crc32(key[0].encode()):08x}"
            cached = _from_cache(directory, key, name)
            if cached is not None:
                return cached
    glossary, problems = _load(directory)
    if glossary is None:
        raise GlossaryError(problems)
    if key is not None:
        cache.write(name, key, [_raw(e) for e in glossary])
    return glossary


def _raw(entry: Entry) -> dict[str, Any]:
    """The entry as the plain data of its YAML file (what :func:`_build` reads)."""
    data: dict[str, Any] = {
        "slug": entry.slug,
        "kind": entry.kind,
        "category": entry.category,
        "related": list(entry.related),
        **({"one_way": list(entry.one_way)} if entry.one_way else {}),
        "libraries": [
            {k: v for k, v in (("name", x.name), ("api", x.api), ("url", x.url)) if v is not None}
            for x in entry.libraries
        ],
        "sources": [
            {k: v for k, v in vars(s).items() if v is not None} | {"authors": list(s.authors)}
            for s in entry.sources
        ],
        "lang": {
            code: {k: v for k, v in vars(t).items() if v is not None} | {"aliases": list(t.aliases)}
            for code, t in entry.lang.items()
        },
    }
    if entry.reference:
        data["reference"] = {"module": entry.reference.module, "status": entry.reference.status}
    return data
