"""The ``glossary`` command line: every subcommand and error path, in-process and as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from glossary_support import ROOT, VALID, copy_valid, edit, private_cache, use_registry

from glossary import cli
from glossary.loader import load_glossary

_cache = pytest.fixture(autouse=True, scope="module")(private_cache)
E = ["--entries", str(VALID)]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(autouse=True)
def english(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)


# --- lookup -----------------------------------------------------------------------------------


def test_lookup_exact_alias_shows_all_languages(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *E, "lookup", "poda estructurada")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "pruning  (technique, Compression)"
    assert lines[1] == "Matched 'poda estructurada' in the alias (score 100)"
    assert "  Spanish: Poda de Red" in lines
    assert "  Russian: Обрезка сети" in lines
    assert "  English: Network Pruning" in lines
    assert "Definition (Spanish):" in lines
    assert "  Eliminar pesos o canales poco importantes de una red." in lines
    assert "  Solo la poda estructurada reduce la latencia." in lines
    assert "Implementation: python -m reference.pruning" in lines


def test_lookup_to_language_and_planned(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *E, "lookup", "кэширование признаков", "--to", "en")
    assert code == 0
    assert out.splitlines()[0] == "feature-caching  (technique, Sampling)"
    assert "Definition (English):" in out
    assert "  Reusing features computed at earlier steps." in out
    assert "Implementation planned (reference.feature_caching)" in out
    assert "Accuracy note" not in out


def test_lookup_typo_accents_and_case(capsys: pytest.CaptureFixture[str]) -> None:
    for query in ("CACHE DE CARACTERISTICAS", "cache de caracteristcas", "Feature Cachng"):
        code, out, _ = run(capsys, *E, "lookup", query)
        assert code == 0, query
        assert out.startswith("feature-caching  "), query


def test_lookup_lang_prefers_that_language(capsys: pytest.CaptureFixture[str]) -> None:
    # "DDIM" is an alias in all three languages; --lang picks which definition to show.
    code, out, _ = run(capsys, *E, "lookup", "ddim", "--lang", "ru")
    assert code == 0
    assert "Definition (Russian):" in out
    assert "Детерминированный сэмплер диффузионных моделей." in out


def test_lookup_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *E, "lookup", "ёмкость", "--json", "--limit", "2")
    assert code == 0
    doc = json.loads(out)
    assert doc["query"] == "ёмкость"
    match = doc["match"]
    assert match["slug"] == "model-capacity" and match["score"] == 100.0
    assert match["lang"] == "ru" and match["matched_lang"] == "ru"
    assert match["terms"] == {
        "es": "Capacidad del modelo",
        "ru": "Ёмкость модели",
        "en": "Model Capacity",
    }
    assert match["implementation"] is None and match["note"] is None
    assert len(doc["candidates"]) <= 2
    assert all(c["score"] <= 100 for c in doc["candidates"])


def test_lookup_json_implementation(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, *E, "lookup", "pruning", "--json", "--to", "en")
    match = json.loads(out)["match"]
    assert match["implementation"] == {
        "module": "reference.pruning",
        "status": "implemented",
        "command": "python -m reference.pruning",
    }
    assert match["note"] == "Only structured pruning reduces latency."


def test_lookup_says_where_it_matched(capsys: pytest.CaptureFixture[str]) -> None:
    """A library's API (tier 2) and a phrase of a definition (tier 3), in text and JSON."""
    code, out, _ = run(capsys, *E, "lookup", "EMAModel")
    assert code == 0 and out.startswith("ema  ")
    assert out.splitlines()[1] == "Matched 'EMAModel' in the library (score 100)"
    code, out, _ = run(capsys, *E, "--ui-lang", "es", "lookup", "EMAModel")
    assert code == 0 and "(campo: biblioteca; puntuación 100)" in out.splitlines()[1]
    code, out, _ = run(capsys, *E, "lookup", "unimportant channels", "--json")
    match = json.loads(out)["match"]
    assert code == 0 and match["slug"] == "pruning"
    assert match["matched_field"] == "definition" and match["tier"] == 3
    assert match["matched_lang"] == "en" and "unimportant weights or channels" in match["matched"]
    code, out, _ = run(capsys, *E, "--ui-lang", "ru", "lookup", "unimportant channels")
    assert code == 0 and "(поле: определение; оценка" in out.splitlines()[1]


def test_lookup_no_match_exits_1_with_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *E, "lookup", "zebra")
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == ["No entry matches 'zebra'.", "Nearest entries:"]
    assert 1 <= len(lines[2:]) <= 3
    code, out, _ = run(capsys, *E, "lookup", "qqqqqqqqqq")
    assert code == 1
    assert "Nothing similar either" in out
    code, out, _ = run(capsys, *E, "lookup", "qqqqqqqqqq", "--json")
    assert code == 1 and json.loads(out)["match"] is None


def test_unknown_language_code_is_one_clean_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *E, "lookup", "poda", "--lang", "de")
    assert code == 2 and out == ""
    assert err == (
        "glossary lookup: error: argument --lang: unknown language code 'de'; "
        "valid codes: es, ru, en\n"
    )


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "\x00\x01\x02",
        "!!!???",
        "-",
        "a" * 10_000_000,
        "\udcff\udcfe",
        "\ud800abc",
        "Обрезка ñandú 网络 \u200b\u202e",
        "\n\t\r",
    ],
    ids=[
        "empty",
        "spaces",
        "control",
        "punctuation",
        "dash",
        "10MB",
        "surrogate-escape",
        "lone-surrogate",
        "mixed-scripts",
        "whitespace",
    ],
)
def test_lookup_never_crashes(capsys: pytest.CaptureFixture[str], query: str) -> None:
    code, out, err = run(capsys, *E, "lookup", "--", query)
    assert code in (0, 1, 2)
    assert "Traceback" not in out + err
    assert len(err.splitlines()) <= 1
    if code == 2:
        assert err == "glossary: empty query: give a term with letters or digits\n"


def test_bad_limit(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *E, "lookup", "poda", "--limit", "0")
    assert code == 2
    assert err == (
        "glossary lookup: error: argument --limit: expected a whole number from 1 to 100, got '0'\n"
    )


def test_ui_language_from_option_and_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, out, _ = run(capsys, "--ui-lang", "ru", *E, "lookup", "pruning", "--lang", "en")
    assert "Определение (Английский):" in out
    assert "  Испанский:  Poda de Red" in out
    monkeypatch.setenv("LANG", "es_ES.UTF-8")
    _, out, _ = run(capsys, *E, "lookup", "pruning", "--lang", "en")
    assert "Definición (Inglés):" in out
    code, _, err = run(capsys, *E, "lookup", "x", "--to", "xx")
    assert code == 2
    assert err.endswith("código de idioma desconocido 'xx'; códigos válidos: es, ru, en\n")


def test_invalid_entries_report_problems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = copy_valid(tmp_path)
    edit(d, "ddim", "kind: concept", "kind: idea")
    code, out, err = run(capsys, "--entries", str(d), "lookup", "ddim")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"{d / 'ddim.yaml'}:2: kind: 'idea' is not allowed (hint: one of: technique, concept)",
        "glossary: the entries are invalid; run `glossary validate`",
    ]


# --- show, list -------------------------------------------------------------------------------


def test_show_by_slug_and_by_term(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *E, "show", "pruning", "--lang", "en")
    assert code == 0
    assert out.splitlines()[0] == "Network Pruning  [pruning; technique, Compression]"
    assert "Also called: pruning, structured pruning" in out
    assert "Related: Feature Caching (feature-caching), Model Capacity (model-capacity)" in out
    assert "Library: torch, torch.nn.utils.prune" in out
    assert (
        "Source: Structural Pruning for Diffusion Models (2023) https://arxiv.org/abs/2305.10924"
    ) in out
    code, out, _ = run(capsys, *E, "show", "Media movil exponencial", "--lang", "es")
    assert code == 0 and out.startswith("Media Móvil Exponencial  [ema; concept, Training]")


def test_show_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *E, "show", "qqqqqqqq")
    assert code == 1 and out == ""
    assert err == "glossary: no entry matches 'qqqqqqqq'; try: glossary lookup 'qqqqqqqq'\n"


def test_list_uses_language_collation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *E, "list", "--lang", "es")
    assert code == 0
    terms = [line.split("  (")[0] for line in out.splitlines()]
    # Code-point order would put "Época" after "Poda de Red"; Spanish collation puts it with E.
    assert terms == [
        "Caché de Características",
        "Capacidad del modelo",
        "Época",
        "Media Móvil Exponencial",
        "Muestreador DDIM",
        "Poda de Red",
    ]
    assert err == "6 entries\n"


def test_list_filters_and_plural_messages(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--ui-lang", "ru", *E, "list", "--lang", "ru", "--kind", "technique"
    )
    assert code == 0
    assert out.splitlines() == [
        "Кэширование характеристик  (feature-caching, техника)",
        "Обрезка сети  (pruning, техника)",
    ]
    assert err == "2 записи\n"
    code, out, err = run(capsys, *E, "list", "--category", "training", "--lang", "en")
    assert [line.split("  (")[0] for line in out.splitlines()] == [
        "Epoch",
        "Exponential Moving Average",
    ]
    code, _, err = run(capsys, *E, "list", "--category", "magic")
    assert code == 2
    assert err.startswith("glossary list: error: argument --category: unknown category 'magic'")


# --- validate, export -------------------------------------------------------------------------


def test_validate_ok_and_broken(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "validate", str(VALID)) == (0, "6 entries OK\n", "")
    assert run(capsys, "--ui-lang", "es", "validate", str(VALID))[1] == "6 entradas correctas\n"
    d = copy_valid(tmp_path)
    edit(d, "ddim", "kind: concept", "kind: idea")
    edit(d, "ema", "related: [epoch]", "related: [epoc]")
    code, out, err = run(capsys, "validate", str(d))
    assert code == 1
    assert out.splitlines() == [
        f"{d / 'ddim.yaml'}:2: kind: 'idea' is not allowed (hint: one of: technique, concept)",
        f"{d / 'ema.yaml'}:4: related[0]: related slug 'epoc' does not exist "
        "(hint: did you mean 'epoch'?)",
        f"{d / 'epoch.yaml'}:4: related[0]: one-way link: 'ema' does not list 'epoch' in "
        "related (hint: add epoch to the related list of ema.yaml, or list ema under one_way if "
        "the link is deliberately one-way)",
    ]
    assert err == "3 problems found\n"


@pytest.mark.parametrize("fmt", ["json", "csv", "tbx", "tbx2", "skos"])
def test_export_to_stdout_and_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    code, out, _ = run(capsys, *E, "export", "--format", fmt)
    assert code == 0 and "Обрезка сети" in out
    target = tmp_path / f"out.{fmt}"
    code, printed, err = run(capsys, *E, "export", "--format", fmt, "-o", str(target))
    assert code == 0 and printed == "" and err == f"wrote {target}\n"
    assert target.read_text(encoding="utf-8") == out


def test_export_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, *E, "export", "--format", "xls")
    assert code == 2 and "unknown format 'xls'; valid: json, csv, tbx, tbx2, skos" in err
    code, _, err = run(
        capsys, *E, "export", "--format", "csv", "-o", str(tmp_path / "no" / "x.csv")
    )
    assert code == 1
    assert err == (
        f"glossary: cannot write {tmp_path / 'no' / 'x.csv'}: folder "
        f"{tmp_path / 'no'} does not exist\n"
    )


def test_failed_export_leaves_no_partial_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from glossary import export

    target = tmp_path / "out.tbx"
    target.write_text("previous", encoding="utf-8")
    calls = []

    def failing(entry: object) -> object:
        calls.append(entry)
        if len(calls) == 3:
            raise RuntimeError("serialization failed")
        return original(entry)

    original = export._tbx3_concept
    monkeypatch.setattr(export, "_tbx3_concept", failing)
    code, _, err = run(capsys, *E, "export", "--format", "tbx", "-o", str(target))
    assert code == 1
    assert err == "glossary: error: RuntimeError: serialization failed\n"
    assert target.read_text(encoding="utf-8") == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.tbx"]


# --- run, bench -------------------------------------------------------------------------------


def test_run_planned_concept_and_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, *E, "run", "feature-caching") == (
        1,
        "",
        "glossary: feature-caching: implementation planned "
        "(reference.feature_caching); the entry's status is not implemented yet\n",
    )
    assert run(capsys, *E, "run", "ddim")[2] == (
        "glossary: ddim is a concept; only techniques have an implementation\n"
    )
    assert run(capsys, *E, "run", "qqqqqqq")[0] == 1


def test_run_executes_the_module_with_arguments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "glossary_fixture_tech.py").write_text(
        "import sys\nprint('ran', sys.argv[1:])\nif '--fail' in sys.argv:\n"
        "    raise ValueError('bad input')\nraise SystemExit(3 if '--three' in sys.argv else 0)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    d = copy_valid(tmp_path)
    use_registry(monkeypatch, tmp_path, {"pruning": "glossary_fixture_tech"})
    edit(d, "pruning", "module: reference.pruning", "module: glossary_fixture_tech")
    argv0 = list(sys.argv)
    code, out, _ = run(capsys, "--entries", str(d), "run", "Poda de Red", "--steps", "2")
    assert (code, out) == (0, "ran ['--steps', '2']\n")
    assert sys.argv == argv0
    assert run(capsys, "--entries", str(d), "run", "pruning", "--three")[0] == 3
    code, _, err = run(capsys, "--entries", str(d), "run", "pruning", "--fail")
    assert code == 1
    assert err == (
        "glossary: glossary_fixture_tech failed: ValueError: bad input (run "
        "`python -m glossary_fixture_tech` to see the traceback)\n"
    )


def _side_effect_module(folder: Path) -> Path:
    """A module that leaves a file behind when it runs."""
    mark = folder / "ran.txt"
    (folder / "glossary_fixture_tech.py").write_text(
        f"open({str(mark)!r}, 'w').close()\n", encoding="utf-8"
    )
    return mark


def test_run_refuses_an_unregistered_module(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = _side_effect_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    d = copy_valid(tmp_path)
    path = edit(d, "pruning", "module: reference.pruning", "module: glossary_fixture_tech")
    code, out, err = run(capsys, "--entries", str(d), "run", "pruning")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == (
        f"{path}:6: reference.module: 'glossary_fixture_tech' is not a registered technique "
        "package (reference/registry.py) (hint: set module: reference.pruning)"
    )
    assert not mark.exists()


def test_run_checks_the_registry_itself(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A glossary validated under another registry (e.g. a stale object) is still refused.
    mark = _side_effect_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    d = copy_valid(tmp_path)
    edit(d, "pruning", "module: reference.pruning", "module: glossary_fixture_tech")
    with monkeypatch.context() as m:
        use_registry(m, tmp_path, {"pruning": "glossary_fixture_tech"})
        g = load_glossary(d)
    monkeypatch.setattr(cli, "load", lambda args: g)
    assert run(capsys, "--entries", str(d), "run", "pruning") == (
        1,
        "",
        "glossary: pruning: glossary_fixture_tech is not the package registered for it in "
        "reference/registry.py; glossary run only runs registered techniques\n",
    )
    assert not mark.exists()


def test_bench_delegates_to_the_harness(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import reference.harness.runner as runner

    seen = []
    monkeypatch.setattr(runner, "check", lambda slugs: seen.append(slugs) or 0)
    assert run(capsys, "bench", "pruning", "--quick", "--check")[0] == 0
    assert seen == [["pruning"]]


def test_bench_without_harness(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "reference.harness.runner", None)
    code, _, err = run(capsys, "bench")
    assert code == 2
    assert err.startswith("glossary: the benchmark harness is not available (")


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["stacking", "--quik"], "glossary bench: error: unrecognized arguments: --quik"),
        (
            ["nope", "stacking"],
            "glossary: unknown technique 'nope'; known: accelerate-method, async-pipeline,",
        ),
        (["pruning", "--threads", "0"], "glossary bench: error: argument --threads: expected"),
        (["--threads", "100000"], "glossary bench: error: argument --threads: expected"),
        (["--out", ""], "glossary bench: error: argument --out: the output path is empty"),
        (["--threads"], "glossary bench: error: argument --threads: expected one argument"),
    ],
)
def test_bench_refuses_bad_arguments_before_any_work(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    error: str,
) -> None:
    import reference.harness.runner as runner
    import reference.stacking.cli as stacking_cli

    started = []
    monkeypatch.setattr(runner, "run_techniques", lambda *a, **k: started.append(a) or 0)
    monkeypatch.setattr(runner, "check", lambda slugs: started.append(slugs) or 0)
    monkeypatch.setattr(stacking_cli, "main", lambda argv: started.append(argv) or 0)
    code, out, err = run(capsys, "bench", *argv)
    assert (code, out, started) == (2, "", [])
    assert err.startswith(error) and err.count("\n") == 1


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys)
    assert code == 2 and err.startswith("glossary: error: ")
    code, _, err = run(capsys, *E, "list", "--bogus")
    assert code == 2 and err == "glossary: error: unrecognized arguments: --bogus\n"
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "lookup" in out


# --- as a process -----------------------------------------------------------------------------


def glossary_process(*argv: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, LANG="C.UTF-8", PYTHONIOENCODING="utf-8")
    env.pop("LANGUAGE", None)
    env.pop("LC_ALL", None)
    return subprocess.run(
        [sys.executable, "-m", "glossary.cli", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_exit_codes_as_a_process() -> None:
    assert glossary_process(*E, "lookup", "poda").returncode == 0
    assert glossary_process(*E, "lookup", "qqqqqqqqqq").returncode == 1
    bad = glossary_process(*E, "lookup", "poda", "--lang", "xx")
    assert bad.returncode == 2
    assert bad.stderr.decode().count("\n") == 1


def test_undecodable_argv_bytes_do_not_crash() -> None:
    result = glossary_process(*E, "lookup", b"poda\xff\xfe\x01", "--json")
    assert result.returncode in (0, 1)
    assert b"Traceback" not in result.stderr
    assert json.loads(result.stdout)["query"] == "poda\ufffd\ufffd\x01"


def test_lookup_imports_no_heavy_modules(tmp_path: Path) -> None:
    code = (
        "import sys, io, contextlib\n"
        "from glossary.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['--entries', {str(VALID)!r}, 'lookup', 'poda'])\n"
        f"    main(['--entries', {str(VALID)!r}, 'lookup', 'poda'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'numpy', 'diffusers', 'yaml', 'icu')))\n"
    )
    env = dict(os.environ, GLOSSARY_CACHE_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # The first call parsed YAML (and filled the cache), so yaml may be loaded; never the others.
    loaded = set(json.loads(result.stdout.replace("'", '"')))
    assert not loaded & {"torch", "numpy", "diffusers", "icu"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # Second process: served from the cache, so not even PyYAML is imported.
    assert json.loads(result.stdout.replace("'", '"')) == []
