"""``python -m reference.<package>`` from its first line: a Ctrl-C at any moment is one line.

Idea
====
The command lines (`reference.harness.entry`, the studies', the stacking study's) install their
signal handlers as their first statement, but loading them takes a second or more (argparse, the
registry, the catalogs; torch later). A Ctrl-C in that window used to end in a
``KeyboardInterrupt`` traceback. Each package's ``__main__`` therefore imports only this small
module and hands it the name of the command line to load: the load itself runs inside the same
``try`` that turns an interruption into ``python -m <package>: interrupted`` and exit 130.

Pitfalls
========
* What runs before this module is the interpreter's own start-up and the package's
  ``__init__``: each technique's ``__init__`` imports its submodules lazily
  (`reference.lazy`), so that window holds no heavy import.
* `start` exits through ``SystemExit``; an exception other than an interruption is the command
  line's to report, and passes through.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

EXIT_INTERRUPTED = 130
"""The shell's code for a process ended by SIGINT (128 + 2)."""


def start(package: str, module: str, function: str, *args: str) -> NoReturn:
    """Import ``module``, call ``function(*args)`` and exit with the code it returns; an
    interruption while either runs ends in one line and exit 130."""
    try:
        code = getattr(importlib.import_module(module), function)(*args)
    except KeyboardInterrupt:
        print(f"python -m {package}: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    raise SystemExit(code)


def technique(package: str) -> NoReturn:
    """``python -m reference.<technique>``: the technique command line."""
    start(package, "reference.harness.entry", "run", package)


def study(package: str) -> NoReturn:
    """``python -m reference.<study>``: the study's command line (``--check`` included)."""
    start(package, "reference.harness.study", "run", package)
