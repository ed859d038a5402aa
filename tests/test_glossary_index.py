"""The compiled lookup index (glossary/index.py): used only while it matches the entries."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from glossary_support import ROOT, copy_valid, edit, private_cache

from glossary import cli, index
from glossary.compiled import open_compiled
from glossary.lookup import decide

_cache = pytest.fixture(autouse=True, scope="module")(private_cache)


def lookup(capsys: pytest.CaptureFixture[str], d: Path, *argv: str) -> tuple[int, str]:
    code = cli.main(["--entries", str(d), "lookup", *argv])
    return code, capsys.readouterr().out


def test_shipped_index_is_used_and_never_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLOSSARY_CACHE", "0")
    d = copy_valid(tmp_path)
    shipped = index.compile_shipped(d)
    conn = index.open_index(d)
    assert conn.execute("PRAGMA database_list").fetchone()[2] == str(shipped)
    assert open_compiled(d).search("poda de red")[0].slug == "pruning"
    # an edit with the same size and a restored mtime is still caught by the digest
    path = d / "pruning.yaml"
    stat = path.stat()
    edit(d, "pruning", "Poda de Red", "Poda de Rex")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    names, code = index.entry_names(d), index.code_digest()
    stamps = index.stamps_digest(d, names)
    assert index._check(sqlite3.connect(shipped), d, names, code, stamps) is None
    assert open_compiled(d).search("poda de rex")[0].exact
    # a new file, and a removed one, invalidate it too
    (d / "ema.yaml").rename(d / "ema2.yaml")
    with pytest.raises(Exception, match="does not match the file name"):
        open_compiled(d)


def test_cache_index_is_compiled_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLOSSARY_CACHE_DIR", str(tmp_path / "cache"))
    d = copy_valid(tmp_path)
    open_compiled(d)
    (cached,) = (tmp_path / "cache").glob("index-*.sqlite3")
    before = cached.stat().st_mtime_ns
    open_compiled(d)
    assert cached.stat().st_mtime_ns == before


def test_ambiguous_names_and_lang(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = copy_valid(tmp_path)
    edit(
        d,
        "ddim",
        'aliases: ["DDIM"]\n    definition: Muestreador determinista',
        'aliases: ["DDIM", "Zorro"]\n    definition: Muestreador determinista',
    )
    edit(d, "ema", '"EMA", "weight averaging"', '"EMA", "weight averaging", "zorro"')
    code, out = lookup(capsys, d, "zorro")
    assert code == 1 and "ambiguous" in out and "ddim" in out and "ema" in out
    code, out = lookup(capsys, d, "zorro", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ambiguous"] and doc["match"] is None
    assert {c["slug"] for c in doc["candidates"][:2]} == {"ddim", "ema"}
    code, out = lookup(capsys, d, "zorro", "--lang", "es")
    assert code == 0 and out.startswith("ddim")


def test_off_topic_query_is_no_match(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = copy_valid(tmp_path)
    code, out = lookup(capsys, d, "chocolate cake")
    assert code == 1 and out.startswith("No entry matches 'chocolate cake'.")
    assert decide(open_compiled(d).search("chocolate cake")).kind == "none"


@pytest.mark.parametrize(
    ("query", "allowed"),
    [("poda", []), ("unimportant channels", ["Stemmer"])],  # a name; a phrase of a text
)
def test_lookup_from_the_index_imports_no_yaml(tmp_path: Path, query: str, allowed: list) -> None:
    """Only a query that reaches the texts loads the stemmer; none loads YAML, Babel or torch."""
    d = copy_valid(tmp_path)
    index.compile_shipped(d)
    code = (
        "import sys, io, contextlib\n"
        "from glossary.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['--entries', {str(d)!r}, 'lookup', {query!r}]) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'numpy', 'diffusers', 'yaml', 'icu', 'babel', 'Stemmer')))\n"
    )
    env = dict(os.environ, GLOSSARY_CACHE="0")
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(result.stdout.replace("'", '"')) == allowed


def test_index_holds_identifiers_and_texts(tmp_path: Path) -> None:
    """The compiled index answers the second and third tiers as the in-memory one does."""
    from glossary.loader import load_glossary
    from glossary.lookup import Index

    d = copy_valid(tmp_path)
    compiled, memory = open_compiled(d), Index(load_glossary(d))
    for query in ("EMAModel", "Structural Pruning", "unimportant channels", "сокращает время"):
        a, b = compiled.search(query, limit=3), memory.search(query, limit=3)
        assert [(c.slug, c.where, round(c.score, 6)) for c in a] == [
            (c.slug, c.where, round(c.score, 6)) for c in b
        ], query
        assert a[0].name.text == b[0].name.text


def test_reinstalled_files_are_digested_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an install (new inodes and mtimes) the digests are checked once, then remembered."""
    monkeypatch.setenv("GLOSSARY_CACHE_DIR", str(tmp_path / "cache"))
    d = copy_valid(tmp_path)
    index.compile_shipped(d)
    for path in d.glob("*.yaml"):
        path.write_bytes(path.read_bytes())  # same bytes, new stamp
    calls = []
    real = index._digest
    monkeypatch.setattr(index, "_digest", lambda data: calls.append(1) or real(data))
    index.open_index(d).close()
    assert len(calls) == len(list(d.glob("*.yaml")))
    calls.clear()
    conn = index.open_index(d)
    assert calls == [] and conn.execute("PRAGMA database_list").fetchone()[2].endswith(
        index.SHIPPED_NAME
    )
