"""The installed ``glossary`` command: :func:`glossary.cli.main`, interruptible at any moment.

The console script imports only this small module; the command line's own imports (argparse,
the loader, Babel, and torch for ``run`` and ``bench``) happen inside :func:`main`. A Ctrl-C
while they load therefore ends like one during the command: one line on stderr and exit status
130, never a ``KeyboardInterrupt`` traceback. Once the command has finished, a late Ctrl-C is
ignored, so that it cannot turn a finished command into a traceback at interpreter exit either.
"""

from __future__ import annotations

import signal
import sys

INTERRUPTED = 130
"""The exit status of a command stopped by SIGINT (128 + the signal's number, as shells do)."""


def _interrupted_line() -> str:
    """``glossary: interrupted`` in the UI language (English if the catalogs cannot load)."""
    try:
        from glossary import i18n
        from glossary.cli import ui_lang_from_argv

        lang = ui_lang_from_argv(sys.argv[1:]) or i18n.ui_lang_from_env()
        return i18n.translator(lang).gettext("glossary: interrupted")
    except Exception:
        return "glossary: interrupted"


def main() -> int:
    """Run the ``glossary`` command line on ``sys.argv``; returns its exit status."""
    try:
        from glossary.cli import main as run

        code = run()
    except KeyboardInterrupt:  # while the command line's modules were being imported
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(_interrupted_line(), file=sys.stderr)
        return INTERRUPTED
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code
