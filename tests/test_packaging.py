"""What each distribution ships: the glossary without the zoo's weights, the weights apart.

Building a wheel takes too long for the suite, so this reads what decides the wheels' contents:
the main distribution's ``package-data`` patterns (pyproject.toml) and the files the weights
distribution (``packaging/zoo``) copies. Measured wheel sizes are in ``docs/packaging.md``.
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEIGHTS = ROOT / "reference" / "zoo" / "weights"


def _package_data() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return project["tool"]["setuptools"]["package-data"]


def test_the_main_distribution_ships_no_weight_file() -> None:
    weights = sorted(WEIGHTS.glob("*"))
    assert len(weights) >= 10
    shipped = {
        path
        for package, patterns in _package_data().items()
        for pattern in patterns
        for path in (ROOT / package).glob(pattern)
    }
    assert shipped, "package-data selects nothing"
    assert not shipped & set(weights)
    assert (ROOT / "reference" / "zoo" / "manifest.json") in shipped  # the loader checks it


def test_the_weights_distribution_ships_every_weight_file() -> None:
    spec = importlib.util.spec_from_file_location("zoo_setup", ROOT / "packaging/zoo/setup.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.weight_files() == sorted(WEIGHTS.glob("*"))
