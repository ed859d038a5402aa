"""Result files (schema 2): validation, three-state aims, the anomaly flag, language-neutral text,
provenance of every covered file and weight, and the staleness check on a tampered copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from glossary.resulttext import ResultText, fill, format_number, missing_messages
from reference.harness import results as R
from reference.harness.provenance import REPO_ROOT, covered_files, file_digests, rel
from reference.harness.schema import aim_state, validate_result
from reference.registry import TECHNIQUES, get

SLUG = "feature-caching"


def measurement(speedup: float = 1.5, limit: float = 1.7) -> R.Measurement:
    rows = [
        R.Row("base", {"method": "ddim", "steps": 50}, "baseline", {"speedup": 1.0}),
        R.Row(
            "dc3",
            {"method": "deepcache", "interval": 3, "branch": 1, "steps": 50},
            "technique",
            {"speedup": speedup},
            intervals={"speedup": (speedup - 0.1, speedup + 0.1)},
        ),
    ]
    return R.Measurement(
        settings={"steps": 50, "scheduler": "ddim"},
        metrics=R.metrics("speedup"),
        rows=rows,
        headline=R.Headline("dc3", speedup=speedup, speedup_limit=limit, limit_kind="bound"),
        aims=[
            R.aim(
                "speedup", speedup, 1.6, ">=", interval=(speedup - 0.1, speedup + 0.1), interval_n=3
            )
        ],
        notes=[R.note("fdd-at-n", n=256, floor=5.4)],
        figures=[],
    )


def result(**kwargs: Any) -> R.BenchmarkResult:
    technique = get(SLUG)
    prov = {
        "commit": "0" * 40,
        "dirty": False,
        "files": file_digests(covered_files(technique)),
        "weights": {},
        "data": {"dataset": "digits", "split": "fixed", "sha256": "a" * 64},
        "versions": {"python": "3.11", "torch": "2.13.0"},
        "platform": "linux",
        "cpu": "test",
        "threads": 2,
        "load_average": {"start": [0.1, 0.1, 0.1], "end": [0.2, 0.2, 0.2]},
        "date": "2026-12-01T00:00:00Z",
        "command": "pytest",
    }
    return R.BenchmarkResult(
        slug=SLUG,
        module=technique.package,
        standard=True,
        quick=False,
        options={},
        measurement=kwargs.get("m", measurement()),
        provenance=prov,
    )


# ------------------------------------------------------------------------------ aim states


@pytest.mark.parametrize(
    ("comparison", "target", "measured", "interval", "state"),
    [
        (">=", 1.5, 1.8, (1.6, 2.0), "met"),
        (">=", 1.5, 1.4, (1.2, 1.45), "missed"),
        (">=", 1.5, 1.6, (1.4, 1.8), "inconclusive"),
        ("<=", 1.1, 1.0, (0.9, 1.05), "met"),
        ("<=", 1.1, 1.3, (1.2, 1.4), "missed"),
        ("<", 1.0, 0.99, (0.9, 1.1), "inconclusive"),
        (">=", 1.5, 1.6, None, "met"),
        (">=", 1.5, 1.4, None, "missed"),
        (">=", 1.5, None, None, "inconclusive"),
        (">", 1.0, 1.0, (1.0, 1.2), "inconclusive"),  # an end on the target is not "beyond" it
    ],
)
def test_aim_states_are_judged_on_the_interval(
    comparison: str, target: float, measured: float | None, interval: Any, state: str
) -> None:
    assert aim_state(comparison, target, measured, interval) == state
    assert R.aim("x", measured, target, comparison, interval=interval).state == state  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ schema


def test_a_result_validates_and_is_language_neutral() -> None:
    data = result().to_dict()
    assert validate_result(data) == []
    assert missing_messages(data) == []
    strings = [v for v in _leaves(data) if isinstance(v, str)]
    prose = [s for s in strings if " " in s and s not in (data["provenance"]["cpu"],)]
    assert all(s in _provenance_strings(data) for s in prose)


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _leaves(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in _leaves(v)]
    return [obj]


def _provenance_strings(data: dict[str, Any]) -> set[str]:
    return {v for v in _leaves(data["provenance"]) if isinstance(v, str)}


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("notes", 0, "id"), "Skipped FLOPs were 63%", "notes[0].id"),
        (("rows", 1, "config", "method"), "DeepCache N=3", "rows[1].config.method"),
        (("settings", "scheduler"), "DDIMScheduler with trailing spacing", "settings.scheduler"),
        (("aims", 0, "state"), "met!", "aims[0].state"),
        (("schema_version",), 1, "schema_version"),
        (("rows", 0, "role"), "teacher", "rows[0].role"),
    ],
)
def test_prose_and_unknown_values_are_refused(
    path: tuple[Any, ...], value: Any, expected: str
) -> None:
    data = result().to_dict()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    problems = validate_result(data)
    assert problems and any(p.startswith(expected) for p in problems), problems


def test_cross_checks_catch_inconsistent_results() -> None:
    data = result().to_dict()
    data["aims"][0]["state"] = "missed"
    data["rows"][1]["values"]["fd_digits"] = 3.0
    data["headline"]["row"] = "nope"
    problems = validate_result(data)
    assert any("aims[0].state" in p for p in problems)
    assert any("fd_digits: not declared" in p for p in problems)
    assert any("headline.row" in p for p in problems)


def test_a_speedup_above_its_bound_is_flagged_and_an_estimate_is_not() -> None:
    flagged = result(m=measurement(speedup=1.9, limit=1.7)).to_dict()
    assert [a["id"] for a in flagged["anomalies"]] == ["speedup-above-limit"]
    assert validate_result(flagged) == []
    flagged["anomalies"] = []
    assert any("not flagged" in p for p in validate_result(flagged))
    m = measurement(speedup=1.9, limit=1.7)
    m.headline.limit_kind = "estimate"  # type: ignore[union-attr]
    assert result(m=m).to_dict()["anomalies"] == []


def test_write_refuses_an_id_without_a_message(tmp_path: Path) -> None:
    m = measurement()
    m.notes.append(R.note("no-such-note", x=1))
    with pytest.raises(ValueError, match="no-such-note"):
        R.write_result(result(m=m), tmp_path)
    assert not (tmp_path / f"{SLUG}.json").exists()
    path = R.write_result(result(), tmp_path)
    assert R.read_result(path) == json.loads(path.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------ text


def test_messages_render_in_each_language_with_locale_numbers() -> None:
    data = result().to_dict()
    rows = {
        lang: ResultText(SLUG, lang).config(data["rows"][1]["config"])
        for lang in ("es", "ru", "en")
    }
    assert rows["en"].startswith("DeepCache N=3") and "rama" in rows["es"] and "ветвь" in rows["ru"]
    assert format_number(1318.5, "en", ".1f") == "1,318.5"
    assert format_number(1318.5, "es", ".1f") == "1318,5"  # CLDR: no grouping below 10 000 in es
    assert format_number(1318.5, "ru", ".1f").replace("\u00a0", " ") == "1 318,5"
    assert fill("%(x).2f of %(n)d (%(name)s)", {"x": 0.126, "n": 3, "name": "ddim"}, "ru") == (
        "0,13 of 3 (ddim)"
    )


def test_missing_parameters_are_reported() -> None:
    data = result().to_dict()
    data["notes"][0]["params"] = {"n": 256}
    assert any("needs parameter(s) floor" in p for p in missing_messages(data))


# ------------------------------------------------------------------------------ provenance


def test_covered_files_are_the_package_and_the_shared_layers() -> None:
    files = {rel(p) for p in covered_files(get(SLUG))}
    assert "reference/feature_caching/deepcache.py" in files
    assert "reference/harness/quality.py" in files and "reference/harness/cost.py" in files
    assert "reference/zoo/specs.py" in files and "reference/data.py" in files
    assert "reference/registry.py" in files
    assert not any("/locale/" in f or f.endswith((".safetensors", ".png", ".pyc")) for f in files)
    assert not any(f.startswith("reference/pruning/") for f in files)


def test_a_run_records_what_it_imported_and_opened_not_every_shared_file() -> None:
    # a fresh interpreter, as `glossary bench` gives every run: nothing imported beforehand
    code = (
        "import json\n"
        "from reference.harness import provenance as prov\n"
        "from reference.registry import get\n"
        "with prov.recording() as record:\n"
        "    import reference.harness.stats\n"
        "    (prov.REFERENCE_DIR / 'data.py').read_bytes()\n"
        f"files = prov.recorded_files(get({SLUG!r}), record['used'])\n"
        "print(json.dumps({'used': sorted(map(prov.rel, record['used'])),\n"
        "                  'files': sorted(map(prov.rel, files))}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    used, files = set(got["used"]), set(got["files"])
    assert {"reference/harness/stats.py", "reference/data.py"} <= used
    assert not any("/locale/" in f or f.startswith("reference/results/") for f in used)
    assert "reference/feature_caching/deepcache.py" in files  # the whole package, always
    assert "reference/harness/stats.py" in files
    assert "reference/pruning/structured.py" not in files  # not imported by this run


def _copy_repository(tmp_path: Path) -> Path:
    """reference/ (code, results; only the teacher's weights) and glossary/ in a fresh folder."""
    root = tmp_path / "repo"
    skip = shutil.ignore_patterns("__pycache__", "*.safetensors", "*.png", ".staging-*")
    shutil.copytree(REPO_ROOT / "reference", root / "reference", ignore=skip)
    shutil.copytree(REPO_ROOT / "glossary", root / "glossary", ignore=skip)
    teacher = Path("reference/zoo/weights/teacher.safetensors")
    shutil.copy2(REPO_ROOT / teacher, root / teacher)
    return root


def _write_results(root: Path) -> list[str]:
    """A standard result for every technique of the copy, half of them loading the teacher.

    Each is the technique's committed body (whose figures agree with their recomputation and
    whose messages are in its catalog), without figure files, with a fresh provenance."""
    code = (
        "import json, sys\n"
        "from reference.registry import TECHNIQUES\n"
        "from reference.harness.provenance import covered_files, file_digests, sha256_file, rel\n"
        "from reference.harness.provenance import REPO_ROOT\n"
        "given = json.loads(sys.stdin.read())\n"
        "template, bodies = given['template'], given['bodies']\n"
        "teacher = REPO_ROOT / 'reference/zoo/weights/teacher.safetensors'\n"
        "for i, t in enumerate(TECHNIQUES):\n"
        "    data = dict(bodies[t.slug], figures=[])\n"
        "    files = file_digests(covered_files(t))\n"
        "    weights = {rel(teacher): sha256_file(teacher)} if i % 2 == 0 else {}\n"
        "    data['provenance'] = dict(template['provenance'], files=files, weights=weights)\n"
        "    if data['schema_version'] == 4:  # a ported result: sealed again, as its run would\n"
        "        from reference.harness.integrity import seal\n"
        "        data = seal({k: v for k, v in data.items() if k != 'digest'})\n"
        "    (REPO_ROOT / 'reference/results' / f'{t.slug}.json').write_text(json.dumps(data))\n"
    )
    for old in (root / "reference" / "results").iterdir():
        old.unlink()
    committed = REPO_ROOT / "reference" / "results"
    bodies = {
        t.slug: json.loads((committed / f"{t.slug}.json").read_text(encoding="utf-8"))
        for t in TECHNIQUES
    }
    subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps({"template": result().to_dict(), "bodies": bodies}),
        text=True,
        check=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    return [t.slug for i, t in enumerate(TECHNIQUES) if i % 2 == 0]


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reference.harness.runner", "--check"],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )


@pytest.mark.slow
def test_check_catches_every_tampering_on_a_copy(tmp_path: Path) -> None:
    root = _copy_repository(tmp_path)
    with_teacher = _write_results(root)
    clean = _check(root)
    assert clean.returncode == 0, clean.stderr
    assert "15 result(s) checked, 0 problem(s)" in clean.stdout

    quality = root / "reference" / "harness" / "quality.py"
    original = quality.read_text(encoding="utf-8")
    quality.write_text(original.replace("return float(", "return 2 * float(", 1), encoding="utf-8")
    harness = _check(root)
    stale = [
        ln for ln in harness.stderr.splitlines() if "reference/harness/quality.py changed" in ln
    ]
    assert harness.returncode == 1 and len(stale) == len(TECHNIQUES)
    quality.write_text(original, encoding="utf-8")

    # an added file, or one that only records provenance, cannot have moved a figure
    (root / "reference" / "harness" / "added_later.py").write_text("X = 1\n", encoding="utf-8")
    bookkeeping = root / "reference" / "harness" / "provenance.py"
    bookkeeping.write_text(bookkeeping.read_text(encoding="utf-8") + "\n# edited\n")
    unmoved = _check(root)
    assert unmoved.returncode == 0, unmoved.stderr

    weights = root / "reference" / "zoo" / "weights" / "teacher.safetensors"
    pristine = weights.read_bytes()
    data = bytearray(pristine)
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    flipped = _check(root)
    named = {
        ln.split(".json")[0].rsplit("/", 1)[-1]
        for ln in flipped.stderr.splitlines()
        if "weight file reference/zoo/weights/teacher.safetensors changed" in ln
    }
    assert flipped.returncode == 1 and named == set(with_teacher)
    weights.write_bytes(pristine)
    assert _check(root).returncode == 0

    removed = root / "reference" / "harness" / "stats.py"
    kept = removed.read_bytes()
    removed.unlink()
    gone = _check(root)
    assert gone.returncode == 1 and "reference/harness/stats.py no longer exists" in gone.stderr
    removed.write_bytes(kept)

    path = root / "reference" / "results" / f"{TECHNIQUES[1].slug}.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["provenance"]["dirty"] = True
    record["standard"] = False
    path.write_text(json.dumps(record), encoding="utf-8")
    bad = _check(root)
    assert "dirty: true" in bad.stderr and "not the standard run" in bad.stderr
    path.unlink()
    assert f"{TECHNIQUES[1].slug}.json: missing" in _check(root).stderr


def test_glossary_bench_rejects_unknown_techniques(capsys: pytest.CaptureFixture[str]) -> None:
    from reference.harness import runner

    assert runner.main(["no-such-technique"]) == 2
    assert "unknown technique 'no-such-technique'" in capsys.readouterr().err


def test_an_aim_names_the_rows_it_compares_and_they_must_exist() -> None:
    data = result().to_dict()
    rows = [r["id"] for r in data["rows"]]
    data["aims"] = [
        R._plain(R.asdict(R.aim("x", 1.2, 1.0, ">", (1.1, 1.3), row=rows[-1], against=rows[0])))
    ]
    assert validate_result(data) == []
    data["aims"][0]["against"] = "nowhere"
    assert validate_result(data) == ["aims[0].against: no row 'nowhere'"]
    del data["aims"][0]["row"]
    assert any("row" in p for p in validate_result(data))  # the field is required (may be null)
