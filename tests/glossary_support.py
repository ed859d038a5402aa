"""Shared helpers for the glossary tests: a valid fixture set and ways to break it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from glossary.loader import REGISTRY_ENV, validate

ROOT = Path(__file__).resolve().parent.parent
VALID = Path(__file__).resolve().parent / "fixtures" / "entries_valid"
REAL = ROOT / "glossary" / "entries"
TECHNIQUES = 15
CONCEPTS = 62


def copy_valid(tmp_path: Path) -> Path:
    """A private copy of the valid fixture entries."""
    target = tmp_path / "entries"
    shutil.copytree(VALID, target)
    return target


def edit(directory: Path, slug: str, old: str, new: str) -> Path:
    """Replace the one occurrence of ``old`` in ``<slug>.yaml``."""
    path = directory / f"{slug}.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path.name}"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def use_registry(monkeypatch: pytest.MonkeyPatch, folder: Path, techniques: dict[str, str]) -> Path:
    """Register fixture techniques (``slug -> package``) over the project's registry."""
    path = folder / "registry.json"
    path.write_text(json.dumps(techniques), encoding="utf-8")
    monkeypatch.setenv(REGISTRY_ENV, str(path))
    return path


def problems(directory: Path) -> list[str]:
    return [str(p) for p in validate(directory)]


def real_entries_complete() -> bool:
    """Whether all 77 real entries exist (tests of the real set skip until then)."""
    return len(list(REAL.glob("*.yaml"))) >= TECHNIQUES + CONCEPTS


def datasets() -> list[object]:
    """pytest params: the fixture entries always, the real ones once all 77 exist."""
    import pytest

    real = pytest.param(
        REAL,
        id="real",
        marks=pytest.mark.skipif(
            not real_entries_complete(), reason="the 77 entries are not all written yet"
        ),
    )
    return [pytest.param(VALID, id="fixtures"), real]


def private_cache(tmp_path_factory: object) -> object:
    """Generator for a module-scoped autouse fixture: a private GLOSSARY_CACHE_DIR."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GLOSSARY_CACHE_DIR", str(tmp_path_factory.mktemp("glossary-cache")))  # type: ignore[attr-defined]
        yield
