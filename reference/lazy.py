"""Lazy package attributes: ``import reference.<technique>`` imports nothing heavy.

Idea
====
``python -m reference.<technique>`` imports the package before its ``__main__`` runs, so
whatever the package's ``__init__`` imports (torch, diffusers) loads before the command line can
install its signal handlers: a Ctrl-C in those seconds would end in a traceback. A package that
names its public attributes in a table and imports each on first use (PEP 562's module
``__getattr__``) keeps that window to the interpreter's own start-up.

Each technique's ``__init__`` declares ``_EXPORTS = {name: submodule}`` and binds
``__getattr__ = attributes(__name__, _EXPORTS)``; the same names sit under ``if TYPE_CHECKING:``
as ordinary imports, so type checkers and the documentation (which reads the source) still see
them.

Pitfalls
========
* A submodule and an attribute of the same name: once the submodule is imported, the import
  system sets the package attribute to the module, and ``__getattr__`` is no longer asked. A test
  keeps every exported name distinct from the package's submodules.
* A submodule that is not exported is still reachable as an attribute (``pkg.sub``): the
  loader imports it, as the eager ``__init__`` used to by side effect.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any


def attributes(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``exports[name]`` is the submodule that
    defines ``name``; any other name that is a submodule imports it."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
            setattr(sys.modules[package], name, value)
            return value
        if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
