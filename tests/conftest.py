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
"""

from __future__ import annotations

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
