"""Markdown and HTML pieces of the generated pages, and the escaping that keeps entry text data.

Entry text is data, not markup. Markdown in definitions, notes and explanations is rendered, but
raw HTML, attribute lists (``{: onclick=...}``), entity tricks and links with schemes other than
http, https and mailto are neutralised before the text reaches Markdown (:func:`escape_markdown`);
single-line fields (terms, aliases, titles, names) are escaped completely (:func:`escape_text`).
Text inside fenced code blocks and code spans is left alone, since Markdown escapes it itself.
Limitation: an *indented* code block in an entry shows escaped entities; entries use fenced
blocks.

Pitfall: a code span here must be a code span for the renderer, or its content reaches the page
as prose, unescaped. Python-Markdown pairs a backtick run with the next run of the same length,
across lines within a paragraph, and when a run has no partner it falls back to the longest
shorter run (two backticks, "a", a backtick, "{", a backtick render as the code of a backtick
and "a", then the prose "{" and a backtick). So spans are kept only where every backtick run of
the text pairs with a run of its length on its own line and none follows a backslash; otherwise
the whole text is escaped as prose (its code then shows entities, never markup).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

_ENTITY_RE = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_TEXT_SPECIALS_RE = re.compile(r"([\\`*_\[\]{}|#!])")
_FENCE_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_TICKS_RE = re.compile(r"`+")
_AUTOLINK_RE = re.compile(r"<(https?://[^\s<>\"']+)>")
_INLINE_LINK_RE = re.compile(r"\]\(([^)]*)\)")
_REF_DEF_RE = re.compile(r"^(\s{0,3})\[([^\]]+)\]:[ \t]*(\S+)")
_BLOCKQUOTE_RE = re.compile(r"^(\s{0,3}(?:>[ \t]?)+)")
_SCHEME_RE = re.compile(r"^<?([^/?#]*?):")


def escape_text(text: str) -> str:
    """Escape a single-line field so that Markdown shows it verbatim and emits no HTML."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _TEXT_SPECIALS_RE.sub(r"\\\1", " ".join(text.split()))


def _unsafe_target(target: str) -> bool:
    """Whether a link target has a scheme other than http, https or mailto.

    Browsers ignore tabs, newlines and spaces inside a scheme (``java\\tscript:``), so those are
    removed before the scheme is read.
    """
    squeezed = re.sub(r"[\s\x00-\x1f]+", "", target).lower()
    match = _SCHEME_RE.match(squeezed)
    return bool(match) and match.group(1) not in SAFE_SCHEMES


def _escape_prose(line: str) -> str:
    """Escape one line of Markdown prose outside code (see :func:`escape_markdown`)."""
    quote = _BLOCKQUOTE_RE.match(line)
    prefix = quote.group(1) if quote else ""
    body = line[len(prefix) :]
    autolinks: list[str] = []

    def keep_autolink(m: re.Match[str]) -> str:
        autolinks.append(m.group(0))
        return f"\x00{len(autolinks) - 1}\x00"

    body = _AUTOLINK_RE.sub(keep_autolink, body)
    body = _ENTITY_RE.sub("&amp;", body)
    body = body.replace("<", "&lt;").replace(">", "&gt;").replace("{", "&#123;")
    body = _INLINE_LINK_RE.sub(
        lambda m: "]&#40;" + m.group(1) + ")" if _unsafe_target(m.group(1)) else m.group(0), body
    )
    body = re.sub("\x00(\\d+)\x00", lambda m: autolinks[int(m.group(1))], body)
    ref = _REF_DEF_RE.match(body)
    if ref and _unsafe_target(ref.group(3)):
        body = body.replace("[", "&#91;", 1)
    return prefix + body


def _code_spans(line: str) -> list[tuple[int, int]] | None:
    """The code spans of one line as the renderer pairs them: each backtick run with the next run
    of the same length. ``None`` when a run has no partner on the line or follows a backslash
    (then the renderer may pair across lines or shift the pairs; see the Pitfall above)."""
    runs = list(_TICKS_RE.finditer(line))
    if any(r.start() > 0 and line[r.start() - 1] == "\\" for r in runs):
        return None
    spans, i = [], 0
    while i < len(runs):
        width = len(runs[i].group())
        j = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == width), None)
        if j is None:
            return None
        spans.append((runs[i].start(), runs[j].end()))
        i = j + 1
    return spans


def _escape_outside(line: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out.append(_escape_prose(line[pos:start]))
        out.append(line[start:end])
        pos = end
    out.append(_escape_prose(line[pos:]))
    return "".join(out)


def escape_markdown(text: str) -> str:
    """Neutralise raw HTML and unsafe Markdown in an entry's Markdown field.

    Outside fenced code blocks and code spans: ``<`` and ``>`` become entities (blockquote
    markers at the start of a line survive), entity-like ``&...;`` sequences are escaped so they
    print literally, ``{`` is escaped so ``attr_list`` cannot add attributes, and links whose
    scheme is not http, https or mailto lose their link syntax. ``<https://...>`` autolinks
    stay. Fence info strings are reduced to a bare language name (no attributes).
    """
    lines: list[str] = []
    fence: str | None = None
    spans = _prose_spans(text)
    for line in text.splitlines():
        m = _FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group("fence")
            lang = re.match(r"\s*([\w+-]*)", m.group("info"))
            lines.append(f"{m.group('indent')}{fence}{lang.group(1) if lang else ''}")
        elif fence is not None:
            closing = m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence)
            if closing and not m.group("info").strip():
                fence = None
            lines.append(line)
        else:
            lines.append(_escape_outside(line, spans.get(line, []) if spans is not None else []))
    if fence is not None:
        lines.append(fence)
    return "\n".join(lines)


def _prose_spans(text: str) -> dict[str, list[tuple[int, int]]] | None:
    """The code spans of every line outside fenced blocks, by line, or ``None`` when one line's
    backticks do not pair on that line (then no span is kept anywhere: see the Pitfall above)."""
    found: dict[str, list[tuple[int, int]]] = {}
    fence: str | None = None
    for line in text.splitlines():
        m = _FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group("fence")
        elif fence is not None:
            if m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence):
                fence = None if not m.group("info").strip() else fence
        else:
            spans = _code_spans(line)
            if spans is None:
                return None
            found[line] = spans
    return found


def safe_url(url: str) -> str | None:
    """An http(s) URL made safe for a Markdown link target, or None for other schemes.

    Characters that could end the link or start markup (spaces, quotes, brackets, parentheses,
    backticks) are percent-encoded.
    """
    if _unsafe_target(url) or not re.match(r"(?i)^https?://", url.strip()):
        return None
    return quote(url.strip(), safe=":/?#@!$&*+,;=%~-._[]'")


def heading(level: int, title: str, anchor: str, *, searchable: bool = True) -> str:
    """A Markdown heading with an explicit id (attr_list), so anchors do not depend on the
    language: Russian titles would otherwise get ``_1``-style ids. ``searchable=False`` keeps
    its section out of the site's search index (Material's ``data-search-exclude``)."""
    exclude = "" if searchable else " data-search-exclude"
    return f"{'#' * level} {title} {{#{anchor}{exclude}}}"


def admonition(kind: str, title: str) -> str:
    """The first line of an admonition block with a (translated, trusted) title."""
    return f'!!! {kind} "{title}"'


def table_row(cells: Iterable[str]) -> str:
    """A Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def indent(text: str, prefix: str = "    ") -> str:
    """Indent every non-empty line (for admonition bodies)."""
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def html_attr(text: str) -> str:
    """Escape ``text`` for an HTML attribute or element written by the generator itself."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )
