"""Term management: the style sheets over the message catalogs, inflected and kept variants, the
concept of a rule, and the consistency report of ``glossary terms``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from glossary_support import REAL, copy_valid, edit, problems

from glossary import cli, loader, style, terms
from glossary.loader import _parse_file, entry_files


@pytest.fixture(autouse=True)
def english_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGUAGE", "en")
    monkeypatch.setattr(cli, "_ui_lang", "en")


def _po(path: Path, lang: str, messages: dict[str, str]) -> Path:
    body = "".join(f'\nmsgid "{k}"\nmsgstr "{v}"\n' for k, v in messages.items())
    head = f'msgid ""\nmsgstr ""\n"Language: {lang}\\n"\n'
    head += '"Content-Type: text/plain; charset=UTF-8\\n"\n'
    path.write_text(head + body, encoding="utf-8")
    return path


def test_a_variant_in_a_catalog_is_one_line_naming_file_message_and_preferred_term(
    tmp_path: Path,
) -> None:
    es = _po(tmp_path / "es.po", "es", {"cli.run": "ejecutar el benchmark", "ok": "sin variante"})
    ru = _po(tmp_path / "ru.po", "ru", {"title": "Структурный прунингом"})
    found = [str(p) for p in terms.catalog_problems({"es": [("x", es)], "ru": [("y", ru)]})]
    assert len(found) == 2 and all("\n" not in f for f in found)
    assert found[0].startswith(f"{es}:6: msgstr \"cli.run\": 'benchmark' is a variant to avoid")
    assert "write 'prueba de rendimiento" in found[0]
    assert found[1].startswith(f"{ru}:6: msgstr \"title\": 'прунингом' is a variant to avoid")
    assert "write 'Обрезка сети" in found[1]


def test_a_catalog_kept_under_allow_is_not_a_problem_but_is_reported(tmp_path: Path) -> None:
    po = _po(tmp_path / "low.po", "es", {"title": "SVD consciente de las activaciones"})
    # the project's sheets keep no catalog under allow: the variant is a problem
    (found,) = terms.catalog_problems({"es": [("low-rank-inference", po)]})
    assert "'consciente de' is a variant to avoid" in str(found)
    sheet, _ = style.load_sheet("es")
    assert sheet is not None
    kept = tuple(
        replace(r, allow=r.allow | {("low-rank-inference", "msgstr")})
        if r.id == "que-tiene-en-cuenta"
        else r
        for r in sheet.rules
    )
    (use,) = terms.catalog_uses(replace(sheet, rules=kept), [("low-rank-inference", po)])
    assert (use.rule.id, use.variant, use.status) == (
        "que-tiene-en-cuenta",
        "consciente de",
        "allowed",
    )


def test_inflected_forms_in_prose_are_caught(tmp_path: Path) -> None:
    d = copy_valid(tmp_path)
    path = edit(d, "pruning", "Тестовая запись.", "После прунинга и с коэффициентом наведения.")
    found = [p for p in problems(d) if "(style rule " in p]
    assert [f.split(" is a variant")[0].split(": ", 1)[1] for f in found] == [
        "lang.ru.explanation: 'прунинга'",
        "lang.ru.explanation: 'коэффициентом наведения'",
    ]
    assert all(f.startswith(f"{path}:") for f in found)


def test_an_alias_is_checked_unless_the_sheet_keeps_it(tmp_path: Path) -> None:
    d = copy_valid(tmp_path)
    # pruning's "прунинг" alias is kept on purpose (allow: pruning aliases); ddim's is not
    edit(
        d,
        "ddim",
        'Сэмплер DDIM\n    aliases: ["DDIM"]',
        'Сэмплер DDIM\n    aliases: ["DDIM", "прунинг DDIM"]',
    )
    found = [p for p in problems(d) if "(style rule " in p]
    assert (
        len(found) == 1 and "ddim.yaml" in found[0] and "lang.ru.aliases[1]: 'прунинг'" in found[0]
    )


def test_a_concept_must_name_the_entry_whose_term_is_preferred() -> None:
    sheets, _ = style.sheets()
    parsed = [p for p in (_parse_file(f)[0] for f in entry_files(REAL)) if p is not None]
    assert style.concept_problems(parsed, sheets) == []
    ru = next(s for s in sheets if s.lang == "ru")
    rule = next(r for r in ru.rules if r.id == "obrezka")
    wrong = style.Rule("x", "Прунинг сети", rule.avoid, rule.reason, frozenset(), "pruning")
    missing = style.Rule("y", "Что-то", rule.avoid, rule.reason, frozenset(), "no-such-entry")
    sheet = style.Sheet("ru", ru.path, (wrong, missing), frozenset())
    messages = [p.message for p in style.concept_problems(parsed, (sheet,))]
    assert messages == [
        "rule x: the preferred term must be the term of 'pruning', 'Обрезка сети'",
        "rule y: concept 'no-such-entry' is not an entry",
    ]


def test_the_report_lists_each_concept_with_its_variants_counts_and_places() -> None:
    parsed, found = loader.parse_folder()
    concepts, more = terms.report("ru", parsed)
    assert more == []
    assert found == []
    by_rule = {c.rule.id: c for c in concepts}
    pruning = by_rule["obrezka"]
    assert pruning.preferred == "Обрезка сети"  # the entry's term, not the rule's gloss
    variants = dict(pruning.variants())
    assert ("pruning.aliases", "allowed", 2) in terms.places(variants["прунинг"])
    assert all(u.status != "flagged" for c in concepts for u in c.uses)  # validate passes


def test_glossary_terms_prints_one_block_per_concept_and_fails_on_a_flagged_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--ui-lang", "es", "terms", "--lang", "es"]) == 0
    out = capsys.readouterr().out.splitlines()
    heading = "prueba de rendimiento (la prueba de rendimiento de referencia)"
    assert f"{heading}  (regla de estilo prueba-de-rendimiento)" in out
    assert any(
        line.strip().startswith(
            "núcleos de cálculo  1: tpu-deployment.definition ×1 [texto semilla"
        )
        for line in out
    )
    assert "ninguna variante en uso" in "\n".join(out)
    assert out[-1].endswith("0 por corregir")
    d = copy_valid(tmp_path)
    edit(d, "pruning", "Fixture de prueba.", "Un benchmark y otro benchmark.")
    assert cli.main(["--entries", str(d), "terms", "--lang", "es"]) == 1
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if line.startswith("    benchmark  ")]
    assert line.split(": ", 1)[1].startswith("pruning.explanation ×2")
    assert lines[-1].endswith("2 to fix")


def test_glossary_terms_on_a_folder_that_is_not_one_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--entries", str(tmp_path / "missing"), "terms", "--lang", "ru"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    hint = "(hint: pass the folder that holds the entry files)"
    assert captured.err == f"{tmp_path / 'missing'}:1: directory: not a directory {hint}\n"
