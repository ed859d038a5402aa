"""The technique contract, checked once over the registry (reference/registry.py).

Every registered technique: its glossary entry names the registry's package; the package has the
contract's parts (teaching ``__init__``, ``bench.py`` with ``Config``/``FULL``/``QUICK``/
``OPTIONS``/``benchmark``/``demo``, the two-line ``__main__``, catalogs in es/ru/en); ``--help``
works; a quick benchmark writes a result that validates against the schema and the catalogs and
is marked non-standard; no run with a changed option can write the committed result.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from glossary.loader import load_glossary
from glossary.resulttext import LANGS, catalog_path, missing_messages
from reference.harness.integrity import check_result
from reference.harness.schema import validate_result
from reference.registry import REFERENCE_DIR, TECHNIQUES, Technique, package_of

ROOT = REFERENCE_DIR.parent
MAIN_CODE = ["from reference.harness.launch import technique", "technique(__package__)"]
"""The two-line ``__main__`` of every technique: the command line of `reference.harness.entry`,
loaded inside `reference.harness.launch`'s guard (a Ctrl-C while it loads is one line)."""
MAX_CORE_LINES = 330
"""A technique's files, and a ported bench, stay readable in one sitting: ~300 lines each."""

FIDELITY_BESIDE = {
    "grid-search": "the search may change the guidance scale, which changes the distribution to"
    " sample; fidelity to the unguided solution is reported beside the FDD, not as its objective",
    "pruning": "the headline is the fine-tuned prune, a trained change judged on the distribution;"
    " the fidelity is the primary figure of the one-shot prunes only, reported beside their FDD",
}
"""Benchmarks that report the fidelity without headlining it, and why."""

ids = [t.slug for t in TECHNIQUES]


def _bench(technique: Technique):
    """The bench module through its own command line's loader."""
    from reference.harness.entry import load_bench, target_by_slug

    return load_bench(target_by_slug(technique.slug))


def _plan(technique: Technique, bench, **kwargs):
    from reference.harness.entry import plan, target_by_slug

    return plan(target_by_slug(technique.slug), bench, **kwargs)


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "LANG": "C.UTF-8"}


def test_registry_names_follow_one_rule() -> None:
    assert len({t.slug for t in TECHNIQUES}) == len(TECHNIQUES) == 15
    for t in TECHNIQUES:
        assert t.package == package_of(t.slug) == "reference." + t.slug.replace("-", "_")


def test_entries_and_registry_agree() -> None:
    glossary = load_glossary()
    registered = {t.slug: t.package for t in TECHNIQUES}
    implemented = {
        e.slug: e.reference.module
        for e in glossary.techniques()
        if e.reference is not None and e.reference.implemented
    }
    assert implemented == registered


def test_every_benchmark_declares_the_contract() -> None:
    from reference.harness.entry import CONTRACT, contract_version

    assert {t.slug: contract_version(t.slug) for t in TECHNIQUES} == {
        t.slug: CONTRACT for t in TECHNIQUES
    }


@pytest.mark.parametrize("technique", TECHNIQUES, ids=ids)
def test_package_has_the_contract_parts(technique: Technique) -> None:
    folder = technique.directory
    for name in ("__init__.py", "bench.py", "__main__.py"):
        assert (folder / name).is_file(), f"{folder / name} is missing"
    body = ast.parse((folder / "__main__.py").read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    code = [ast.unparse(node) for node in body]
    assert code == MAIN_CODE
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.splitlines()) >= 20, "the package docstring teaches the technique"
    for lang in LANGS:
        assert catalog_path(technique.slug, lang).is_file()


@pytest.mark.parametrize("technique", TECHNIQUES, ids=ids)
def test_technique_files_stay_small(technique: Technique) -> None:
    """Every file of a technique, its bench (a declaration) included, stays under the size
    rule."""
    too_long = {
        p.name: n
        for p in technique.directory.glob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_CORE_LINES
    }
    assert too_long == {}


@pytest.mark.slow
@pytest.mark.parametrize("technique", TECHNIQUES, ids=ids)
def test_bench_module_declares_the_contract(technique: Technique) -> None:
    bench = _bench(technique)
    assert dataclasses.is_dataclass(bench.FULL) and bench.FULL.__dataclass_params__.frozen
    bench.FULL.validate()
    bench.QUICK.validate()
    fields = {f.name for f in dataclasses.fields(bench.Config)}
    assert {o.name for o in bench.OPTIONS} <= fields


@pytest.mark.slow
@pytest.mark.parametrize("technique", TECHNIQUES, ids=ids)
def test_an_option_never_targets_the_committed_result(technique: Technique, tmp_path: Path) -> None:
    bench = _bench(technique)
    standard = _plan(
        technique, bench, run_bench=True, quick=False, threads=None, out=None, overrides={}
    )
    assert standard.standard and standard.out == REFERENCE_DIR / "results"
    for option in bench.OPTIONS:
        value = getattr(bench.FULL, option.name)
        changed = value + 1 if isinstance(value, int) and not isinstance(value, bool) else None
        if changed is None:
            continue
        try:
            p = _plan(
                technique,
                bench,
                run_bench=True,
                quick=False,
                threads=None,
                out=None,
                overrides={option.name: changed},
            )
        except ValueError:
            continue  # an invalid value is refused before any work: also fine
        assert not p.standard and p.out != REFERENCE_DIR / "results"
        assert p.options == {option.name: changed}
    for kwargs in (
        {"quick": True, "threads": None, "out": None},
        {"quick": False, "threads": 1, "out": None},
        {"quick": False, "threads": None, "out": tmp_path},
    ):
        p = _plan(technique, bench, run_bench=True, overrides={}, **kwargs)
        assert not p.standard and p.out != REFERENCE_DIR / "results"


@pytest.mark.slow
@pytest.mark.parametrize("technique", TECHNIQUES, ids=ids)
def test_help_and_bad_arguments(technique: Technique) -> None:
    cmd = [sys.executable, "-m", technique.package]
    shown = subprocess.run([*cmd, "--help"], capture_output=True, text=True, env=_env(), cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert "--bench" in shown.stdout and "--quick" in shown.stdout
    bad = subprocess.run(
        [*cmd, "--bench", "--threads", "0"], capture_output=True, text=True, env=_env(), cwd=ROOT
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "--threads" in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize("technique", TECHNIQUES, ids=ids)
def test_quick_benchmark_writes_a_valid_non_standard_result(
    technique: Technique, quick_run: Any
) -> None:
    run = quick_run(technique.slug)  # python -m <package> --quick --bench --out DIR
    assert run.returncode == 0, run.stderr[-2000:]
    data, out = run.data, run.out
    assert data is not None
    if data["schema_version"] == 4:  # sealed; every derived figure follows from the raw ones
        assert check_result(data, technique.slug) == [] and "digest" in data
        if "rms_to_solution" in data["metrics"] and technique.slug not in FIDELITY_BESIDE:
            # a training-free approximation headlines its fidelity (issue 21)
            assert data["headline"]["quality_metric"] == "rms_to_solution"
    else:
        assert validate_result(data) == []
    for lang in LANGS:
        assert missing_messages(data, lang) == []
    assert data["standard"] is False and data["quick"] is True
    assert data["module"] == technique.package
    prov = data["provenance"]
    covered = set(prov["files"])
    assert any(f.startswith("reference/harness/") for f in covered)
    assert any(f.startswith(f"reference/{technique.package.split('.')[1]}/") for f in covered)
    for fig in data["figures"]:
        assert (out / fig["file"]).is_file()
    assert run.committed_after == run.committed_before  # the committed result is untouched
