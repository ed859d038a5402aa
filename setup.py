"""Build hook: compile the lookup index into the wheel (metadata lives in pyproject.toml).

After ``build_py`` has copied the packages, ``glossary/entries/_index.sqlite3`` is compiled from
the copied entries with the copied code (:mod:`glossary.index`), so a fresh install answers its
first ``glossary lookup`` without parsing any YAML. The index records the digest of every entry
file and of the package code, so an installed entry edited later is never served from it.
Editable installs skip it (their entries change; the index is compiled into the user's cache
on first use instead).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithIndex(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        entries = Path(self.build_lib) / "glossary" / "entries"
        saved_path, saved_cache = list(sys.path), os.environ.get("GLOSSARY_CACHE")
        os.environ["GLOSSARY_CACHE"] = "0"  # never write the builder's own cache
        sys.path.insert(0, str(Path(self.build_lib).resolve()))
        try:
            from glossary.index import compile_shipped
            from glossary.loader import GlossaryError

            try:
                print(f"compiled lookup index {compile_shipped(entries)}")
            except GlossaryError as exc:  # `glossary validate` says what; lookup will too
                first = exc.problems[0] if exc.problems else exc
                print(f"warning: invalid entries, lookup index not compiled: {first}")
        except ImportError as exc:  # PyYAML missing from the build environment
            print(f"warning: lookup index not compiled ({exc}); it is built on first use")
        finally:
            sys.path[:] = saved_path
            if saved_cache is None:
                os.environ.pop("GLOSSARY_CACHE", None)
            else:
                os.environ["GLOSSARY_CACHE"] = saved_cache
            for name in [m for m in sys.modules if m.split(".")[0] in ("glossary", "reference")]:
                del sys.modules[name]


setup(cmdclass={"build_py": BuildPyWithIndex})
