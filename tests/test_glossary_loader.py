"""Every validation rule of glossary.loader, each on a broken copy of the valid fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from glossary_support import copy_valid, edit, problems, use_registry

from glossary import schema
from glossary.loader import (
    REGISTRY_ENV,
    GlossaryError,
    Problem,
    load_glossary,
    module_exists,
    registered,
    technique_registry,
    validate,
)
from glossary.model import Glossary

PROBE = Path(__file__).resolve().parent / "fixtures" / "entries_extra" / "registry-probe.yaml"


@pytest.fixture
def d(tmp_path: Path) -> Path:
    return copy_valid(tmp_path)


def only(directory: Path) -> str:
    found = problems(directory)
    assert len(found) == 1, found
    return found[0]


def test_valid_fixtures_load(d: Path) -> None:
    g = load_glossary(d)
    assert isinstance(g, Glossary)
    assert [e.slug for e in g] == sorted(g.entries)
    assert {e.slug for e in g.techniques()} == {"pruning", "feature-caching"}
    assert len(g.concepts()) == 4
    pruning = g.get("pruning")
    assert pruning is not None and pruning.reference is not None
    assert pruning.reference.implemented and pruning.reference.command == (
        "python -m reference.pruning"
    )
    assert pruning.lang["es"].note == "Solo la poda estructurada reduce la latencia."
    assert pruning.sources[0].link == "https://arxiv.org/abs/2305.10924"
    assert g["ema"].sources[0].link == "https://doi.org/10.1137/0330046"
    assert g["model-capacity"].sources[0].link == "https://www.deeplearningbook.org/"
    assert g.get("nope") is None
    assert g["ddim"].reference is None
    assert validate(d) == []


def test_problem_formats_as_one_line() -> None:
    p = Problem("a.yaml", 3, "lang.es.term", "empty text", "write it")
    assert str(p) == "a.yaml:3: lang.es.term: empty text (hint: write it)"
    assert str(Problem("a.yaml", 1, "file", "bad")) == "a.yaml:1: file: bad"


def test_invalid_yaml_reports_its_line(d: Path) -> None:
    path = edit(d, "ddim", "    api: diffusers.DDIMScheduler", "    api: [unclosed")
    assert only(d) == (
        f"{path}:8: yaml: invalid YAML: expected ',' or ']', but got ':' "
        "(hint: check indentation, colons and quotes around this line)"
    )


def test_unknown_key_suggests_the_close_one(d: Path) -> None:
    path = edit(d, "ddim", "category: sampling\n", "category: sampling\ncatgory: x\n")
    assert only(d) == f"{path}:4: catgory: unknown key 'catgory' (hint: did you mean 'category'?)"


def test_unknown_nested_key(d: Path) -> None:
    path = edit(d, "ddim", "    year: 2020\n", "    year: 2020\n    pages: 12\n")
    assert only(d).startswith(f"{path}:12: sources[0].pages: unknown key 'pages' (hint: ")


def test_missing_key(d: Path) -> None:
    path = edit(d, "ddim", "category: sampling\n", "")
    assert only(d) == (
        f"{path}:1: entry: missing key 'category' (hint: The category the entry is listed under.)"
    )


def test_missing_language(d: Path) -> None:
    text = (d / "ddim.yaml").read_text(encoding="utf-8")
    start, end = text.index("  ru:\n"), text.index("  en:\n")
    (d / "ddim.yaml").write_text(text[:start] + text[end:], encoding="utf-8")
    assert only(d) == (
        f"{d / 'ddim.yaml'}:13: lang: missing language 'ru' "
        "(hint: every entry is written in es, ru, en)"
    )


def test_empty_text(d: Path) -> None:
    path = edit(
        d,
        "ddim",
        "    definition: A deterministic sampler for diffusion models.",
        '    definition: "  "',
    )
    assert only(d) == (
        f"{path}:27: lang.en.definition: empty text "
        "(hint: write the text or remove the key if it is optional)"
    )


def test_empty_alias(d: Path) -> None:
    path = edit(d, "ddim", 'aliases: ["DDIM", "denoising', 'aliases: ["", "denoising')
    assert only(d).startswith(f"{path}:26: lang.en.aliases[0]: empty text")


def test_slug_must_match_file_name_and_be_unique(d: Path) -> None:
    (d / "ddim2.yaml").write_bytes((d / "ddim.yaml").read_bytes())
    assert problems(d) == [
        f"{d / 'ddim2.yaml'}:1: slug: slug 'ddim' does not match the file name 'ddim2.yaml' "
        "(hint: rename the file to ddim.yaml or set slug: ddim2)",
        f"{d / 'ddim2.yaml'}:1: slug: duplicate slug 'ddim', also in {d / 'ddim.yaml'} "
        "(hint: every entry needs its own slug)",
    ]


def test_invalid_slug(d: Path) -> None:
    path = edit(d, "ddim", "slug: ddim", "slug: DDIM_x")
    assert only(d) == (
        f"{path}:1: slug: 'DDIM_x' is not a valid slug "
        "(hint: lowercase ascii letters, digits and single hyphens)"
    )


def test_alias_colliding_after_normalization(d: Path) -> None:
    # "EPOCA" is "Época" (epoch, es) once case-folded and stripped of accents.
    edit(d, "ema", 'aliases: ["EMA", "promedio de pesos"]', 'aliases: ["EMA", "EPOCA"]')
    assert only(d) == (
        f"{d / 'epoch.yaml'}:9: lang.es.term: 'Época' collides with 'EPOCA' of entry 'ema' in "
        "language es (hint: names must identify one entry per language; drop or qualify one of "
        "them)"
    )


def test_alias_colliding_with_yo_folded_to_ye(d: Path) -> None:
    path = edit(
        d,
        "ddim",
        'aliases: ["DDIM"]\n    definition: Детерм',
        'aliases: ["DDIM", "ЕМКОСТЬ"]\n    definition: Детерм',
    )
    assert only(d) == (
        f"{d / 'model-capacity.yaml'}:20: lang.ru.aliases[0]: 'ёмкость' collides with "
        "'ЕМКОСТЬ' of entry 'ddim' in language ru (hint: names must identify one entry per "
        "language; drop or qualify one of them)"
    )
    assert path.exists()


def test_same_name_in_different_languages_is_fine(d: Path) -> None:
    edit(d, "ema", 'aliases: ["EMA", "weight averaging"]', 'aliases: ["EMA", "Época"]')
    assert problems(d) == []


def test_alias_repeating_the_term(d: Path) -> None:
    path = edit(d, "ddim", 'aliases: ["DDIM", "denoising', 'aliases: ["ddim sampler", "denoising')
    assert only(d) == (
        f"{path}:26: lang.en.aliases[0]: 'ddim sampler' repeats 'DDIM Sampler' of the same "
        "entry (hint: remove the duplicate alias)"
    )


def test_alias_with_semicolon(d: Path) -> None:
    path = edit(d, "ddim", 'aliases: ["DDIM", "denoising', 'aliases: ["DDIM; x", "denoising')
    assert only(d) == (
        f"{path}:26: lang.en.aliases[0]: 'DDIM; x' contains ';' "
        "(hint: a term or alias is one line without ';')"
    )


def test_related_slug_must_exist(d: Path) -> None:
    path = edit(d, "ddim", "related: []", "related: [ddpm, ema, emma]\none_way: [ema]")
    assert problems(d) == [
        f"{path}:4: related[0]: related slug 'ddpm' does not exist (hint: did you mean 'ddim'?)",
        f"{path}:4: related[2]: related slug 'emma' does not exist (hint: did you mean 'ema'?)",
    ]


def test_related_to_itself(d: Path) -> None:
    path = edit(d, "ddim", "related: []", "related:\n  - ema\n  - ddim\none_way: [ema]")
    assert only(d) == f"{path}:6: related[1]: an entry cannot be related to itself"


def test_one_way_related_link_is_flagged(d: Path) -> None:
    path = edit(d, "ddim", "related: []", "related: [ema]")
    assert problems(d) == [
        f"{path}:4: related[0]: one-way link: 'ema' does not list 'ddim' in related (hint: add "
        "ddim to the related list of ema.yaml, or list ema under one_way if the link is "
        "deliberately one-way)"
    ]
    edit(d, "ddim", "related: [ema]", "related: [ema]\none_way: [ema]")
    assert problems(d) == []


def test_pointless_one_way_marks_are_flagged(d: Path) -> None:
    path = edit(d, "ema", "related: [epoch]", "related: [epoch]\none_way: [epoch, ddim]")
    assert problems(d) == [
        f"{path}:5: one_way[0]: 'epoch' is marked one-way but links back to 'ema' (hint: remove "
        "it from one_way (the link is symmetric))",
        f"{path}:5: one_way[1]: 'ddim' is marked one-way but is not in related (hint: one_way "
        "lists slugs of related that are not linked back; add it to related or remove it here)",
    ]


def with_probe(d: Path) -> Path:
    """``d`` plus a technique entry whose slug the project's registry does not list."""
    shutil.copy2(PROBE, d / PROBE.name)
    return d / PROBE.name


def test_implemented_module_must_be_registered(d: Path) -> None:
    path = edit(d, "pruning", "module: reference.pruning", "module: os")
    assert only(d) == (
        f"{path}:6: reference.module: 'os' is not a registered technique package "
        "(reference/registry.py) (hint: set module: reference.pruning)"
    )


def test_implemented_module_of_an_unregistered_slug_is_refused(d: Path) -> None:
    path = with_probe(d)
    edit(d, "registry-probe", "status: planned", "status: implemented")
    assert only(d) == (
        f"{path}:8: reference.module: 'registry_probe_module' is not a registered technique "
        "package (reference/registry.py) (hint: register it or set status: planned)"
    )


def test_registered_module_must_exist(d: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_registry(monkeypatch, d.parent, {"pruning": "reference.not_there"})
    path = edit(d, "pruning", "module: reference.pruning", "module: reference.not_there")
    assert only(d) == (
        f"{path}:6: reference.module: module 'reference.not_there' does not exist but status is "
        "implemented (hint: write the module or set status: planned)"
    )


def test_module_must_be_the_entrys_own_package(d: Path) -> None:
    path = edit(d, "pruning", "module: reference.pruning", "module: reference.feature_caching")
    assert only(d) == (
        f"{path}:6: reference.module: 'reference.feature_caching' is the registered package of "
        "'feature-caching', not of 'pruning' (hint: set module: reference.pruning)"
    )


def test_registered_slug_must_name_its_package_even_when_planned(d: Path) -> None:
    path = edit(d, "feature-caching", "module: reference.feature_caching", "module: reference.x")
    assert only(d) == (
        f"{path}:6: reference.module: technique 'feature-caching' is registered with the "
        "package 'reference.feature_caching' (reference/registry.py) "
        "(hint: set module: reference.feature_caching)"
    )


def test_planned_module_may_be_missing(d: Path) -> None:
    with_probe(d)
    assert not module_exists("registry_probe_module")
    assert problems(d) == []


def test_a_fixture_registry_makes_a_module_runnable(
    d: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_registry(monkeypatch, d.parent, {"registry-probe": "glossary.loader"})
    with_probe(d)
    edit(d, "registry-probe", "registry_probe_module", "glossary.loader")
    edit(d, "registry-probe", "status: planned", "status: implemented")
    assert problems(d) == []
    ref = load_glossary(d)["registry-probe"].reference
    assert ref is not None and ref.command == "python -m glossary.loader"


def test_the_project_registry_is_read_without_heavy_imports() -> None:
    code = (
        "import sys\n"
        "from glossary.loader import technique_registry\n"
        "registry = technique_registry()\n"
        "assert registry['pruning'] == 'reference.pruning', registry\n"
        "print(sorted(m for m in ('torch', 'numpy', 'diffusers') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != REGISTRY_ENV}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert (run.returncode, run.stdout) == (0, "[]\n"), run.stderr


def test_registry_file_adds_and_replaces_slugs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_registry(monkeypatch, tmp_path, {"pruning": "fixture_pruning", "x-probe": "x_probe"})
    registry = technique_registry()
    assert registry["pruning"] == "fixture_pruning" and registry["x-probe"] == "x_probe"
    assert registry["feature-caching"] == "reference.feature_caching"
    assert registered("x-probe", "x_probe") and not registered("pruning", "reference.pruning")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON: "),
        ("[1, 2]", "expected a JSON object, got a list"),
        ('{"Not A Slug": "m"}', "'Not A Slug' is not a slug"),
        ('{"x-probe": "os path"}', "x-probe: 'os path' is not a dotted module path"),
        ('{"x-probe": 3}', "x-probe: a number is not a dotted module path"),
        ('{"x-probe": "reference.pruning"}', "package 'reference.pruning' is registered twice"),
    ],
)
def test_a_broken_registry_file_is_one_problem_naming_it(
    d: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    path = d.parent / "registry.json"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv(REGISTRY_ENV, str(path))
    found = problems(d)
    assert len(found) == 1 and "\n" not in found[0], found
    assert found[0].startswith(f"{path}:1: registry: {message}")
    with pytest.raises(GlossaryError, match="registry: "):
        load_glossary(d)


def test_the_cache_is_keyed_by_the_registry(d: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_glossary(d)
    use_registry(monkeypatch, d.parent, {"pruning": "reference.harness"})
    with pytest.raises(
        GlossaryError, match=r"'reference\.pruning' is not a registered technique package"
    ):
        load_glossary(d)


def test_module_exists_checks_packages() -> None:
    assert module_exists("reference.harness")
    assert module_exists("glossary.loader")
    assert not module_exists("reference.nope.deeper")
    assert not module_exists("no_such_package_xyz")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"arXiv:2010.02502"', "malformed arXiv id 'arXiv:2010.02502'"),
        ('"2010.025"', "malformed arXiv id '2010.025'"),
        ('"https://arxiv.org/abs/2010.02502"', "malformed arXiv id"),
        ("2010.02502", "expected text, got a number (hint: quote it)"),
    ],
)
def test_malformed_arxiv_id(d: Path, value: str, message: str) -> None:
    path = edit(d, "ddim", 'arxiv: "2010.02502"', f"arxiv: {value}")
    assert only(d).startswith(f"{path}:12: sources[0].arxiv: {message}")


@pytest.mark.parametrize("value", ["2010.02502v3", "cs/0112017", "math.GT/0309136v2", "1706.03762"])
def test_valid_arxiv_ids(d: Path, value: str) -> None:
    edit(d, "ddim", 'arxiv: "2010.02502"', f'arxiv: "{value}"')
    assert problems(d) == []


def test_malformed_doi(d: Path) -> None:
    path = edit(d, "ema", 'doi: "10.1137/0330046"', 'doi: "https://doi.org/10.1137/0330046"')
    assert only(d) == (
        f"{path}:12: sources[0].doi: malformed DOI 'https://doi.org/10.1137/0330046' "
        "(hint: 10.<registrant>/<suffix>, without https://doi.org/)"
    )


def test_source_needs_a_link(d: Path) -> None:
    path = edit(d, "ema", '    doi: "10.1137/0330046"\n', "")
    assert only(d) == (
        f"{path}:9: sources[0]: a source needs an arxiv id, a doi or a url "
        "(hint: so that readers can find it)"
    )


def test_year_must_be_an_integer_in_range(d: Path) -> None:
    path = edit(d, "ddim", "year: 2020", 'year: "2020"')
    assert only(d) == f"{path}:11: sources[0].year: expected an integer, got text"
    edit(d, "ddim", 'year: "2020"', "year: 20")
    assert only(d) == f"{path}:11: sources[0].year: year 20 is out of range (hint: 1900-2100)"


def test_file_not_utf8(d: Path) -> None:
    path = d / "ddim.yaml"
    raw = path.read_bytes().replace(b"category: sampling", b"category: sampl\xe9ng")
    path.write_bytes(raw)
    offset = raw.index(b"\xe9")
    assert only(d) == (
        f"{path}:3: file: not valid UTF-8 (byte 0xe9 at offset {offset}) "
        "(hint: save the file as UTF-8)"
    )


def test_a_control_character_is_one_problem_at_its_line(d: Path) -> None:
    path = edit(d, "ddim", "category: sampling", "category: samp\x07ling")
    offset = path.read_text(encoding="utf-8").index("\x07")
    assert only(d) == (
        f"{path}:3: file: contains the control character U+0007 (offset {offset}) "
        "(hint: remove it; entries are plain UTF-8 text)"
    )


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("related: []", "related: &rel []", 4, "YAML anchor &rel is not allowed"),
        ("libraries:\n", "x: &a 1\nlibraries:\n", 5, "YAML anchor &a is not allowed"),
        ("year: 2020", "year: !!int 2020", 11, "YAML tag tag:yaml.org,2002:int is not allowed"),
        ("year: 2020", "year: !custom 2020", 11, "YAML tag !custom is not allowed"),
        (
            "kind: concept",
            "kind: !!python/name:os.system concept",
            2,
            "YAML tag tag:yaml.org,2002:python/name:os.system is not allowed",
        ),
    ],
)
def test_anchors_and_tags_are_refused(d: Path, old: str, new: str, line: int, message: str) -> None:
    path = edit(d, "ddim", old, new)
    assert only(d).startswith(f"{path}:{line}: yaml: {message} (hint: ")


def test_aliases_are_refused(d: Path) -> None:
    path = edit(d, "ddim", "related: []", "related: &rel [ema]\nother: *rel")
    # The anchor is refused first; without it, the alias alone is invalid YAML.
    assert only(d).startswith(f"{path}:4: yaml: YAML anchor &rel is not allowed")
    edit(d, "ddim", "related: &rel [ema]\nother: *rel", "related: [ema]\nother: *rel")
    assert only(d).startswith(f"{path}:5: yaml: ")


def test_alias_event_is_refused_directly() -> None:
    from glossary.plainyaml import Refused, parse_yaml

    with pytest.raises(Refused, match=r"alias \*a"):
        parse_yaml("a: &a 1\nb: *a\n".replace("&a ", "") + "c: *a\n")


def test_duplicate_keys(d: Path) -> None:
    path = edit(d, "ddim", "kind: concept\n", "kind: concept\nkind: technique\n")
    assert problems(d)[0] == (
        f"{path}:3: kind: key 'kind' appears twice "
        "(hint: keep one; YAML would silently use the last)"
    )


def test_file_over_the_size_limit(d: Path) -> None:
    path = edit(
        d,
        "ddim",
        "    explanation: Test fixture.",
        "    explanation: " + "x" * schema.MAX_FILE_BYTES,
    )
    size = path.stat().st_size
    assert only(d) == (
        f"{path}:1: file: file is {size} bytes, over the limit of 262144 bytes "
        "(hint: split the explanation or shorten it; entries are meant to be short)"
    )


def test_note_in_some_languages_only(d: Path) -> None:
    path = edit(
        d, "ddim", "    definition: Muestreador", "    note: Una nota.\n    definition: Muestreador"
    )
    assert only(d) == (
        f"{path}:17: lang.es.note: note present in es but missing in ru, en "
        "(hint: an accuracy note must be written in every language or in none)"
    )


def test_technique_needs_a_source(d: Path) -> None:
    text = (d / "feature-caching.yaml").read_text(encoding="utf-8")
    start, end = text.index("  - title:"), text.index("lang:")
    (d / "feature-caching.yaml").write_text(
        text[:start].replace("sources:\n", "sources: []\n") + text[end:], encoding="utf-8"
    )
    assert only(d) == (
        f"{d / 'feature-caching.yaml'}:9: sources: a technique needs at least one source "
        "(hint: cite the paper that introduced it)"
    )


def test_technique_needs_a_reference_block(d: Path) -> None:
    path = edit(
        d,
        "feature-caching",
        "reference:\n  module: reference.feature_caching\n  status: planned\n",
        "",
    )
    assert only(d) == (
        f"{path}:1: entry: missing key 'reference' "
        "(hint: techniques need a reference block (module and status))"
    )


def test_concept_must_not_have_a_reference_block(d: Path) -> None:
    path = edit(
        d,
        "ddim",
        "related: []\n",
        "related: []\nreference:\n  module: reference.harness\n  status: planned\n",
    )
    assert only(d) == (
        f"{path}:5: reference: concepts have no reference implementation "
        "(hint: remove the reference block or make the entry a technique)"
    )


def test_bad_choices_and_types(d: Path) -> None:
    edit(d, "ddim", "kind: concept", "kind: idea")
    edit(d, "ddim", "category: sampling", "category: [sampling]")
    edit(d, "pruning", "status: implemented", "status: done")
    found = problems(d)
    assert found == [
        f"{d / 'ddim.yaml'}:2: kind: 'idea' is not allowed (hint: one of: technique, concept)",
        f"{d / 'ddim.yaml'}:3: category: expected text, got a list",
        f"{d / 'pruning.yaml'}:7: reference.status: 'done' is not allowed "
        "(hint: one of: planned, implemented)",
    ]


def test_every_problem_is_reported_at_once(d: Path) -> None:
    edit(d, "ddim", "kind: concept", "kind: idea")
    edit(d, "ema", 'doi: "10.1137/0330046"', 'doi: "11.1/x"')
    (d / "broken.yaml").write_text("slug: [\n", encoding="utf-8")
    found = problems(d)
    assert len(found) == 3
    with pytest.raises(GlossaryError) as info:
        load_glossary(d)
    assert [str(p) for p in info.value.problems] == found
    assert str(info.value).splitlines() == found


def test_yml_extension_and_non_mapping(d: Path) -> None:
    (d / "x.yml").write_text("slug: x\n", encoding="utf-8")
    (d / "list.yaml").write_text("- a\n- b\n", encoding="utf-8")
    found = problems(d)
    assert f"{d / 'x.yml'}:1: file: entry files end in .yaml (hint: rename it to x.yaml)" in found
    assert (
        f"{d / 'list.yaml'}:1: entry: expected a mapping, got a list (hint: write `key: value` "
        "lines indented under this key)" in found
    )


def test_empty_file_and_missing_directory(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("", encoding="utf-8")
    assert problems(tmp_path)[0].startswith(
        f"{tmp_path / 'empty.yaml'}:1: entry: expected a mapping, got nothing (null)"
    )
    assert problems(tmp_path / "nope") == [
        f"{tmp_path / 'nope'}:1: directory: not a directory "
        "(hint: pass the folder that holds the entry files)"
    ]


def test_schema_exports() -> None:
    md = schema.schema_as_markdown("ru")
    assert "| `arxiv` | str | no |" in md
    assert "Сжатие" in md
    js = schema.json_schema()
    assert js["required"] == ["slug", "kind", "category", "related", "libraries", "sources", "lang"]
    assert js["$defs"]["lang"]["required"] == list(schema.LANGS)
    assert js["properties"]["kind"]["enum"] == list(schema.KINDS)
    with pytest.raises(ValueError, match="unknown language"):
        schema.schema_as_markdown("de")
