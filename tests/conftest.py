"""Fixtures shared by the whole suite.

* Every test session gets a private glossary cache folder, so no test reads or writes the
  user's ``~/.cache`` and no test sees another session's cache.
* The site fixture's technique ``xss-probe`` (module ``site_fixture_technique``) is registered
  over the project's technique registry (``GLOSSARY_REGISTRY``, see :mod:`glossary.loader`), so
  the site tests, which add it to the entries they build, validate; other tests that need their
  own registry set the variable themselves (``glossary_support.use_registry``).
* ``random_teacher``: an untrained network of the zoo teacher's architecture (exactness tests of
  techniques do not need trained weights, and must not depend on them).
* ``quick_result``: runs one technique's quick benchmark in-process and returns the result dict
  (for technique tests that inspect what their benchmark reports).
* ``built``, ``base_url`` and ``browser``, for the site tests: the one strict MkDocs build of this
  test process (``site_support.session_build``), that build served on 127.0.0.1, and Debian's
  chromium under Playwright (skipped locally, failed under CI, when it is missing).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


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


SITE_REGISTRY = Path(__file__).resolve().parent / "fixtures" / "site" / "registry.json"


@pytest.fixture(scope="session", autouse=True)
def site_fixture_registry() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GLOSSARY_REGISTRY", str(SITE_REGISTRY))
        yield SITE_REGISTRY


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


@pytest.fixture(scope="session")
def quick_result(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``quick_result(slug)``: the result dict of that technique's quick benchmark (cached)."""
    cache: dict[str, dict[str, Any]] = {}

    def run(slug: str) -> dict[str, Any]:
        if slug not in cache:
            from reference.harness.cli import contract, plan, run_benchmark
            from reference.registry import get

            technique = get(slug)
            out = tmp_path_factory.mktemp(f"quick-{slug}")
            p = plan(
                technique,
                contract(technique),
                run_bench=True,
                quick=True,
                threads=None,
                out=out,
                overrides={},
            )
            result, _ = run_benchmark(p)
            cache[slug] = result.to_dict()
        return cache[slug]

    return run


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
