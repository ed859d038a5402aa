"""Lazy package attributes: ``import reference.<technique>`` imports nothing heavy.

Idea
====
``python -m reference.<technique>`` imports the package before its ``__main__`` runs, so
whatever the package's ``__init__`` imports (torch, diffusers) loads before the command line can
install its signal handlers: a Ctrl-C in those seconds would end in a traceback. A package that
names its public attributes in a table and imports each on first use (PEP 562's module
``__getattr__``) keeps that window to the interpreter's own start-up.

Each technique's ``__init__`` imports its public names under ``if TYPE_CHECKING:`` (so type
checkers and the documentation, which read the source, see ordinary imports) and binds
``__getattr__ = attributes(__name__)``: on the first attribute asked for, the loader reads that
block from the package's source (`exports_of`) and imports the one submodule that defines the
name. The block is the only list of what the package exports; a package without one passes its
table (``attributes(__name__, {name: submodule})``).

Pitfalls
========
* A submodule and an attribute of the same name: once the submodule is imported, the import
  system sets the package attribute to the module, and ``__getattr__`` is no longer asked. A test
  keeps every exported name distinct from the package's submodules.
* A submodule that is not exported is still reachable as an attribute (``pkg.sub``): the
  loader imports it, as the eager ``__init__`` used to by side effect.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any


@cache
def exports_of(init_file: str) -> dict[str, str]:
    """``{name: submodule}`` of the relative imports under ``if TYPE_CHECKING:`` in the package
    source ``init_file`` (its ``__init__.py``)."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.level == 1 and stmt.module:
                    found.update({a.asname or a.name: stmt.module for a in stmt.names})
    return found


def attributes(package: str, exports: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``exports[name]`` (by default, the package's
    ``if TYPE_CHECKING:`` imports, `exports_of`) is the submodule that defines ``name``; any
    other name that is a submodule imports it."""

    def __getattr__(name: str) -> Any:
        table = exports if exports is not None else exports_of(sys.modules[package].__file__ or "")
        module = table.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
            setattr(sys.modules[package], name, value)
            return value
        if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
