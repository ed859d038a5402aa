"""Text normalization shared by term lookup and the uniqueness check of terms and aliases.

Two spellings are "the same name" when they agree after :func:`normalize`:

1. Unicode NFKC (compatibility forms fold: full-width letters, ligatures, ``ﬁ`` -> ``fi``);
2. ``casefold`` (stronger than ``lower``: ``ß`` -> ``ss``);
3. ``ё`` -> ``е`` (Russian text writes ``ё`` only optionally);
4. accents stripped: NFD, then combining marks dropped (``ñandú`` -> ``nandu``), except the
   breve of ``й``, which is a letter of its own in Russian, not an accent;
5. punctuation, symbols and runs of whitespace collapse to one space (``low-rank`` and
   ``low rank`` agree).

Pitfall: normalization is for matching, never for display; keep the original text for output.
"""

from __future__ import annotations

import re
import unicodedata

_BREVE = "\u0306"
_CYRILLIC_I = frozenset("иИ")


def _strip_marks(text: str) -> str:
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch):
            if ch == _BREVE and out and out[-1] in _CYRILLIC_I:
                out.append(ch)
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


_SEPARATORS = re.compile(r"[\W_]+")
"""Runs of anything but letters and digits: punctuation, symbols, spaces, control characters."""


def normalize(text: str) -> str:
    """Fold ``text`` for matching (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("ё", "е")
    if not text.isascii():
        text = _strip_marks(text)
    return _SEPARATORS.sub(" ", text).strip()
