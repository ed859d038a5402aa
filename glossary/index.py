"""A compiled lookup index: every normalized term and alias, and each entry's data, in SQLite.

``glossary lookup`` must not parse every YAML file (a pure-Python, line-tracking loader) to
answer one query, and its cost must not grow with the number of entries. So the names of all
entries are compiled into one SQLite file (the standard library's ``sqlite3``)::

    meta(key, value)               format, fingerprint of the code, language names
    files(name, size, mtime_ns, digest)
                                   every entry file the index was compiled from
    names(key, text, slug, lang, is_term)
                                   one row per normalized term/alias/slug
    grams(gram, id)                the character trigrams of each name (padded with spaces)
    gram_counts(gram, n)           how many names have each trigram
    entries(slug, data)            each entry as JSON (what the loader builds entries from)

A lookup does not read every name: it asks the ``grams`` table for the names that share the
most trigrams with the query (:data:`glossary.lookup.MAX_CANDIDATES` of them), scores those with
rapidfuzz, and then loads only the matched entry's row. Its cost depends on the query, not on
the size of the glossary (beyond the length of the trigram lists SQLite walks). The index is
compiled from a *validated* glossary (:func:`glossary.loader.load_glossary`), so invalid entries
are never indexed.

**Never stale.** An index is used only if it was compiled from exactly the entry files present
now, by the same code (a digest of :data:`CODE_FILES` and :data:`FORMAT`): the same
file names, and for each file the same BLAKE2b digest of its bytes. Reading and hashing every
file would make each lookup cost grow with the glossary, so a file's digest is recomputed only
when its *stat stamp* (size, ``st_mtime_ns``, ``st_ctime_ns``, inode) differs from the one
recorded with that digest. An edit always changes the stamp: even a tool that restores the
mtime cannot restore ``st_ctime``, which the kernel sets on every change. Stamps are recorded in
the index when it is compiled, with one digest of all of them, so an untouched folder costs one
``stat`` per file and no read. A shipped index, whose files were reinstalled since (new inodes),
has its files read and digested; a small file in the cache folder then remembers that these
stamps were verified for this content, so only the first lookup after an install pays for it
(every lookup, with ``GLOSSARY_CACHE=0``). Any edited, added, removed or renamed file makes the
index invalid, and the next lookup recompiles it.

**Where it lives.** The *shipped* index is ``<entries>/_index.sqlite3``: the wheel build
(``setup.py``'s ``build_py``) and ``python -m glossary.index [DIR]`` compile it there, next to
the entries it describes; it is not committed (``.gitignore``). When it is missing or stale, a
private copy is compiled into the cache folder (:mod:`glossary.cache`, unless
``GLOSSARY_CACHE=0``, in which case the index is compiled in memory for this process only).
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import cache

try:  # the BLAKE2 extension alone; ``hashlib`` would also load OpenSSL (a few milliseconds)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python implementations
    from hashlib import blake2b

FORMAT = 4
SHIPPED_NAME = "_index.sqlite3"
CODE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class FileStamp:
    name: str
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    digest: str


def _stat(path: str) -> tuple[int, int, int, int]:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _digest(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()


def entry_names(directory: Path) -> list[str]:
    """The files :func:`glossary.loader.entry_files` would read (``*.yaml`` and ``*.yml``)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(n for n in names if n.endswith((".yaml", ".yml")))


def stamps_digest(directory: Path, names: list[str]) -> str:
    """One digest of every file's name and stat stamp (no file is read)."""
    base = os.fspath(directory)
    return _stamps_of((name, _stat(os.path.join(base, name))) for name in names)


def _stamps_of(pairs: Any) -> str:
    text = "".join(f"{name}\0{a} {b} {c} {d}\0" for name, (a, b, c, d) in pairs)
    return blake2b(text.encode(), digest_size=16).hexdigest()


def stamp_files(directory: Path, names: list[str]) -> list[FileStamp]:
    out = []
    for name in names:
        path = os.path.join(os.fspath(directory), name)
        stamp = _stat(path)  # before reading: a change while reading shows as a new stamp
        with open(path, "rb") as f:
            data = f.read()
        out.append(FileStamp(name, *stamp, _digest(data)))
    return out


def content_digest(stamps: list[FileStamp]) -> str:
    """The identity of what an index was compiled from: each file's name and digest."""
    h = blake2b(digest_size=16)
    for st in stamps:
        h.update(f"{st.name}\0{st.digest}\0".encode())
    return h.hexdigest()


CODE_FILES = (
    "fields.py",
    "index.py",
    "i18n.py",
    "links.py",
    "loader.py",
    "model.py",
    "normalize.py",
    "plainyaml.py",
    "schema.py",
    "textsearch.py",
)
"""The modules whose code decides what an index holds: how entries are parsed, validated and
built, how names are normalized, how the index is written. (The scoring in ``lookup.py`` runs
at query time and is not compiled in.)"""


def code_digest() -> str:
    """A digest of the code in :data:`CODE_FILES` and of :data:`FORMAT`."""
    h = blake2b(digest_size=16)
    h.update(str(FORMAT).encode())
    for name in CODE_FILES:
        h.update(name.encode())
        with open(CODE_DIR / name, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _check(
    conn: sqlite3.Connection, directory: Path, names: list[str], code: str, stamps: str
) -> str | None:
    """Whether the index in ``conn`` holds exactly the files ``names`` of ``directory`` now.

    ``stamps`` is :func:`stamps_digest` of the files now. Returns None if the index is stale;
    ``"stamps"`` if the stamps equal the recorded ones (nothing read); ``"remembered"`` if the
    cache folder remembers these stamps as verified for this content; ``"digests"`` if every
    file whose stamp differs had to be read and digested (and all matched).
    """
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    except sqlite3.Error:
        return None
    if meta.get("format") != str(FORMAT) or meta.get("code") != code:
        return None
    if meta.get("stamps") == stamps:
        return "stamps"
    content = meta.get("content")
    if _remembered(directory) == [content, stamps]:
        return "remembered"
    try:
        rows = conn.execute("SELECT name, size, mtime_ns, ctime_ns, ino, digest FROM files")
        stored = {r[0]: (tuple(r[1:5]), r[5]) for r in rows}
    except sqlite3.Error:
        return None
    if sorted(stored) != names:
        return None
    base = os.fspath(directory)
    for name in names:
        stamp, digest = stored[name]
        path = os.path.join(base, name)
        try:
            if _stat(path) == stamp:
                continue
            with open(path, "rb") as f:
                if _digest(f.read()) != digest:
                    return None
        except OSError:
            return None
    _remember(directory, [content, stamps])
    return "digests"


def trigrams(key: str) -> set[str]:
    """The character trigrams of a normalized name or query, padded: "dp" -> {" dp", "dp "}."""
    padded = f" {key} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def _language_names() -> dict[str, dict[str, str]] | None:
    try:
        from .i18n import _project_names

        return _project_names()
    except Exception:  # Babel missing or broken: the CLI falls back to computing them
        return None


_SCHEMA = """
DROP TABLE IF EXISTS meta; DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS entries;
DROP TABLE IF EXISTS names; DROP TABLE IF EXISTS grams; DROP TABLE IF EXISTS gram_counts;
DROP TABLE IF EXISTS idents; DROP TABLE IF EXISTS ident_grams;
DROP TABLE IF EXISTS ident_gram_counts; DROP TABLE IF EXISTS docs;
DROP TABLE IF EXISTS postings; DROP TABLE IF EXISTS stems;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (name TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER,
                    ctime_ns INTEGER, ino INTEGER, digest TEXT);
CREATE TABLE entries (slug TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE names (id INTEGER PRIMARY KEY, key TEXT NOT NULL, text TEXT NOT NULL,
                    slug TEXT NOT NULL, lang TEXT NOT NULL, is_term INTEGER NOT NULL);
CREATE TABLE grams (gram TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (gram, id))
    WITHOUT ROWID;
CREATE TABLE gram_counts (gram TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE idents (id INTEGER PRIMARY KEY, key TEXT NOT NULL, text TEXT NOT NULL,
                     slug TEXT NOT NULL, field TEXT NOT NULL, weight REAL NOT NULL);
CREATE INDEX idents_key ON idents (key);
CREATE TABLE ident_grams (gram TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (gram, id))
    WITHOUT ROWID;
CREATE TABLE ident_gram_counts (gram TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE docs (id INTEGER PRIMARY KEY, slug TEXT NOT NULL, lang TEXT NOT NULL,
                   field TEXT NOT NULL, length INTEGER NOT NULL);
CREATE INDEX docs_slug ON docs (slug, lang);
CREATE TABLE postings (lang TEXT NOT NULL, stem TEXT NOT NULL, doc INTEGER NOT NULL,
                       positions TEXT NOT NULL, PRIMARY KEY (lang, stem, doc)) WITHOUT ROWID;
CREATE TABLE stems (lang TEXT NOT NULL, stem TEXT NOT NULL, df INTEGER NOT NULL,
                    PRIMARY KEY (lang, stem)) WITHOUT ROWID;
"""


def _write_grams(conn: sqlite3.Connection, prefix: str, keys: list[str]) -> None:
    """The trigram postings of ``keys`` (row ids count from 1) and each trigram's count."""
    conn.executemany(
        f"INSERT OR IGNORE INTO {prefix}grams VALUES (?, ?)",
        [(g, i) for i, key in enumerate(keys, 1) for g in trigrams(key)],
    )
    conn.execute(
        f"INSERT INTO {prefix}gram_counts SELECT gram, COUNT(*) FROM {prefix}grams GROUP BY gram"
    )


def _write_texts(conn: sqlite3.Connection, glossary: Any) -> dict[str, list[float]]:
    """The stemmed postings of every text (:mod:`glossary.textsearch`); returns, per language,
    the number of documents and their average length."""
    from .fields import text_docs
    from .textsearch import document_terms

    docs, postings, lengths = [], [], {}
    for doc, (slug, lang, field, text) in enumerate(text_docs(glossary)):
        terms, length = document_terms(lang, text)
        docs.append((doc, slug, lang, field, length))
        lengths.setdefault(lang, []).append(length)
        for stem, positions in terms.items():
            postings.append((lang, stem, doc, " ".join(map(str, positions))))
    conn.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", docs)
    conn.executemany("INSERT INTO postings VALUES (?, ?, ?, ?)", postings)
    conn.execute("INSERT INTO stems SELECT lang, stem, COUNT(*) FROM postings GROUP BY lang, stem")
    return {lang: [len(v), max(1.0, sum(v) / len(v))] for lang, v in lengths.items()}


def compile_into(conn: sqlite3.Connection, glossary: Any, stamps: list[FileStamp]) -> None:
    """Write the index of ``glossary`` (compiled from the files ``stamps``) into ``conn``."""
    from .fields import ident_rows, name_rows
    from .loader import _raw

    conn.executescript(_SCHEMA)
    meta = {
        "format": str(FORMAT),
        "code": code_digest(),
        "content": content_digest(stamps),
        "stamps": _stamps_of(
            (st.name, (st.size, st.mtime_ns, st.ctime_ns, st.ino)) for st in stamps
        ),
    }
    names = _language_names()
    if names:
        meta["language_names"] = json.dumps(names, ensure_ascii=False)
    meta["text_stats"] = json.dumps(_write_texts(conn, glossary))
    conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    conn.executemany(
        "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
        [(s.name, s.size, s.mtime_ns, s.ctime_ns, s.ino, s.digest) for s in stamps],
    )
    rows = name_rows(glossary)
    conn.executemany(
        "INSERT INTO names (id, key, text, slug, lang, is_term) VALUES (?, ?, ?, ?, ?, ?)",
        [(i, *row) for i, row in enumerate(rows, 1)],
    )
    _write_grams(conn, "", [r[0] for r in rows])
    idents = ident_rows(glossary)
    conn.executemany(
        "INSERT INTO idents (id, key, text, slug, field, weight) VALUES (?, ?, ?, ?, ?, ?)",
        [(i, *row) for i, row in enumerate(idents, 1)],
    )
    _write_grams(conn, "ident_", [r[0] for r in idents])
    conn.executemany(
        "INSERT INTO entries VALUES (?, ?)",
        [(e.slug, json.dumps(_raw(e), ensure_ascii=False)) for e in glossary],
    )
    conn.commit()


def _compile(directory: Path, target: Path | None) -> sqlite3.Connection:
    """Load (and validate) ``directory`` and compile its index into ``target`` or memory.

    Raises :class:`glossary.loader.GlossaryError` when the entries are invalid. The file is
    written under a temporary name and renamed, so a concurrent reader never sees half of it.
    """
    from .loader import load_glossary

    stamps = stamp_files(directory, entry_names(directory))
    glossary = load_glossary(directory)
    if target is None:
        conn = sqlite3.connect(":memory:")
        compile_into(conn, glossary, stamps)
        return conn
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        conn = sqlite3.connect(tmp)
        try:
            compile_into(conn, glossary, stamps)
        finally:
            conn.close()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return sqlite3.connect(f"file:{target}?mode=ro", uri=True)


def compile_shipped(directory: Path) -> Path:
    """Compile ``<directory>/_index.sqlite3`` (the wheel build and the scale benchmark use it)."""
    target = Path(directory) / SHIPPED_NAME
    _compile(Path(directory), target).close()
    return target


def _cache_path(directory: Path, suffix: str = ".sqlite3") -> Path:
    tag = zlib.crc32(str(directory.resolve()).encode())
    return cache.cache_dir() / f"index-{tag:08x}{suffix}"


def _open_ro(path: Path) -> sqlite3.Connection | None:
    if not path.is_file():
        return None
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None


def _remembered(directory: Path) -> Any:
    if not cache.enabled():
        return None
    try:
        return json.loads(_cache_path(directory, ".verified.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _remember(directory: Path, value: list[Any]) -> None:
    """Note in the cache folder that files with these stamps were verified for this content."""
    if not cache.enabled():
        return
    target = _cache_path(directory, ".verified.json")
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(value), encoding="utf-8")
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def open_index(directory: Path) -> sqlite3.Connection:
    """A connection to a valid index of ``directory``: shipped, cached, or freshly compiled."""
    directory = Path(directory)
    names = entry_names(directory)
    code = code_digest()
    stamps = stamps_digest(directory, names)
    candidates = [directory / SHIPPED_NAME]
    if cache.enabled():
        candidates.append(_cache_path(directory))
    for path in candidates:
        conn = _open_ro(path)
        if conn is None:
            continue
        if _check(conn, directory, names, code, stamps) is not None:
            return conn
        conn.close()
    if cache.enabled():
        try:
            return _compile(directory, _cache_path(directory))
        except (OSError, sqlite3.Error):
            pass  # read-only or full cache folder: compile in memory instead
    return _compile(directory, None)


def main(argv: list[str] | None = None) -> int:
    """``python -m glossary.index [DIR]``: compile the shipped index of DIR (default: ours)."""
    import sys

    from .loader import ENTRIES_DIR, GlossaryError

    args = sys.argv[1:] if argv is None else argv
    directory = Path(args[0]) if args else ENTRIES_DIR
    try:
        target = compile_shipped(directory)
    except GlossaryError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
