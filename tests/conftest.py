"""Fixtures shared by the whole suite.

* Every test session gets a private glossary cache folder, so no test reads or writes the
  user's ``~/.cache`` and no test sees another session's cache.
* The site fixture's technique ``xss-probe`` (module ``site_fixture_technique``) is registered
  over the project's technique registry (``GLOSSARY_REGISTRY``, see :mod:`glossary.loader`), so
  the site tests, which add it to the entries they build, validate; other tests that need their
  own registry set the variable themselves (``glossary_support.use_registry``).
* ``random_teacher``: an untrained network of the zoo teacher's architecture (exactness tests of
  techniques do not need trained weights, and must not depend on them).
* ``quick_run`` and ``quick_result``: one technique's quick benchmark, run once per test process
  as a user runs it (a subprocess), shared by the contract test and the technique's own tests
  (which the collection hook puts in one xdist group).
* ``built``, ``base_url`` and ``browser``, for the site tests: the one strict MkDocs build of this
  test process (``site_support.session_build``), that build served on 127.0.0.1, and Debian's
  chromium under Playwright (skipped locally, failed under CI, when it is missing).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def private_glossary_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("glossary-cache")
    previous = os.environ.get("GLOSSARY_CACHE_DIR")
    os.environ["GLOSSARY_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("GLOSSARY_CACHE_DIR", None)
    else:
        os.environ["GLOSSARY_CACHE_DIR"] = previous


@pytest.fixture(scope="session", autouse=True)
def private_solution_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Converged solutions the tests (and the quick runs they start) solve stay in a folder of
    this test run, never in the user's cache (`reference.harness.solutions`)."""
    folder = tmp_path_factory.mktemp("solution-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REFERENCE_SOLUTION_CACHE", str(folder))
        yield folder


SITE_REGISTRY = Path(__file__).resolve().parent / "fixtures" / "site" / "registry.json"


@pytest.fixture(scope="session", autouse=True)
def site_fixture_registry() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GLOSSARY_REGISTRY", str(SITE_REGISTRY))
        yield SITE_REGISTRY


@pytest.fixture
def refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> Any:
    """``refused(package, args)``: run a ported benchmark's ``--bench`` with ``args``, assert that
    it stops with exit 2 and one line on stderr, and return that line (the caller names the work
    that must not have started, by making it fail)."""
    from reference.harness import entry

    def refused(package: str, args: list[str]) -> str:
        with pytest.raises(SystemExit) as info:
            entry.main(package, ["--bench", *args])
        err = capsys.readouterr().err
        assert info.value.code == 2 and err.count("\n") == 1, err
        return err

    return refused


@pytest.fixture(scope="session")
def quick_study() -> Any:
    """``quick_study(package, out)``: a study's quick configuration planned and run by the
    harness into ``out`` (no command line), returning ``(result, path)``."""
    from reference.harness.entry import load_bench, plan, run_bench, target_of

    def run(package: str, out: Path) -> tuple[dict[str, Any], Path]:
        target = target_of(package)
        assert target is not None, package
        p = plan(
            target,
            load_bench(target),
            run_bench=True,
            quick=True,
            threads=None,
            out=out,
            overrides={},
        )
        return run_bench(p)

    return run


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny models: a second thread only adds synchronisation (and spins on a busy machine)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def random_teacher() -> Any:
    """An untrained, frozen ``UNet2DModel`` with the zoo teacher's configuration (seed 0)."""
    import torch

    from reference.zoo.specs import TEACHER_CONFIG, build_unet

    torch.manual_seed(0)
    model = build_unet(TEACHER_CONFIG).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


@dataclass
class QuickRun:
    """One technique's quick benchmark, run once per test process as a user runs it
    (``python -m <package> --quick --bench --out DIR``): its exit code and stderr, the output
    folder, the result (``None`` if none was written) and the committed result's sha256 before
    and after the run (a quick run must never touch it)."""

    returncode: int
    stderr: str
    out: Path
    data: dict[str, Any] | None
    committed_before: str | None
    committed_after: str | None


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _run_quick(slug: str, out: Path) -> QuickRun:
    from reference.harness.provenance import RESULTS_DIR
    from reference.registry import get

    committed = RESULTS_DIR / f"{slug}.json"
    before = _sha256(committed)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "LANG": "C.UTF-8"}
    command = [sys.executable, "-m", get(slug).package, "--quick", "--bench", "--out", str(out)]
    run = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900, check=False
    )
    written = out / f"{slug}.json"
    data = json.loads(written.read_text(encoding="utf-8")) if written.is_file() else None
    return QuickRun(run.returncode, run.stderr, out, data, before, _sha256(committed))


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``quick_run(slug)``: that technique's `QuickRun`, cached for the test process. Every test
    that uses it is put in the xdist group of its technique (`pytest_collection_modifyitems`), so
    the contract test and the technique's own tests share one run."""
    cache: dict[str, QuickRun] = {}

    def run(slug: str) -> QuickRun:
        if slug not in cache:
            cache[slug] = _run_quick(slug, tmp_path_factory.mktemp(f"quick-{slug}") / "out")
        return cache[slug]

    return run


@pytest.fixture(scope="session")
def quick_result(quick_run: Any) -> Any:
    """``quick_result(slug)``: the result dict of that technique's quick benchmark (cached)."""

    def result(slug: str) -> dict[str, Any]:
        run = quick_run(slug)
        assert run.returncode == 0 and run.data is not None, run.stderr[-2000:]
        return run.data

    return result


def _quick_slug(item: pytest.Item) -> str | None:
    """The technique whose quick run ``item`` reads: its ``technique`` parameter (the contract
    test) or its module's package (``tests/test_<package>.py``)."""
    from reference.registry import BY_SLUG

    param = getattr(getattr(item, "callspec", None), "params", {}).get("technique")
    if param is not None:
        return param.slug
    package = "reference." + item.module.__name__.rpartition(".")[2].removeprefix("test_")
    return next((t.slug for t in BY_SLUG.values() if t.package == package), None)


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group in its node id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that read one technique's quick run go to one xdist group (its module's group if it
    has one), so that the run is made once, not once per worker. It must run before xdist's own
    hook, which reads the groups into the node ids that ``--dist loadgroup`` schedules by."""
    users = [
        (i, _quick_slug(i)) for i in items if {"quick_run", "quick_result"} & set(i.fixturenames)
    ]
    groups: dict[str, str] = {}
    for item, slug in users:
        mark = item.get_closest_marker("xdist_group")
        if slug is not None and mark is not None:
            groups.setdefault(slug, mark.args[0])
    for item, slug in users:
        if slug is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(groups.get(slug, f"quick-{slug}")))


def _support(name: str) -> Any:
    """A helper module of tests/, imported the way the test modules import it."""
    try:
        return importlib.import_module(f"tests.{name}")
    except ImportError:  # tests/ is not a package: pytest put it on sys.path
        return importlib.import_module(name)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The site built once per test process (``mkdocs build --strict``); fails with its output."""
    site_support = _support("site_support")

    root = site_support.shared_root(tmp_path_factory)
    return site_support.require_ok(site_support.session_build(str(root)))


@pytest.fixture(scope="module")
def base_url(built: Any) -> Iterator[str]:
    """The base URL of ``built`` served on 127.0.0.1."""
    from glossary.site.serve import serve

    with serve(built.site) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium under Playwright, one per test module."""
    browser_support = _support("browser_support")

    with browser_support.chromium() as instance:
        yield instance
