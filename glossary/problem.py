"""A problem of the glossary's files, as validation reports it: one line with where and why.

:class:`Problem` is what :mod:`glossary.loader` (the entries), :mod:`glossary.style` (the style
sheets and the prose) and :mod:`glossary.terms` (the message catalogs) report, and
:func:`display` is how they name a file in it. They live here, in a module that imports only the
standard library, so that those modules import it rather than each other.
``glossary.loader`` still exports them under their old names (``Problem``, ``_display``,
``_shown``) for existing callers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def shown(value: str) -> str:
    """``value`` for a message: control characters escaped, so one problem is one line."""
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in value)


def display(path: Path) -> str:
    """``path`` as a problem names it: relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an entry file, with where it is and how to fix it.

    Its parts hold no control characters or line breaks (they are escaped, ``\\n``), whatever
    file name, key or value they quote, so that a problem always prints as one line.
    """

    path: str
    line: int
    field: str
    message: str
    hint: str | None = None

    def __post_init__(self) -> None:
        for name in ("path", "field", "message", "hint"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, shown(value))

    def __str__(self) -> str:
        text = f"{self.path}:{self.line}: {self.field}: {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text
