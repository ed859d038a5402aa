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
    """Drop the combining marks of ``text``, but keep ``й`` a letter (looked up once per
    distinct character, not per character: texts run to thousands of letters)."""
    decomposed = unicodedata.normalize("NFD", text)
    for base in _CYRILLIC_I:
        decomposed = decomposed.replace(base + _BREVE, unicodedata.normalize("NFC", base + _BREVE))
    marks = {ord(ch): None for ch in set(decomposed) if unicodedata.combining(ch)}
    return unicodedata.normalize("NFC", decomposed.translate(marks) if marks else decomposed)


_SEPARATORS = re.compile(r"[\W_]+")
"""Runs of anything but letters and digits: punctuation, symbols, spaces, control characters."""


def normalize(text: str) -> str:
    """Fold ``text`` for matching (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("ё", "е")
    if not text.isascii():
        text = _strip_marks(text)
    return _SEPARATORS.sub(" ", text).strip()


_TO_LATIN = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ж": "zh", "з": "z", "и": "i",
    "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s",
    "т": "t", "у": "u", "ф": "f", "х": "h", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "sch",
    "ъ": "", "ы": "y", "ь": "", "э": "e", "ю": "yu", "я": "ya",
}  # fmt: skip
_TO_CYRILLIC = [
    ("shch", "щ"), ("sch", "щ"), ("zh", "ж"), ("kh", "х"), ("ts", "ц"), ("ch", "ч"),
    ("sh", "ш"), ("yu", "ю"), ("ya", "я"), ("yo", "е"), ("ye", "е"),
    ("a", "а"), ("b", "б"), ("c", "к"), ("d", "д"), ("e", "е"), ("f", "ф"), ("g", "г"),
    ("h", "х"), ("i", "и"), ("j", "дж"), ("k", "к"), ("l", "л"), ("m", "м"), ("n", "н"),
    ("o", "о"), ("p", "п"), ("q", "к"), ("r", "р"), ("s", "с"), ("t", "т"), ("u", "у"),
    ("v", "в"), ("w", "в"), ("x", "кс"), ("y", "ы"), ("z", "з"),
]  # fmt: skip


def _to_cyrillic(key: str) -> str:
    out, i = [], 0
    while i < len(key):
        for latin, cyrillic in _TO_CYRILLIC:
            if key.startswith(latin, i):
                out.append(cyrillic)
                i += len(latin)
                break
        else:
            out.append(key[i])
            i += 1
    return "".join(out)


def transliterations(key: str) -> list[str]:
    """Other spellings of a normalized query in the other alphabet.

    A Cyrillic query is also read in Latin letters ("лора" -> "lora", "юнет" -> "yunet"), a
    Latin one in Cyrillic ("kvantovanie" -> "квантование"), so a name typed in the other
    alphabet, as Russian speakers often write English names and the other way round, is found.
    The mapping is the common practical one (GOST-like, ``х`` as ``h``), not a standard to
    round-trip.
    """
    has_cyrillic = any("а" <= ch <= "я" or ch == "й" for ch in key)
    has_latin = any("a" <= ch <= "z" for ch in key)
    if has_cyrillic and not has_latin:
        other = "".join(_TO_LATIN.get(ch, ch) for ch in key)
    elif has_latin and not has_cyrillic:
        other = _to_cyrillic(key)
    else:
        return []
    return [other] if other != key else []
