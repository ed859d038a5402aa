"""Build hook of the zoo's weights distribution: it holds only ``reference/zoo/weights/*``.

The weights (about 25.5 MB) are what the reference implementations load; the glossary, its
lookup, exports and site need none of them, so the main distribution leaves them out and this
one installs them where ``reference.zoo.store`` looks for them (``reference/zoo/weights/`` in
site-packages, beside the main distribution's ``reference.zoo``). The files are copied from the
repository at build time, so the wheel is built from a checkout, never from an sdist.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

WEIGHTS = Path(__file__).resolve().parent.parent.parent / "reference" / "zoo" / "weights"
TARGET = Path("reference") / "zoo" / "weights"


class BuildWeights(build_py):
    """Copy every ``*.safetensors`` file of the repository's zoo into the wheel."""

    def run(self) -> None:
        files = weight_files()
        if not files:
            raise SystemExit(f"no zoo weights in {WEIGHTS}; build this wheel from a checkout")
        target = Path(self.build_lib) / TARGET
        target.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copyfile(path, target / path.name)


class WeightsOnly(Distribution):
    """A distribution of data files only, whose ``build_py`` must still run to copy them."""

    def has_pure_modules(self) -> bool:
        return True


def weight_files() -> list[Path]:
    """The files this distribution installs."""
    return sorted(WEIGHTS.glob("*.safetensors"))


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import it
    setup(distclass=WeightsOnly, cmdclass={"build_py": BuildWeights}, packages=[], py_modules=[])
