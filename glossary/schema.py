"""The one schema of a glossary entry: keys, types, allowed values and limits.

Every consumer reads this module instead of restating the rules: the loader checks entries
against it (:mod:`glossary.loader`), the command line validates with it, and the site documents
it with :func:`schema_as_markdown` or :func:`json_schema`.

An entry is a YAML file ``glossary/entries/<slug>.yaml`` holding one mapping. Its keys are listed
in :data:`TOP_FIELDS`; nested blocks use :data:`REFERENCE_FIELDS`, :data:`LIBRARY_FIELDS`,
:data:`SOURCE_FIELDS` and, once per language in :data:`LANGS`, :data:`LANG_FIELDS`. No other key
is allowed, and the YAML must be plain: no anchors, aliases or tags.

Pitfalls the rules exist for: an unquoted arXiv id such as ``2305.10924`` is read by YAML as a
float (so ids must be strings); a DOI copied with its ``https://doi.org/`` prefix is a URL, not
a DOI; ``note`` must exist in every language or in none, so that no reader misses a correction;
``related`` links are symmetric (``skos:related`` is), so each listed entry must list this one
back unless the slug is also in ``one_way``, the deliberately one-way links (to hubs such as
``flops`` or ``u-net``; :mod:`glossary.links`).

One year policy for sources: ``year`` is the publication year, that of the venue where the work
appeared (DDIM: ICLR 2021), and ``arxiv_year`` keeps the year of the preprint (2020). The loader
checks that ``year`` equals the year a ``venue`` names and that ``arxiv_year`` matches the id;
when ``arxiv_year`` is absent it is read from the id (:func:`arxiv_id_year`), so every export
carries both. An author list that stops early sets ``authors_truncated: true``; "et al." is
never written as an author.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 1

LANGS: tuple[str, ...] = ("es", "ru", "en")
"""Languages every entry is written in, in display order."""

KINDS: tuple[str, ...] = ("technique", "concept")
STATUSES: tuple[str, ...] = ("planned", "implemented")
EXPORT_FORMATS: tuple[str, ...] = ("json", "csv", "tbx", "tbx2", "skos")

CATEGORIES: dict[str, dict[str, str]] = {
    "sampling": {"es": "Muestreo", "ru": "Сэмплирование", "en": "Sampling"},
    "distillation": {"es": "Destilación", "ru": "Дистилляция", "en": "Distillation"},
    "compression": {"es": "Compresión", "ru": "Сжатие", "en": "Compression"},
    "architecture": {"es": "Arquitectura", "ru": "Архитектура", "en": "Architecture"},
    "training": {"es": "Entrenamiento", "ru": "Обучение", "en": "Training"},
    "systems": {"es": "Sistemas", "ru": "Системы", "en": "Systems"},
    "foundations": {"es": "Fundamentos", "ru": "Основы", "en": "Foundations"},
    "evaluation": {"es": "Evaluación", "ru": "Оценка", "en": "Evaluation"},
}
"""Category slug -> its label in each language."""

SLUG_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
ARXIV_NEW_RE = re.compile(r"\d{2}(?:0[1-9]|1[0-2])\.\d{4,5}(?:v[1-9]\d*)?")
"""New-style arXiv ids (2007 on): ``YYMM.NNNNN``, a real month, an optional version."""
ARXIV_OLD_RE = re.compile(
    r"[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/\d{2}(?:0[1-9]|1[0-2])\d{3}(?:v[1-9]\d*)?"
)
"""Old-style arXiv ids (1991-2007): ``archive[.SC]/YYMMNNN``."""
DOI_RE = re.compile(r"10\.\d{4,9}/[-._;()/:A-Za-z0-9<>\[\]]+")
"""Crossref's recommended DOI pattern (no spaces, no resolver prefix)."""
URL_RE = re.compile(r"https?://[^\s\x00-\x1f\x7f-\x9f/$.?#][^\s\x00-\x1f\x7f-\x9f]*")
"""An http(s) URL: no whitespace or control characters (RFC 3986 allows neither)."""
MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
"""Patterns are matched in full (``re.fullmatch``): no trailing newline or other extra text."""
FORBIDDEN_IN_TERMS = (";", "\n", "\r", "\t")
"""Characters a term or alias may not contain (``;`` separates aliases in the CSV export)."""

MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 16
"""Deepest nesting of mappings and lists an entry may have (real entries use 4)."""
MAX_TERM_CHARS = 200
MIN_YEAR = 1900
MAX_YEAR = 2100


@dataclass(frozen=True)
class Field:
    """One key of a mapping in an entry.

    ``type`` is one of ``str`` (non-empty text), ``int``, ``bool``, ``list[str]`` (each item
    non-empty text), ``mapping`` (described by another field table) or ``list[mapping]``.
    """

    name: str
    type: str
    required: bool
    description: str
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    invalid: str = "'{value}' does not have the required form"
    """The problem line when ``pattern`` does not match in full (``{value}`` is the text)."""
    hint: str | None = None

    def matches(self, value: str) -> bool:
        """Whether ``value`` matches ``pattern`` in full (always, without a pattern)."""
        return self.pattern is None or _compiled(self.pattern).fullmatch(value) is not None


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


TOP_FIELDS: tuple[Field, ...] = (
    Field(
        "slug",
        "str",
        True,
        "Lowercase ASCII letters, digits and hyphens; equals the file name.",
        pattern=SLUG_RE.pattern,
        invalid="'{value}' is not a valid slug",
        hint="lowercase ascii letters, digits and single hyphens",
    ),
    Field("kind", "str", True, "Whether the entry is a technique or a concept.", choices=KINDS),
    Field(
        "category",
        "str",
        True,
        "The category the entry is listed under.",
        choices=tuple(CATEGORIES),
    ),
    Field(
        "related",
        "list[str]",
        True,
        "Slugs of other existing entries (may be empty). Links are symmetric: each listed "
        "entry lists this one back, unless the slug is also in one_way.",
        pattern=SLUG_RE.pattern,
        invalid="'{value}' is not a valid slug",
        hint="lowercase ascii letters, digits and single hyphens",
    ),
    Field(
        "one_way",
        "list[str]",
        False,
        "Slugs of related that are deliberately one-way (the target does not link back), e.g. "
        "hubs such as flops or u-net; exported as rdfs:seeAlso instead of skos:related.",
        pattern=SLUG_RE.pattern,
        invalid="'{value}' is not a valid slug",
        hint="lowercase ascii letters, digits and single hyphens",
    ),
    Field(
        "reference",
        "mapping",
        False,
        "Techniques only (required there): where the reference implementation lives.",
    ),
    Field(
        "libraries",
        "list[mapping]",
        True,
        "Maintained libraries that implement it in production (may be empty).",
    ),
    Field("sources", "list[mapping]", True, "Primary sources; at least one for techniques."),
    Field("lang", "mapping", True, "One block per language: " + ", ".join(LANGS) + "."),
)

REFERENCE_FIELDS: tuple[Field, ...] = (
    Field(
        "module",
        "str",
        True,
        "Import path of the implementation: the package reference/registry.py registers for "
        "this slug, e.g. reference.pruning.",
        pattern=MODULE_RE.pattern,
        invalid="'{value}' is not a dotted module path",
        hint="e.g. reference.pruning",
    ),
    Field(
        "status",
        "str",
        True,
        "implemented requires the registered module to exist.",
        choices=STATUSES,
    ),
)

LIBRARY_FIELDS: tuple[Field, ...] = (
    Field("name", "str", True, "Distribution or project name, e.g. torch."),
    Field("api", "str", True, "The API that does it, e.g. torch.nn.utils.prune."),
    Field(
        "url",
        "str",
        False,
        "Documentation link (http or https).",
        pattern=URL_RE.pattern,
        invalid="'{value}' is not an http(s) URL",
    ),
)

SOURCE_FIELDS: tuple[Field, ...] = (
    Field("title", "str", True, "Title of the paper, book or page."),
    Field(
        "authors",
        "list[str]",
        True,
        'Authors in publication order (at least one), real names only: never "et al.".',
    ),
    Field(
        "authors_truncated",
        "bool",
        False,
        "true when `authors` lists only the first authors of a longer list; exports then add "
        '"et al." to the citation instead of an author of that name.',
    ),
    Field(
        "year",
        "int",
        True,
        "Publication year: the year of the venue (conference, journal, book) where it appeared; "
        f"for a preprint or a page, the year it was posted ({MIN_YEAR}-{MAX_YEAR}). When `venue` "
        "names a year, `year` equals it.",
    ),
    Field(
        "arxiv_year",
        "int",
        False,
        "Year the arXiv id was first posted (2010.02502 -> 2020); it must match the id. Optional: "
        "when absent it is read from the id; write it where it differs from `year`.",
    ),
    Field(
        "arxiv",
        "str",
        False,
        "arXiv id, new style 2305.10924 or old style cs/0112017 (quote it).",
        pattern=f"(?:{ARXIV_NEW_RE.pattern})|(?:{ARXIV_OLD_RE.pattern})",
        invalid="malformed arXiv id '{value}'",
        hint="new style 2305.10924 (a real month, optionally v2) or old style cs/0112017; no URL "
        "prefix",
    ),
    Field(
        "doi",
        "str",
        False,
        "DOI without a resolver prefix, e.g. 10.1109/CVPR.2016.90.",
        pattern=DOI_RE.pattern,
        invalid="malformed DOI '{value}'",
        hint="10.<registrant>/<suffix>, without https://doi.org/",
    ),
    Field(
        "url",
        "str",
        False,
        "Link for sources without an arXiv id or DOI.",
        pattern=URL_RE.pattern,
        invalid="'{value}' is not an http(s) URL",
    ),
    Field("venue", "str", False, "Where it appeared, e.g. NeurIPS 2023."),
)
SOURCE_LINK_KEYS: tuple[str, ...] = ("arxiv", "doi", "url")
"""A source needs at least one of these, so that readers can find it."""

LANG_FIELDS: tuple[Field, ...] = (
    Field("term", "str", True, "The preferred term in this language (one line)."),
    Field("aliases", "list[str]", True, "Other names, abbreviations, spellings (may be empty)."),
    Field("definition", "str", True, "One-paragraph definition."),
    Field("explanation", "str", True, "Two to four paragraphs of markdown."),
    Field(
        "note",
        "str",
        False,
        "Accuracy note where the definition is imprecise; in all languages or in none.",
    ),
)

FIELD_TABLES: dict[str, tuple[Field, ...]] = {
    "entry": TOP_FIELDS,
    "reference": REFERENCE_FIELDS,
    "libraries[]": LIBRARY_FIELDS,
    "sources[]": SOURCE_FIELDS,
    "lang.<code>": LANG_FIELDS,
}


def is_arxiv_id(value: str) -> bool:
    """Whether ``value`` is a new-style or old-style arXiv identifier."""
    return bool(ARXIV_NEW_RE.fullmatch(value) or ARXIV_OLD_RE.fullmatch(value))


def arxiv_id_year(value: str) -> int | None:
    """The year an arXiv id was posted, read from the id itself, or None if it is malformed.

    New-style ids start with ``YYMM`` (``2010.02502`` -> 2020, new style began in 2007); old-style
    ids carry ``YYMM`` after the archive (``cs/0112017`` -> 2001, ``hep-th/9901001`` -> 1999).
    """
    if ARXIV_NEW_RE.fullmatch(value):
        return 2000 + int(value[:2])
    if ARXIV_OLD_RE.fullmatch(value):
        yy = int(value.split("/")[1][:2])
        return 1900 + yy if yy >= 91 else 2000 + yy
    return None


VENUE_YEAR_RE = re.compile(r"(?<!\d)(19|20)\d\d(?!\d)")
"""A four-digit year inside a venue such as ``ICLR 2021``; ``year`` must equal it."""

ET_AL_RE = re.compile(r"^\s*(et\.?\s*al\.?|and others|y otros|и др\.?|и другие)\s*$", re.IGNORECASE)
"""An \"author\" that only says the list goes on; use ``authors_truncated: true`` instead."""


def schema_as_markdown(lang: str = "en") -> str:
    """Describe the schema as markdown tables (field descriptions are in English).

    ``lang`` picks the column order of the category table's first language; it must be one of
    :data:`LANGS`.
    """
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}")
    lines = [f"Schema version {SCHEMA_VERSION}. Languages: {', '.join(LANGS)}.", ""]
    for table, fields in FIELD_TABLES.items():
        lines += [
            f"### `{table}`",
            "",
            "| key | type | required | description |",
            "|---|---|---|---|",
        ]
        for f in fields:
            desc = f.description
            if f.choices:
                desc += " One of: " + ", ".join(f"`{c}`" for c in f.choices) + "."
            required = "yes" if f.required else "no"
            lines.append(f"| `{f.name}` | {f.type} | {required} | {desc} |")
        lines.append("")
    order = (lang, *(lg for lg in LANGS if lg != lang))
    lines += [
        "### Categories",
        "",
        "| slug | " + " | ".join(order) + " |",
        "|---" * (len(order) + 1) + "|",
    ]
    for slug, labels in CATEGORIES.items():
        lines.append(f"| `{slug}` | " + " | ".join(labels[lg] for lg in order) + " |")
    lines += [
        "",
        f"Files are UTF-8, at most {MAX_FILE_BYTES // 1024} KiB, plain YAML "
        "(no anchors, aliases or tags).",
    ]
    return "\n".join(lines) + "\n"


def _field_json(f: Field) -> dict[str, Any]:
    base: dict[str, Any]
    if f.type == "str":
        base = {"type": "string", "minLength": 1}
        if f.choices:
            base["enum"] = list(f.choices)
        if f.pattern:
            base["pattern"] = f.pattern
    elif f.type == "bool":
        base = {"type": "boolean"}
    elif f.type == "int":
        base = {"type": "integer"}
        if f.name in ("year", "arxiv_year"):
            base |= {"minimum": MIN_YEAR, "maximum": MAX_YEAR}
    elif f.type == "list[str]":
        item: dict[str, Any] = {"type": "string", "minLength": 1}
        if f.pattern:
            item["pattern"] = f.pattern
        base = {"type": "array", "items": item}
    elif f.type == "list[mapping]":
        base = {"type": "array", "items": {"$ref": f"#/$defs/{f.name}"}}
    else:
        base = {"$ref": f"#/$defs/{f.name}"}
    base["description"] = f.description
    return base


def _object(fields: tuple[Field, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [f.name for f in fields if f.required],
        "properties": {f.name: _field_json(f) for f in fields},
    }


def json_schema() -> dict[str, Any]:
    """The schema as a JSON Schema (draft 2020-12) document.

    Cross-entry rules (unique slugs and terms, existing related slugs and modules, ``note`` in
    all languages or none, technique/concept differences) are not expressible here; the loader
    enforces them.
    """
    lang_obj = _object(LANG_FIELDS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Diffusion-efficiency glossary entry",
        **_object(TOP_FIELDS),
        "$defs": {
            "reference": _object(REFERENCE_FIELDS),
            "libraries": _object(LIBRARY_FIELDS),
            "sources": _object(SOURCE_FIELDS),
            "lang": {
                "type": "object",
                "additionalProperties": False,
                "required": list(LANGS),
                "properties": {code: lang_obj for code in LANGS},
            },
        },
    }
