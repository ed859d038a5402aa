"""The house style (glossary/style/*.yaml) and its check in ``glossary validate``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from glossary_support import REAL, ROOT, copy_valid, edit, problems

from glossary import cli, schema, style
from glossary.loader import validate


@pytest.fixture(autouse=True)
def english_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGUAGE", "en")
    monkeypatch.setattr(cli, "_ui_lang", "en")


@pytest.fixture
def d(tmp_path: Path) -> Path:
    return copy_valid(tmp_path)


def line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def style_lines(directory: Path) -> list[str]:
    return [p for p in problems(directory) if "(style rule " in p]


def test_fixture_with_a_variant_gets_exactly_one_line(d: Path) -> None:
    path = edit(
        d,
        "pruning",
        "      Fixture de prueba.\n",
        "      Fixture de prueba: el estudiante imita\n      al maestro con menos pasos.\n",
    )
    line = line_of(path, "al maestro")
    assert problems(d) == [
        f"{path}:{line}: lang.es.explanation: 'maestro' is a variant to avoid; write "
        "'profesor (modelo profesor)' (style rule profesor) (hint: En la destilación, el glosario "
        "semilla dice «modelo profesor» frente a «modelo estudiante»; «maestro» es una segunda "
        "traducción de «teacher» para el mismo papel.)"
    ]


@pytest.mark.parametrize(
    ("code", "old", "new", "variant", "preferred"),
    [
        (
            "ru",
            "Тестовая запись.",
            "Без переобучения модели.",
            "переобучения",
            "повторное обучение",
        ),
        ("ru", "Тестовая запись.", "Низкий инференс.", "инференс", "вывод (inference)"),
        ("en", "Test fixture.", "We normalise it.", "normalise", "-ize"),
        ("es", "Fixture de prueba.", "Sin guiado por clasificador.", "Sin guiado", "la guía"),
        ("es", "Fixture de prueba.", "Un FID bajo, la FID alta.", "la FID", "el FID"),
    ],
)
def test_variants_in_every_language_and_inflection(
    d: Path, code: str, old: str, new: str, variant: str, preferred: str
) -> None:
    path = edit(d, "pruning", old, new)
    (found,) = style_lines(d)
    assert found.startswith(f"{path}:{line_of(path, new)}: lang.{code}.explanation: '{variant}'")
    assert f"write '{preferred}" in found


def test_every_use_is_its_own_line_with_its_line_number(d: Path) -> None:
    path = edit(
        d,
        "pruning",
        "      Test fixture.\n",
        "      We normalise it,\n      then we optimise it and normalise it again.\n",
    )
    first, second = line_of(path, "We normalise"), line_of(path, "then we optimise")
    found = style_lines(d)
    assert [f.split(": '")[0] for f in found] == [
        f"{path}:{first}: lang.en.explanation",
        f"{path}:{second}: lang.en.explanation",
        f"{path}:{second}: lang.en.explanation",
    ]
    assert all("\n" not in f for f in found)


def test_quotes_and_code_are_not_checked(d: Path) -> None:
    edit(d, "pruning", "Test fixture.", 'See "Batch Normalisation" and `normalise()`.')
    edit(d, "pruning", "Тестовая запись.", "Слово «переобучение» в кавычках.")
    assert style_lines(d) == []


def test_aliases_and_terms_are_checked(d: Path) -> None:
    path = edit(
        d, "pruning", '["pruning", "structured pruning"]', '["pruning", "optimised pruning"]'
    )
    edit(d, "pruning", "term: Network Pruning", "term: Optimised Network Pruning")
    found = style_lines(d)
    assert [f.split(" is a variant")[0] for f in found] == [
        f"{path}:{line_of(path, 'term: Optimised')}: lang.en.term: 'Optimised'",
        f"{path}:{line_of(path, 'optimised pruning')}: lang.en.aliases[1]: 'optimised'",
    ]


def test_only_the_exact_seed_strings_are_exempt(tmp_path: Path, d: Path) -> None:
    # the fixture's Spanish definition of pruning is not the seed text: a variant in it is reported
    old = "Eliminar pesos o canales poco importantes de una red."
    seed = "Eliminar con el maestro pesos o canales poco importantes de una red."
    edit(d, "pruning", old, seed)
    assert len(style_lines(d)) == 1
    # a sheet that records exactly this string as the seed definition of pruning exempts it ...
    sheets = tmp_path / "style"
    sheets.mkdir()
    for lang in schema.LANGS:
        data = yaml.safe_load(style.sheet_path(lang).read_text(encoding="utf-8"))
        if lang == "es":
            data["seed_verbatim"]["strings"] = [
                {"slug": "pruning", "field": "definition", "sha256": style.digest(seed)}
            ]
        (sheets / f"{lang}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")
    assert style.check(_parsed(d), sheets) == []
    # ... and nothing else: the same string one word longer is checked like any other
    edit(d, "pruning", seed, seed + " Más.")
    assert len(style.check(_parsed(d), sheets)) == 1


def test_the_committed_seed_strings_are_verbatim_and_exempt() -> None:
    import hashlib

    from glossary.loader import load_glossary

    g = load_glossary(REAL)
    for lang in ("es", "ru"):
        sheet, _ = style.load_sheet(lang)
        assert sheet is not None and len(sheet.seed) == 30  # 15 terms and 15 definitions
        for slug, field, digest in sheet.seed:
            text = getattr(g[slug].lang[lang], field)
            assert hashlib.sha256(text.encode()).hexdigest() == digest, (lang, slug, field)
    # the seed definition of tpu-deployment says «núcleos de cálculo», which the kernel rule
    # flags anywhere else; it passes validation only because it is the user's seed text
    es, _ = style.load_sheet("es")
    assert es is not None
    text = g["tpu-deployment"].lang["es"].definition
    assert [r.id for _n, r, _v in style.check_text(es, "x", "", [(1, text)])] == ["kernel"]
    assert es.is_seed("tpu-deployment", "definition", text)


def test_allow_lists_a_correct_use(tmp_path: Path, d: Path) -> None:
    sheets = tmp_path / "style"
    sheets.mkdir()
    for lang in schema.LANGS:
        data = yaml.safe_load(style.sheet_path(lang).read_text(encoding="utf-8"))
        if lang == "ru":
            rule = next(r for r in data["rules"] if r["id"] == "pereobuchenie")
            rule["allow"] = [{"slug": "pruning", "field": "explanation", "reason": "переподгонка"}]
        (sheets / f"{lang}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")
    edit(d, "pruning", "Тестовая запись.", "Малые данные ведут к переобучению.")
    from glossary.loader import _load  # the parsed files, checked against the edited sheets

    parsed_problems = style.check(_parsed(d), sheets)
    assert parsed_problems == []
    assert len(style.check(_parsed(d))) == 1
    assert _load(d)[1] == []  # loading for a lookup never applies the style


def _parsed(directory: Path) -> list[object]:
    from glossary.loader import _parse_file, entry_files

    return [p for p in (_parse_file(f)[0] for f in entry_files(directory)) if p is not None]


def test_committed_entries_follow_the_house_style() -> None:
    assert [p for p in map(str, validate(REAL)) if "(style rule " in p] == []


@pytest.mark.parametrize("lang", schema.LANGS)
def test_style_sheets_validate(lang: str) -> None:
    sheet, found = style.load_sheet(lang)
    assert found == [] and sheet is not None
    data = yaml.safe_load(style.sheet_path(lang).read_text(encoding="utf-8"))
    assert data["lang"] == lang and data["rules"]
    for rule in data["rules"]:
        assert rule["preferred"].strip() and rule["reason"].strip() and rule["avoid"], rule["id"]
        assert style._in_language(rule["reason"], lang), rule["id"]


def test_a_broken_sheet_is_reported() -> None:
    data = {
        "lang": "ru",
        "rules": [
            {"id": "x", "preferred": "вывод", "avoid": ["(unclosed"], "reason": "English only."},
            {"id": "x", "preferred": "вывод", "avoid": ["вывод"], "reason": "Своя причина."},
            {"id": "y", "preferred": "a", "avoid": [], "reason": "Причина.", "allow": [{}]},
        ],
    }
    messages = [p.message for p in style.sheet_problems(data, "ru", Path("ru.yaml"))]
    assert messages == [
        "rule 1: bad pattern (unclosed: missing ), unterminated subpattern at position 0",
        "rule 1: the reason is not written in ru",
        "rule 2: id 'x' is used twice",
        "rule 2: pattern вывод matches the preferred term",
        "rule 3: avoid must be a non-empty list of patterns",
        "rule 3: each allow item needs slug, field and reason",
    ]


def test_validate_exits_non_zero_and_speaks_the_ui_language(
    d: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(d, "pruning", "Тестовая запись.", "Без переобучения.")
    assert cli.main(["--ui-lang", "ru", "validate", str(d)]) == 1
    out = capsys.readouterr().out
    assert "«переобучения» — вариант, которого следует избегать; пишите «повторное обучение" in out
    assert out.count("\n") == 1


def test_lookup_does_not_load_the_style_sheets() -> None:
    code = (
        "import sys\nfrom glossary import cli\ncli.main(['lookup', 'DDIM'])\n"
        "print('glossary.style' in sys.modules)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.stdout.strip().splitlines()[-1] == "False"
