"""Export the glossary as JSON, CSV, TBX (v3 and v2) and SKOS JSON-LD.

Formats
-------
* ``json`` - the whole model, one object per entry (what :mod:`glossary.model` holds).
* ``csv`` - one row per entry: ``slug, kind, category``, the term in each language (columns
  named by language code), then ``<lang>_aliases`` (joined with ``"; "``) and
  ``<lang>_definition``, then ``<lang>_note``: the accuracy note that corrects or qualifies
  that definition (empty when it has none), so a definition never travels without it. A cell
  that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab
  or a carriage return) is written with a leading ``'`` (OWASP's rule against CSV injection);
  ``glossary validate`` warns about such terms.
* ``tbx`` - TermBase eXchange v3, ISO 30042:2019, TBX-Basic dialect in the DCA style
  (``<tbx type="TBX-Basic" style="dca">``, namespace ``urn:iso:std:iso:30042:ed-2``). One
  ``conceptEntry`` per entry, one ``langSec`` per language, one ``termSec`` per term and alias.
  The preferred term is ``fullForm``/``preferredTerm-admn-sts``; aliases are ``acronym`` (all
  capitals), ``abbreviation`` (a short form of a longer name) or ``variant``, and
  ``admittedTerm-admn-sts``. A language's accuracy note follows its definition as a ``note``
  of the same ``langSec``.
* ``tbx2`` - the same content in TBX v2 (ISO 30042:2008, ``<martif type="TBX-Basic">``,
  ``termEntry``/``langSet``/``tig``) for tools that read only v2.
* ``skos`` - a SKOS concept scheme as JSON-LD: one ``skos:Concept`` per entry with
  ``skos:prefLabel``/``skos:altLabel``/``skos:definition`` per language, ``skos:related`` and
  ``dct:source``. SKOS: W3C Recommendation, 2009. ``skos:related`` is symmetric, so both
  directions of every two-way link are stated; links an entry marks ``one_way`` are
  ``rdfs:seeAlso`` instead (see :mod:`glossary.links`).

Writing a file goes through :mod:`glossary.safewrite`: a regular file is replaced atomically
(its mode kept), a symlink is followed, a pipe or device is written through and never replaced,
a folder or a missing folder is refused with one line; on any failure (or SIGTERM/SIGINT) the
temporary file is removed and the previous target, if any, is untouched.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from . import __version__
from .model import Entry, Glossary, Source
from .schema import CATEGORIES, EXPORT_FORMATS, LANGS, SCHEMA_VERSION

TBX3_NS = "urn:iso:std:iso:30042:ed-2"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
SKOS = "http://www.w3.org/2004/02/skos/core#"
DCT = "http://purl.org/dc/terms/"
BASE_IRI = "urn:x-diffusion-efficiency-glossary:"
TITLE = "Diffusion-efficiency glossary"
FORMATS = EXPORT_FORMATS


def concept_id(slug: str) -> str:
    """A valid XML ID (NCName) for an entry: slugs may start with a digit, so prefix ``c-``."""
    return f"c-{slug}"


def alias_type(alias: str, term: str) -> str:
    """The TBX ``termType`` of an alias: ``acronym``, ``abbreviation`` or ``variant``."""
    letters = [ch for ch in alias if ch.isalpha()]
    if letters and all(ch.isupper() for ch in letters) and " " not in alias and len(alias) <= 10:
        return "acronym"
    if len(alias) < len(term) and " " not in alias.strip() and len(alias) <= 6:
        return "abbreviation"
    return "variant"


# --- JSON -------------------------------------------------------------------------------------


def _source_dict(s: Source) -> dict[str, Any]:
    return {
        "title": s.title,
        "authors": list(s.authors),
        "authors_truncated": s.authors_truncated,
        "year": s.year,
        "arxiv_year": s.arxiv_year,
        "arxiv": s.arxiv,
        "doi": s.doi,
        "url": s.url,
        "venue": s.venue,
        "link": s.link,
    }


def entry_dict(e: Entry) -> dict[str, Any]:
    """The JSON-ready form of an entry."""
    return {
        "slug": e.slug,
        "kind": e.kind,
        "category": e.category,
        "related": list(e.related),
        "one_way": list(e.one_way),
        "reference": (
            {"module": e.reference.module, "status": e.reference.status} if e.reference else None
        ),
        "libraries": [{"name": x.name, "api": x.api, "url": x.url} for x in e.libraries],
        "sources": [_source_dict(s) for s in e.sources],
        "lang": {
            code: {
                "term": t.term,
                "aliases": list(t.aliases),
                "definition": t.definition,
                "explanation": t.explanation,
                "note": t.note,
            }
            for code, t in ((code, e.lang[code]) for code in LANGS)
        },
    }


def write_json(g: Glossary, out: TextIO) -> None:
    doc = {
        "schema_version": SCHEMA_VERSION,
        "generator": f"glossary {__version__}",
        "languages": list(LANGS),
        "categories": CATEGORIES,
        "entries": [entry_dict(e) for e in g],
    }
    json.dump(doc, out, ensure_ascii=False, indent=2)
    out.write("\n")


# --- CSV --------------------------------------------------------------------------------------

ALIAS_SEPARATOR = "; "


def csv_header() -> list[str]:
    return [
        "slug",
        "kind",
        "category",
        *LANGS,
        *(f"{code}_aliases" for code in LANGS),
        *(f"{code}_definition" for code in LANGS),
        *(f"{code}_note" for code in LANGS),
    ]


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection)."""


def formula_like(text: str) -> bool:
    """Whether a spreadsheet opening the CSV export would read ``text`` as a formula."""
    return text.startswith(FORMULA_STARTS)


def defuse(cell: str) -> str:
    """``cell`` as the CSV export writes it: a formula-like cell gets a leading single quote
    (OWASP's rule), so that a spreadsheet shows it as text instead of running it."""
    return "'" + cell if formula_like(cell) else cell


def formula_names(g: Glossary) -> list[tuple[str, str, str]]:
    """``(slug, field, text)`` of every term and alias that :func:`defuse` changes."""
    found = []
    for e in g:
        for code in LANGS:
            t = e.lang[code]
            names = [("term", t.term), *((f"aliases[{i}]", a) for i, a in enumerate(t.aliases))]
            found += [(e.slug, f"lang.{code}.{f}", text) for f, text in names if formula_like(text)]
    return found


def write_csv(g: Glossary, out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(csv_header())
    for e in g:
        writer.writerow(
            defuse(cell)
            for cell in [
                e.slug,
                e.kind,
                e.category,
                *(e.lang[c].term for c in LANGS),
                *(ALIAS_SEPARATOR.join(e.lang[c].aliases) for c in LANGS),
                *(e.lang[c].definition for c in LANGS),
                *(e.lang[c].note or "" for c in LANGS),
            ]
        )


# --- TBX --------------------------------------------------------------------------------------


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, attrs)
    if text is not None:
        el.text = text
    return el


def _source_text(s: Source) -> str:
    authors = ", ".join(s.authors) + (", et al." if s.authors_truncated else "")
    venue = f", {s.venue}" if s.venue else ""
    link = f". {s.link}" if s.link else ""
    return f"{authors} ({_years(s)}). {s.title}{venue}{link}"


def _years(s: Source) -> str:
    """``2021``, or ``2021; arXiv 2020`` when the preprint came out in another year."""
    if s.arxiv_year is not None and s.arxiv_year != s.year:
        return f"{s.year}; arXiv {s.arxiv_year}"
    return str(s.year)


def _header(root: ET.Element, header_tag: str) -> None:
    header = _sub(root, header_tag)
    desc = _sub(_sub(header, "fileDesc"), "sourceDesc")
    _sub(desc, "p", f"{TITLE} (glossary {__version__}), languages: {', '.join(LANGS)}.")


def _term_groups(e: Entry, code: str) -> list[tuple[str, str, str]]:
    """(term, termType, administrativeStatus) for the term and each alias in ``code``."""
    t = e.lang[code]
    groups = [(t.term, "fullForm", "preferredTerm-admn-sts")]
    groups += [(a, alias_type(a, t.term), "admittedTerm-admn-sts") for a in t.aliases]
    return groups


def _concept_common(el: ET.Element, e: Entry) -> None:
    _sub(el, "descrip", CATEGORIES[e.category]["en"], type="subjectField")
    for slug in e.related:
        _sub(el, "ref", slug, type="crossReference", target=concept_id(slug))
    for s in e.sources:
        _sub(el, "admin", _source_text(s), type="source")


def _definition(sec: ET.Element, e: Entry, code: str) -> None:
    """The definition of a language section, then its accuracy note (TBX-Basic ``note``), if
    any: a tool that imports the definition imports its correction with it."""
    _sub(sec, "descrip", e.lang[code].definition, type="definition")
    note = e.lang[code].note
    if note:
        _sub(sec, "note", note)


def tbx3_tree(g: Glossary) -> ET.ElementTree:
    """The TBX v3 (TBX-Basic, DCA style) document."""
    root = ET.Element(
        "tbx", {"type": "TBX-Basic", "style": "dca", XML_LANG: "en", "xmlns": TBX3_NS}
    )
    _header(root, "tbxHeader")
    body = _sub(_sub(root, "text"), "body")
    for e in g:
        body.append(_tbx3_concept(e))
    return ET.ElementTree(root)


def _tbx3_concept(e: Entry) -> ET.Element:
    concept = ET.Element("conceptEntry", {"id": concept_id(e.slug)})
    _concept_common(concept, e)
    for code in LANGS:
        sec = ET.SubElement(concept, "langSec", {XML_LANG: code})
        _definition(sec, e, code)
        for term, term_type, status in _term_groups(e, code):
            ts = _sub(sec, "termSec")
            _sub(ts, "term", term)
            _sub(ts, "termNote", term_type, type="termType")
            _sub(ts, "termNote", status, type="administrativeStatus")
    return concept


def tbx2_tree(g: Glossary) -> ET.ElementTree:
    """The TBX v2 (``martif``, TBX-Basic) document."""
    root = ET.Element("martif", {"type": "TBX-Basic", XML_LANG: "en"})
    _header(root, "martifHeader")
    body = _sub(_sub(root, "text"), "body")
    for e in g:
        entry = _sub(body, "termEntry", id=concept_id(e.slug))
        _concept_common(entry, e)
        for code in LANGS:
            lang_set = ET.SubElement(entry, "langSet", {XML_LANG: code})
            _definition(lang_set, e, code)
            for term, term_type, status in _term_groups(e, code):
                tig = _sub(lang_set, "tig")
                _sub(tig, "term", term)
                _sub(tig, "termNote", term_type, type="termType")
                _sub(tig, "termNote", status, type="administrativeStatus")
    return ET.ElementTree(root)


def _write_xml(tree: ET.ElementTree, out: TextIO, doctype: str | None = None) -> None:
    ET.indent(tree, space="  ")
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    if doctype:
        out.write(doctype + "\n")
    tree.write(out, encoding="unicode", xml_declaration=False)
    out.write("\n")


def write_tbx(g: Glossary, out: TextIO) -> None:
    _write_xml(tbx3_tree(g), out)


def write_tbx2(g: Glossary, out: TextIO) -> None:
    _write_xml(tbx2_tree(g), out)


# --- SKOS JSON-LD -----------------------------------------------------------------------------


def _labels(values: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"@value": text, "@language": code} for text, code in values]


def skos_document(g: Glossary) -> dict[str, Any]:
    """The glossary as a SKOS concept scheme in JSON-LD."""
    scheme_id = BASE_IRI + "scheme"
    graph: list[dict[str, Any]] = [
        {
            "@id": scheme_id,
            "@type": "skos:ConceptScheme",
            "dct:title": [{"@value": TITLE, "@language": "en"}],
            "skos:hasTopConcept": [{"@id": BASE_IRI + e.slug} for e in g],
        }
    ]
    from .links import symmetric

    related = symmetric(g)
    for e in g:
        concept: dict[str, Any] = {
            "@id": BASE_IRI + e.slug,
            "@type": "skos:Concept",
            "skos:inScheme": {"@id": scheme_id},
            "skos:topConceptOf": {"@id": scheme_id},
            "skos:notation": e.slug,
            "skos:prefLabel": _labels([(e.lang[c].term, c) for c in LANGS]),
            "skos:altLabel": _labels([(a, c) for c in LANGS for a in e.lang[c].aliases]),
            "skos:definition": _labels([(e.lang[c].definition, c) for c in LANGS]),
            "skos:related": [{"@id": BASE_IRI + s} for s in related[e.slug]],
            "dct:subject": _labels([(CATEGORIES[e.category][c], c) for c in LANGS]),
            "dct:source": [{"@id": s.link} if s.link else _source_text(s) for s in e.sources],
        }
        see_also = [s for s in e.one_way if s in g]
        if see_also:  # deliberately one-way links: not skos:related, which is symmetric
            concept["rdfs:seeAlso"] = [{"@id": BASE_IRI + s} for s in see_also]
        notes = [(e.lang[c].note, c) for c in LANGS if e.lang[c].note]
        if notes:
            concept["skos:scopeNote"] = _labels(notes)  # type: ignore[arg-type]
        graph.append(concept)
    context = {"skos": SKOS, "dct": DCT, "rdfs": "http://www.w3.org/2000/01/rdf-schema#"}
    return {"@context": context, "@graph": graph}


def write_skos(g: Glossary, out: TextIO) -> None:
    json.dump(skos_document(g), out, ensure_ascii=False, indent=2)
    out.write("\n")


WRITERS: dict[str, Callable[[Glossary, TextIO], None]] = {
    "json": write_json,
    "csv": write_csv,
    "tbx": write_tbx,
    "tbx2": write_tbx2,
    "skos": write_skos,
}


def export_text(g: Glossary, fmt: str) -> str:
    """The export in format ``fmt`` as a string."""
    buf = io.StringIO()
    WRITERS[fmt](g, buf)
    return buf.getvalue()


def write_atomic(path: Path, write: Callable[[TextIO], None]) -> None:
    """Call ``write`` on a text stream that :mod:`glossary.safewrite` puts in place at ``path``:
    atomically for a regular file (mode kept), written through for a pipe or device, refused
    with one line for a folder or a missing folder; nothing half-written on any failure."""
    from .safewrite import write_with

    def binary(fh: BinaryIO) -> None:
        out = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
        write(out)
        out.flush()
        out.detach()

    write_with(path, binary)


def export_to(g: Glossary, fmt: str, path: Path) -> None:
    """Write the export in format ``fmt`` to ``path`` atomically."""
    write_atomic(path, lambda out: WRITERS[fmt](g, out))
