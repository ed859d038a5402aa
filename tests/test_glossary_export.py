"""Exports round-trip: parse each format back and find every entry, term, alias and link."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from glossary_support import VALID, datasets, private_cache

from glossary import export
from glossary.loader import load_glossary
from glossary.model import Glossary
from glossary.schema import CATEGORIES, LANGS

BASE = export.BASE_IRI

_cache = pytest.fixture(autouse=True, scope="module")(private_cache)
TBX = "{urn:iso:std:iso:30042:ed-2}"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
NCNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
PARAMS = datasets()


def glossary_of(directory: Path) -> Glossary:
    return load_glossary(directory)


@pytest.mark.parametrize("directory", PARAMS)
def test_json_round_trip(directory: Path) -> None:
    g = glossary_of(directory)
    doc = json.loads(export.export_text(g, "json"))
    assert doc["languages"] == list(LANGS)
    assert [e["slug"] for e in doc["entries"]] == [e.slug for e in g]
    for raw, entry in zip(doc["entries"], g, strict=True):
        assert raw == export.entry_dict(entry)
        for code in LANGS:
            assert raw["lang"][code]["term"] == entry.term(code)
            assert raw["lang"][code]["aliases"] == list(entry.lang[code].aliases)
        assert [s["link"] for s in raw["sources"]] == [s.link for s in entry.sources]


@pytest.mark.parametrize("directory", PARAMS)
def test_csv_round_trip(directory: Path) -> None:
    g = glossary_of(directory)
    rows = list(csv.reader(io.StringIO(export.export_text(g, "csv"))))
    assert rows[0][:6] == ["slug", "kind", "category", "es", "ru", "en"]
    assert rows[0][6:9] == ["es_aliases", "ru_aliases", "en_aliases"]
    records = list(csv.DictReader(io.StringIO(export.export_text(g, "csv"))))
    assert [r["slug"] for r in records] == [e.slug for e in g]
    for r, e in zip(records, g, strict=True):
        assert (r["kind"], r["category"]) == (e.kind, e.category)
        for code in LANGS:
            assert r[code] == e.term(code)
            aliases = r[f"{code}_aliases"]
            assert (aliases.split("; ") if aliases else []) == list(e.lang[code].aliases)
            assert r[f"{code}_definition"] == e.lang[code].definition
            assert r[f"{code}_note"] == (e.lang[code].note or "")


def check_terms(entry_el: ET.Element, e, lang_tag: str, group_tag: str, ns: str) -> None:  # type: ignore[no-untyped-def]
    for code in LANGS:
        secs = [s for s in entry_el.findall(f"{ns}{lang_tag}") if s.get(XML_LANG) == code]
        assert len(secs) == 1, (e.slug, code)
        sec = secs[0]
        definition = sec.find(f"{ns}descrip[@type='definition']")
        assert definition is not None and definition.text == e.lang[code].definition
        # the accuracy note travels with the definition it corrects
        assert [n.text for n in sec.findall(f"{ns}note")] == [
            note for note in [e.lang[code].note] if note
        ]
        groups = sec.findall(f"{ns}{group_tag}")
        terms = [g.findtext(f"{ns}term") for g in groups]
        assert terms == list(e.lang[code].names)
        statuses = [g.findtext(f"{ns}termNote[@type='administrativeStatus']") for g in groups]
        assert statuses[0] == "preferredTerm-admn-sts"
        assert set(statuses[1:]) <= {"admittedTerm-admn-sts"}
        types = [g.findtext(f"{ns}termNote[@type='termType']") for g in groups]
        assert types[0] == "fullForm"
        assert set(types[1:]) <= {"acronym", "abbreviation", "variant"}


@pytest.mark.parametrize("directory", PARAMS)
def test_tbx3_round_trip(directory: Path) -> None:
    g = glossary_of(directory)
    text = export.export_text(g, "tbx")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<tbx ')
    root = ET.fromstring(text)
    assert root.tag == f"{TBX}tbx"
    assert root.get("type") == "TBX-Basic" and root.get("style") == "dca"
    assert root.get(XML_LANG) == "en"
    assert root.find(f"{TBX}tbxHeader/{TBX}fileDesc/{TBX}sourceDesc/{TBX}p") is not None
    concepts = root.findall(f"{TBX}text/{TBX}body/{TBX}conceptEntry")
    ids = [c.get("id") for c in concepts]
    assert ids == [f"c-{e.slug}" for e in g]
    assert all(NCNAME.match(i or "") for i in ids)
    for c, e in zip(concepts, g, strict=True):
        assert c.findtext(f"{TBX}descrip[@type='subjectField']") == CATEGORIES[e.category]["en"]
        targets = [r.get("target") for r in c.findall(f"{TBX}ref[@type='crossReference']")]
        assert targets == [f"c-{s}" for s in e.related]
        assert set(targets) <= set(ids)
        sources = [s.text or "" for s in c.findall(f"{TBX}admin[@type='source']")]
        assert len(sources) == len(e.sources)
        assert all(s.link in text for s, text in zip(e.sources, sources, strict=True) if s.link)
        check_terms(c, e, "langSec", "termSec", TBX)


@pytest.mark.parametrize("directory", PARAMS)
def test_tbx2_round_trip(directory: Path) -> None:
    g = glossary_of(directory)
    root = ET.fromstring(export.export_text(g, "tbx2"))
    assert root.tag == "martif" and root.get("type") == "TBX-Basic"
    assert root.get(XML_LANG) == "en"
    assert root.find("martifHeader/fileDesc/sourceDesc/p") is not None
    entries = root.findall("text/body/termEntry")
    assert [t.get("id") for t in entries] == [f"c-{e.slug}" for e in g]
    for t, e in zip(entries, g, strict=True):
        check_terms(t, e, "langSet", "tig", "")


@pytest.mark.parametrize("directory", PARAMS)
def test_skos_round_trip(directory: Path) -> None:
    g = glossary_of(directory)
    doc = json.loads(export.export_text(g, "skos"))
    assert doc["@context"] == {
        "skos": "http://www.w3.org/2004/02/skos/core#",
        "dct": "http://purl.org/dc/terms/",
        "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    }
    scheme, *concepts = doc["@graph"]
    assert scheme["@type"] == "skos:ConceptScheme"
    ids = {c["@id"] for c in concepts}
    assert len(concepts) == len(g)
    for c, e in zip(concepts, g, strict=True):
        assert c["@type"] == "skos:Concept" and c["skos:inScheme"] == {"@id": scheme["@id"]}
        assert c["skos:prefLabel"] == [{"@value": e.term(lg), "@language": lg} for lg in LANGS]
        alt = {(a["@value"], a["@language"]) for a in c["skos:altLabel"]}
        assert alt == {(a, lg) for lg in LANGS for a in e.lang[lg].aliases}
        assert {d["@language"] for d in c["skos:definition"]} == set(LANGS)
        notes = [(n["@value"], n["@language"]) for n in c.get("skos:scopeNote", [])]
        assert notes == [(e.lang[lg].note, lg) for lg in LANGS if e.lang[lg].note]
        assert {r["@id"] for r in c["skos:related"]} <= ids
        two_way = [r for r in e.related if r not in e.one_way]
        assert {f"{BASE}{r}" for r in two_way} <= {r["@id"] for r in c["skos:related"]}
        assert [r["@id"] for r in c.get("rdfs:seeAlso", [])] == [f"{BASE}{r}" for r in e.one_way]
        assert [s.get("@id") for s in c["dct:source"] if isinstance(s, dict)] == [
            s.link for s in e.sources if s.link
        ]


def test_every_accuracy_note_of_the_project_is_exported_with_its_definition() -> None:
    """The project's technique entries correct the definition they were given in an accuracy
    note: the CSV, TBX and SKOS downloads carry each of those notes, not the definition alone."""
    g = load_glossary()
    noted = [(e, code) for e in g for code in LANGS if e.lang[code].note]
    assert noted  # the project's entries have notes; otherwise this would check nothing
    rows = {r["slug"]: r for r in csv.DictReader(io.StringIO(export.export_text(g, "csv")))}
    tbx = export.export_text(g, "tbx")
    for e, code in noted:
        note = e.lang[code].note
        assert rows[e.slug][f"{code}_note"] == note
        assert f"<note>{escape(note)}</note>" in tbx, (e.slug, code)


@pytest.mark.parametrize(
    ("alias", "term", "kind"),
    [
        ("LCM", "Latent Consistency Model", "acronym"),
        ("MoE", "Mixture of Experts", "abbreviation"),
        ("DDIM", "DDIM Sampler", "acronym"),
        ("structured pruning", "Network Pruning", "variant"),
        ("Diff-Pruning", "Network Pruning", "variant"),
    ],
)
def test_alias_types(alias: str, term: str, kind: str) -> None:
    assert export.alias_type(alias, term) == kind


def test_atomic_write_replaces_only_when_complete(tmp_path: Path) -> None:
    g = glossary_of(VALID)
    target = tmp_path / "g.csv"
    target.write_text("old", encoding="utf-8")

    def failing(out: io.TextIOBase) -> None:
        out.write("partial,")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        export.write_atomic(target, failing)
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["g.csv"]
    export.export_to(g, "csv", target)
    assert target.read_text(encoding="utf-8") == export.export_text(g, "csv")
    assert [p.name for p in tmp_path.iterdir()] == ["g.csv"]


def test_skos_related_is_symmetric_and_one_way_links_are_see_also() -> None:
    """skos:related is a symmetric property: the export states both directions."""
    g = load_glossary(VALID)
    concepts = {c["@id"]: c for c in export.skos_document(g)["@graph"][1:]}
    pairs = {(a, r["@id"]) for a, c in concepts.items() for r in c.get("skos:related", [])}
    assert pairs and all((b, a) in pairs for a, b in pairs)
    see_also = {(a, r["@id"]) for a, c in concepts.items() for r in c.get("rdfs:seeAlso", [])}
    assert see_also == {(f"{BASE}{e.slug}", f"{BASE}{t}") for e in g for t in e.one_way}
    assert not see_also & pairs


FORMULAS = {
    "term: Poda de Red": "term: \"=cmd|' /C calc'!A0\"",
    '["Pruning", "poda estructurada", "DP"]': '["+1", "poda estructurada", "@SUM(A1)", "-2"]',
}


def formula_entries(tmp_path: Path) -> Path:
    """The valid fixtures with a term and aliases that a spreadsheet reads as formulas."""
    from glossary_support import copy_valid, edit

    d = copy_valid(tmp_path)
    for old, new in FORMULAS.items():
        edit(d, "pruning", old, new)
    return d


def spreadsheet_cells(data: bytes) -> dict[str, dict[str, str]]:
    """The CSV as a spreadsheet reads it: rows of cells keyed by column, by slug."""
    return {r["slug"]: r for r in csv.DictReader(io.StringIO(data.decode("utf-8")))}


def test_csv_exports_defuse_formula_cells(tmp_path: Path) -> None:
    from glossary import cli
    from glossary.site import downloads

    d = formula_entries(tmp_path)
    target = tmp_path / "g.csv"
    assert cli.main(["--entries", str(d), "export", "--format", "csv", "-o", str(target)]) == 0
    site = downloads.files(load_glossary(d))["glossary.csv"]
    for data in (target.read_bytes(), site):
        rows = spreadsheet_cells(data)
        assert rows["pruning"]["es"] == "'=cmd|' /C calc'!A0"
        assert rows["pruning"]["es_aliases"] == "'+1; poda estructurada; @SUM(A1); -2"
        assert rows["ddim"]["en"] == "DDIM Sampler"
        cells = [c for r in rows.values() for c in r.values()]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]


@pytest.mark.parametrize("first", ["=", "+", "-", "@", "\t", "\r"])
def test_defuse_prefixes_every_formula_start(first: str) -> None:
    assert export.defuse(first + "1+1") == "'" + first + "1+1"
    assert export.defuse("a" + first) == "a" + first
    assert export.defuse("") == ""


def test_validate_warns_about_formula_terms_and_aliases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from glossary import cli

    d = formula_entries(tmp_path)
    assert cli.main(["--ui-lang", "en", "validate", str(d)]) == 0
    err = capsys.readouterr().err.splitlines()
    tail = "which a spreadsheet reads as a formula; the CSV export writes it with a leading '"
    path = d / "pruning.yaml"
    assert err == [
        f"warning: {path}: lang.es.term: '=cmd|' /C calc'!A0' starts with '=', {tail}",
        f"warning: {path}: lang.es.aliases[0]: '+1' starts with '+', {tail}",
        f"warning: {path}: lang.es.aliases[2]: '@SUM(A1)' starts with '@', {tail}",
        f"warning: {path}: lang.es.aliases[3]: '-2' starts with '-', {tail}",
    ]
