"""Property test: randomly broken copies of the valid fixture entries are reported, never crash.

Each example copies ``tests/fixtures/entries_valid`` and breaks one to three of its files (or
copies one under another name): a required key deleted, a key repeated, a value of another
type, a value nested deeply, raw bytes injected (NUL, invalid UTF-8, control characters), an id
with a trailing line break or space. ``glossary validate`` then runs in-process, and:

* nothing raises: validation returns problems and the command an exit status;
* the status is 1 whenever a mutation made a file invalid, 0 after harmless edits (a BOM, CRLF
  line ends, a comment);
* every problem is one line that starts with the name of a file of the folder;
* every broken file is named by a problem (one broken file does not hide the others).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from glossary_support import VALID, private_cache
from hypothesis import example, given, settings
from hypothesis import strategies as st

from glossary import cli, loader, schema

_cache = pytest.fixture(autouse=True, scope="module")(private_cache)

STEMS = sorted(p.stem for p in VALID.glob("*.yaml"))
Data = Any
PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Mutation:
    """One edit of one file: ``apply`` maps the file's bytes to new bytes."""

    what: str
    stem: str
    breaks: bool | None  # True: makes the file invalid; False: harmless; None: either
    apply: Callable[[bytes], bytes]
    new_name: str | None = None  # set: write the result as this file, keep the original


# --------------------------------------------------------------------------- data helpers


def _load(raw: bytes) -> Data:
    return yaml.safe_load(raw.decode("utf-8"))


def _dump(data: Data) -> bytes:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=10**6).encode()


def _paths(node: Data, path: PathKey = ()) -> Iterator[PathKey]:
    """Every key path and list-item path under ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        yield (*path, key)
        if isinstance(value, dict | list):
            yield from _paths(value, (*path, key))


def _get(data: Data, path: PathKey) -> Data:
    for part in path:
        data = data[part]
    return data


def _set(data: Data, path: PathKey, value: Data) -> None:
    _get(data, path[:-1])[path[-1]] = value


def _fields(path: PathKey) -> tuple[schema.Field, ...] | None:
    """The schema fields of the mapping at ``path`` (``None``: not a schema mapping)."""
    shape = tuple("#" if isinstance(p, int) else p for p in path)
    if len(shape) == 2 and shape[0] == "lang":
        return schema.LANG_FIELDS
    return {
        (): schema.TOP_FIELDS,
        ("reference",): schema.REFERENCE_FIELDS,
        ("libraries", "#"): schema.LIBRARY_FIELDS,
        ("sources", "#"): schema.SOURCE_FIELDS,
    }.get(shape)


def _required(path: PathKey) -> bool:
    """Whether the key at ``path`` must be present (a required field or a language)."""
    if path[:-1] == ("lang",):
        return True
    fields = _fields(path[:-1])
    return fields is not None and any(f.name == path[-1] and f.required for f in fields)


def _kind(value: Data) -> str:
    return {bool: "bool", int: "int", str: "str", list: "list", dict: "dict"}[type(value)]


IDS = {"slug", "module", "arxiv", "doi", "url"}
"""Keys whose values are identifiers matched in full by a pattern."""


def _is_id(path: PathKey, value: Data) -> bool:
    in_list = len(path) == 2 and path[0] in ("related", "one_way")
    return isinstance(value, str) and (path[-1] in IDS or in_list)


# -------------------------------------------------------------------------------- mutations

RETYPED: dict[str, list[Data]] = {
    "str": [7, ["x"], {"x": "y"}, None, datetime.date(2020, 1, 1), float("nan"), 10**40],
    "int": ["2020", [2020], {"y": 1}, 2020.5],
    "bool": ["true", [True], 1],
    "list": ["a", 3, {"a": "b"}],
    "dict": ["a", 3, ["a"]],
}
CONTROL = [chr(c) for c in [*range(1, 9), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, 0x80, 0x9F]]
BAD_UTF8 = [b"\x80", b"\xbf", b"\xc0", b"\xf8", b"\xfe", b"\xff", b"\xed\xa0\x80"]
TRAILING = ["\n", "\r", "\r\n", "\t", " ", "\u2028", "\x85", "\x00", "\x1b"]
ESCAPED = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\n", "\r", "\x1b[31m", "\u202e"]
APPENDED = [
    "? [a, b]\n: c\n",  # a key that is a list
    "x: &a 1\ny: *a\n",  # an anchor and an alias
    "z: !!python/name:os.system x\n",  # a tag
    "---\nslug: other\n",  # a second document
    "1: one\n",
    "null: nothing\n",
    "true: yes\n",
    "2020-01-01: a date\n",
    "{a: b}: c\n",
    "lang: {}\n",  # repeats a key
    "slug\n",  # not a mapping line
    "  - misplaced\n",
    '"\\ud800": lone surrogate\n',
]
"""YAML appended to a file: each breaks it (a key outside the schema, or non-plain YAML)."""
ODD_NAMES = ["copy", "Pruning", "ñandú", "two words", "x\ny", "a\u2028b", "-", "pruning2"]


def _raw(stem: str) -> bytes:
    return (VALID / f"{stem}.yaml").read_bytes()


def _edited(what: str, stem: str, breaks: bool | None, edit: Callable[[Data], None]) -> Mutation:
    """The file's data changed by ``edit`` and written back with ``yaml.safe_dump``."""
    data = _load(_raw(stem))
    edit(data)
    out = _dump(data)
    return Mutation(what, stem, breaks, lambda _: out)


def delete_key(stem: str, path: PathKey) -> Mutation:
    return _edited(f"delete {path}", stem, True, lambda d: _get(d, path[:-1]).pop(path[-1]))


def retype(stem: str, path: PathKey, value: Data) -> Mutation:
    return _edited(f"retype {path} to {value!r}", stem, True, lambda d: _set(d, path, value))


def nest(stem: str, path: PathKey, depth: int, flow: str) -> Mutation:
    """``path`` holds lists (``flow`` ``[``) or mappings (``{a: ``) ``depth`` levels deep."""
    close = "]" if flow == "[" else "}"
    nested = flow * depth + ("" if flow == "[" else "{}") + close * depth
    data = _load(_raw(stem))
    _set(data, path, "NESTED-HERE")
    out = _dump(data).replace(b"NESTED-HERE", nested.encode())
    return Mutation(f"nest {path} {depth} deep", stem, True, lambda _: out)


def id_suffix(stem: str, path: PathKey, suffix: str) -> Mutation:
    what = f"id {path} + {suffix!r}"
    return _edited(what, stem, True, lambda d: _set(d, path, _get(d, path) + suffix))


def rename_key(stem: str, path: PathKey, suffix: str) -> Mutation:
    """The key at ``path`` with ``suffix`` appended (an unknown key; the real one missing)."""

    def edit(data: Data) -> None:
        parent = _get(data, path[:-1])
        renamed = {(k + suffix if k == path[-1] else k): v for k, v in parent.items()}
        parent.clear()
        parent.update(renamed)

    return _edited(f"key {path} + {suffix!r}", stem, True, edit)


def insert_text(stem: str, path: PathKey, at: int, char: str) -> Mutation:
    """``char`` inside the text at ``path`` (escaped by the dump): valid or not, never a crash."""
    what = f"text {path} + {char!r} at {at}"
    return _edited(
        what, stem, None, lambda d: _set(d, path, _get(d, path)[:at] + char + _get(d, path)[at:])
    )


def repeat_line(stem: str, line: int) -> Mutation:
    """The dumped file with its 0-based ``line`` (one ``key: scalar``) written twice."""
    lines = _dump(_load(_raw(stem))).decode().splitlines(keepends=True)
    out = "".join([*lines[: line + 1], lines[line], *lines[line + 1 :]]).encode()
    return Mutation(f"repeat line {line + 1}", stem, True, lambda _: out)


def insert_bytes(stem: str, at: int, raw: bytes, breaks: bool = True) -> Mutation:
    """``raw`` inserted before the character ``at`` of the original file."""
    text = _raw(stem).decode("utf-8")
    out = text[:at].encode() + raw + text[at:].encode()
    return Mutation(f"bytes {raw!r} at char {at}", stem, breaks, lambda _: out)


def harmless(stem: str, what: str) -> Mutation:
    edits: dict[str, Callable[[bytes], bytes]] = {
        "bom": lambda b: b"\xef\xbb\xbf" + b,
        "crlf": lambda b: b.replace(b"\n", b"\r\n"),
        "comment": lambda b: b + b"# a comment\n",
        "dump": lambda b: _dump(_load(b)),
    }
    return Mutation(what, stem, False, edits[what])


def copy_as(stem: str, name: str) -> Mutation:
    """The whole file again under ``name`` (a duplicate slug; a slug that is not the name)."""
    return Mutation(f"copy as {name!r}", stem, True, lambda b: b, new_name=name)


@st.composite
def data_mutation(draw: st.DrawFn, stem: str) -> Mutation:
    """Delete a required key, retype or deeply nest a value, break an id, escape a character."""
    data = _load(_raw(stem))
    paths = list(_paths(data))
    action = draw(st.sampled_from(["delete", "retype", "nest", "id", "key", "text"]))
    if action == "delete":
        return delete_key(stem, draw(st.sampled_from([p for p in paths if _required(p)])))
    if action == "id":
        path = draw(st.sampled_from([p for p in paths if _is_id(p, _get(data, p))]))
        return id_suffix(stem, path, draw(st.sampled_from(TRAILING)))
    if action == "key":
        path = draw(st.sampled_from([p for p in paths if isinstance(p[-1], str)]))
        return rename_key(stem, path, draw(st.sampled_from(ESCAPED)))
    if action == "text":
        path = draw(st.sampled_from([p for p in paths if isinstance(_get(data, p), str)]))
        at = draw(st.integers(0, len(_get(data, path))))
        return insert_text(stem, path, at, draw(st.sampled_from(ESCAPED)))
    path = draw(st.sampled_from(paths))
    if action == "retype":
        return retype(stem, path, draw(st.sampled_from(RETYPED[_kind(_get(data, path))])))
    return nest(stem, path, draw(st.integers(2, 3000)), draw(st.sampled_from(["[", "{a: "])))


def _single_line_keys(text: str) -> list[int]:
    """0-based lines that hold one whole ``key: scalar`` of a block mapping."""
    lines = text.splitlines()
    found: list[int] = []
    todo = [yaml.compose(text)]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                line = key.start_mark.line
                if (
                    isinstance(value, yaml.ScalarNode)
                    and value.end_mark.line == line
                    and not lines[line][: key.start_mark.column].strip()
                ):
                    found.append(line)
                todo.append(value)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
    return sorted(found)


@st.composite
def text_mutation(draw: st.DrawFn, stem: str) -> Mutation:
    """Repeat a key, inject bytes (NUL, invalid UTF-8, a control character), or a harmless edit."""
    action = draw(st.sampled_from(["repeat", "append", "nul", "utf8", "control", "harmless"]))
    if action == "repeat":
        dumped = _dump(_load(_raw(stem))).decode()
        return repeat_line(stem, draw(st.sampled_from(_single_line_keys(dumped))))
    if action == "append":
        snippet = draw(st.sampled_from(APPENDED))
        return Mutation(f"append {snippet!r}", stem, True, lambda b: b + snippet.encode())
    if action == "harmless":
        return harmless(stem, draw(st.sampled_from(["bom", "crlf", "comment", "dump"])))
    at = draw(st.integers(0, len(_raw(stem).decode("utf-8"))))
    if action == "nul":
        return insert_bytes(stem, at, b"\x00")
    if action == "utf8":
        return insert_bytes(stem, at, draw(st.sampled_from(BAD_UTF8)))
    return insert_bytes(stem, at, draw(st.sampled_from(CONTROL)).encode())


@st.composite
def copy_mutation(draw: st.DrawFn, stem: str) -> Mutation:
    name = draw(st.sampled_from(ODD_NAMES).filter(lambda n: n not in STEMS))
    return copy_as(stem, name + draw(st.sampled_from([".yaml", ".yml"])))


@st.composite
def mutations(draw: st.DrawFn) -> list[Mutation]:
    stems = draw(st.lists(st.sampled_from(STEMS), min_size=1, max_size=3, unique=True))
    out: list[Mutation] = []
    for stem in stems:
        kind = draw(st.sampled_from(["data", "text", "copy"]))
        if kind == "data":
            out.append(draw(data_mutation(stem)))
        elif kind == "text":
            out.append(draw(text_mutation(stem)))
        else:
            out.append(draw(copy_mutation(stem)))
    return out


# -------------------------------------------------------------------------------- the check


def _write(folder: Path, found: list[Mutation]) -> dict[str, bool | None]:
    """Apply the mutations to a copy in ``folder``; return each touched file's ``breaks``."""
    shutil.copytree(VALID, folder, dirs_exist_ok=True)
    touched: dict[str, bool | None] = {}
    for m in found:
        name = m.new_name or f"{m.stem}.yaml"
        (folder / name).write_bytes(m.apply((VALID / f"{m.stem}.yaml").read_bytes()))
        touched[name] = m.breaks
    return touched


@contextlib.contextmanager
def _recorded_validate() -> Iterator[list[Any]]:
    """Record what ``loader.validate`` returns or raises while the command runs it."""
    seen: list[Any] = []
    real = loader.validate

    def recording(directory: Path | None = None) -> list[loader.Problem]:
        try:
            seen.append(real(directory))
        except BaseException as exc:
            seen.append(exc)
            raise
        return seen[-1]

    loader.validate = recording  # type: ignore[assignment]
    try:
        yield seen
    finally:
        loader.validate = real  # type: ignore[assignment]


def _run_validate(folder: Path) -> tuple[int, list[str], str, list[loader.Problem]]:
    out, err = io.StringIO(), io.StringIO()
    with (
        _recorded_validate() as seen,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = cli.main(["validate", str(folder)])
    if seen and isinstance(seen[0], BaseException):
        raise seen[0]  # with its traceback: validation must never raise
    assert len(seen) == 1, err.getvalue()
    return code, out.getvalue().split("\n")[:-1], err.getvalue(), seen[0]


def check(found: list[Mutation]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "entries"
        touched = _write(folder, found)
        code, lines, err, problems = _run_validate(folder)
    broken = {name for name, breaks in touched.items() if breaks}
    named = {Path(p.path).name for p in problems}
    shown = {Path(loader.Problem(str(folder / n), 1, "", "").path).name for n in broken}
    assert "glossary: error" not in err, err
    if broken:
        assert code == 1, [m.what for m in found]
        assert lines == [str(p) for p in problems]
    elif all(breaks is False for breaks in touched.values()):
        assert (code, problems) == (0, []), [str(p) for p in problems]
    for p in problems:
        text = str(p)
        assert len(text.splitlines()) == 1 and text == text.strip(), repr(text)
        assert text.startswith(f"{p.path}:{p.line}: {p.field}: "), text
        assert p.path.startswith(str(folder)), text
        assert len(p.field.splitlines()) == 1 and len(p.path.splitlines()) == 1, repr(text)
    missing = shown - named  # each broken file named as a problem shows it (escaped)
    assert not missing, ([m.what for m in found], [str(p) for p in problems])
    assert len(problems) >= len(broken)


@settings(max_examples=100, deadline=None)
@given(mutations())
@example([id_suffix("model-capacity", ("sources", 0, "url"), "\x00")])  # a NUL in a URL
@example([rename_key("ddim", ("slug",), "\u2028")])  # a line separator in a field name
@example([copy_as("ddim", "x\ny.yaml")])  # a line break in a file name
def test_broken_entries_are_reported_one_line_each(found: list[Mutation]) -> None:
    check(found)


def test_the_unbroken_copy_is_valid_after_a_round_trip() -> None:
    # The data mutations write the file back with yaml.safe_dump; unmutated, that is valid.
    check([harmless(stem, "dump") for stem in STEMS])
