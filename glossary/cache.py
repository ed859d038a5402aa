"""A small on-disk cache that keeps a cold ``glossary lookup`` fast.

Parsing 41 YAML files with a pure-Python, line-tracking loader and loading Babel's locale data
take several hundred milliseconds; reading one JSON file takes a few. Each cached value is
stored with a *key* describing everything it was computed from (for entries: the name, mtime
and CRC-32 of the bytes of every entry file, plus the size and mtime of the loader and schema);
a value is used only when the stored key equals the current one, so editing, adding, removing
or renaming any file invalidates it.

Files live in ``$GLOSSARY_CACHE_DIR``, else ``$XDG_CACHE_HOME/diffusion-efficiency-glossary``,
else ``~/.cache/diffusion-efficiency-glossary``. ``GLOSSARY_CACHE=0`` turns caching off. Writes
are atomic (a temporary file in the same folder, then ``os.replace``), so concurrent processes
never read half a file; any error (read-only home, corrupt file) silently means "no cache".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FORMAT = 1


def enabled() -> bool:
    return os.environ.get("GLOSSARY_CACHE", "1") not in ("0", "false", "no", "off")


def cache_dir() -> Path:
    if os.environ.get("GLOSSARY_CACHE_DIR"):
        return Path(os.environ["GLOSSARY_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "diffusion-efficiency-glossary"


def read(name: str, key: Any) -> Any | None:
    """The value stored under ``name`` if it was stored with ``key``; otherwise None."""
    if not enabled():
        return None
    try:
        with open(cache_dir() / f"{name}.json", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key:
        return None
    return doc.get("value")


def write(name: str, key: Any, value: Any) -> None:
    """Store ``value`` under ``name`` with ``key``, atomically; errors are ignored."""
    if not enabled():
        return
    import tempfile  # only on a cache miss; it costs a few milliseconds to import

    directory = cache_dir()
    tmp = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "key": key, "value": value}, f, ensure_ascii=False)
        os.replace(tmp, directory / f"{name}.json")
        tmp = None
    except (OSError, TypeError, ValueError):
        pass
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
