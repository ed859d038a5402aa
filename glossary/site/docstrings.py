"""Docstrings of the reference implementations, made readable by the site's Markdown.

The docstrings under ``reference/`` are written in a plain-text style that Python-Markdown (which
mkdocstrings renders them with) reads differently from a person:

* setext headings (a title underlined with ``=`` or ``-``), some reflowed so that the underline
  shares a line with the title or with the next sentence (``Pitfalls ======== * The cache``), or
  with a title that runs over two lines;
* bullet lists whose continuation lines are indented by two spaces, and items whose marker
  stands alone on its line: Python-Markdown wants four spaces and text after the marker, and
  otherwise runs the list into one paragraph;
* reStructuredText simple tables (columns ruled with ``=====  =====``).

The files under ``reference/`` are hashed into the benchmark results, so they are not edited:
:class:`ReadableDocstrings`, a griffe extension named in ``mkdocs.yml``, rewrites each docstring
when griffe loads it, before it is parsed, with :func:`readable`: setext headings become ATX
headings (``#`` for ``=``, ``##`` for ``-``; mkdocstrings shifts them under their object's
heading), list items get four-space continuations, tables become Markdown tables (or a code
block when a row does not split into the table's columns). Everything else is left as written.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_RULE = r"(?:={3,}|-{3,})"
# A title and its "=" underline reflowed onto one line: only "=" (a run of dashes in prose is
# a dash), and only an underline exactly as long as the title.
_TITLE_AND_RULE = re.compile(r"^(?P<title>\S.*?) (?P<rule>={3,})(?: +(?P<rest>\S.*))?$")
_RULE_LINE = re.compile(rf"^(?P<rule>{_RULE})(?: +(?P<rest>\S.*))?$")
_TABLE_BORDER = re.compile(r"^=+(?: {2,}=+)+ *$")
_BULLET = re.compile(r"^(?P<marker>[*-]|\d+\.)(?: +(?P<text>\S.*))?$")
_CELL_GAP = re.compile(r" {2,}")


def _heading(rule: str, title: str) -> str:
    return f"{'#' if rule[0] == '=' else '##'} {title.strip()}"


def _paragraph_start(out: list[str]) -> int:
    """Where the paragraph that ends ``out`` begins (after the last blank line)."""
    start = len(out)
    while start > 0 and out[start - 1].strip():
        start -= 1
    return start


def _table(rows: list[str], borders: list[int]) -> list[str]:
    """A reST simple table (``rows``, with the indexes of its border lines) as Markdown."""
    columns = len(rows[borders[0]].split())
    body = [r for i, r in enumerate(rows) if i not in borders and r.strip()]
    cells = [_CELL_GAP.split(r.strip()) for r in body]
    header_rows = borders[1] - borders[0] - 1 if len(borders) >= 3 else 0
    if header_rows != 1 or any(len(c) != columns for c in cells):
        return ["```text", *rows, "```"]
    head, *rest = cells
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * columns]
    return lines + ["| " + " | ".join(row) + " |" for row in rest]


def _take_table(lines: list[str], i: int) -> tuple[list[str], int]:
    """The table that starts at ``lines[i]`` (a border) and the index after it."""
    rows, borders = [], []
    j = i
    while j < len(lines) and lines[j].strip():
        if _TABLE_BORDER.match(lines[j]):
            borders.append(len(rows))
        rows.append(lines[j])
        j += 1
    return _table(rows, borders), j


def _headings_and_tables(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_BORDER.match(line):
            table, i = _take_table(lines, i)
            if out and out[-1].strip():
                out.append("")
            out += [*table, ""]
            continue
        title = _TITLE_AND_RULE.match(line)
        rule = _RULE_LINE.match(line)
        if title and len(title["title"].strip()) == len(title["rule"]):
            out += [_heading(title["rule"], title["title"]), ""]
            out += [title["rest"]] if title["rest"] else []
        elif rule and out and out[-1].strip() and not _BULLET.match(out[-1]):
            start = _paragraph_start(out)
            heading = _heading(rule["rule"], " ".join(x.strip() for x in out[start:]))
            out[start:] = [heading, ""]
            out += [rule["rest"]] if rule["rest"] else []
        else:
            out.append(line)
        i += 1
    return out


def _lists(lines: list[str]) -> list[str]:
    """Four-space continuations for top-level list items; a marker alone on its line takes the
    next line as its text; a list starts after a blank line."""
    out: list[str] = []
    extra = 0  # spaces added to the continuation lines of the current item
    blocks = False  # whether the current item holds a blank line (a code block, a paragraph)
    i = 0
    while i < len(lines):
        line = lines[i]
        bullet = _BULLET.match(line)
        if bullet and (bullet["text"] or (i + 1 < len(lines) and lines[i + 1].startswith(" "))):
            marker = bullet["marker"]
            text = bullet["text"]
            if text is None:  # "*" alone, its text on the next, indented line
                i += 1
                text = lines[i].strip()
            if out and out[-1].strip() and (extra == 0 or blocks):
                out.append("")  # a list starts after a blank line; so does an item after blocks
            out.append(f"{marker} {text}")
            extra, blocks = max(0, 4 - (len(marker) + 1)), False
        elif extra and line.startswith(" "):
            out.append(" " * extra + line)
        elif extra and not line.strip():
            blocks = True
            out.append(line)
        else:
            if line.strip():
                extra = 0
            out.append(line)
        i += 1
    return out


def readable(text: str) -> str:
    """A docstring rewritten for Python-Markdown (see the module docstring)."""
    lines = text.split("\n")
    return "\n".join(_lists(_headings_and_tables(lines)))


class ReadableDocstrings(griffe.Extension):
    """Rewrite every docstring griffe loads with :func:`readable`, before it is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = readable(obj.docstring.value)
