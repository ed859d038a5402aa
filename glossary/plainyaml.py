"""Plain YAML: a SafeLoader that refuses anchors, aliases and tags, and records key lines.

Anchors and aliases let one node appear in many places (and, nested, expand a small file into a
huge document: the "billion laughs" attack); tags select constructors. Glossary entries need
neither, and reviewers should see every value where it is used, so :class:`PlainLoader` raises
:class:`Refused` on all three. :func:`parse_yaml` also returns the 1-based line of every key and
list item, and every key that a mapping repeats (YAML would silently keep the last one), so that
:mod:`glossary.loader` can point each problem at its line.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, SequenceNode

PathKey = tuple[str | int, ...]


class Refused(yaml.YAMLError):
    def __init__(self, message: str, mark: yaml.Mark | None, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark
        self.hint = hint


class PlainLoader(yaml.SafeLoader):
    """A SafeLoader for plain YAML: anchors, aliases and tags raise instead of loading."""

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:  # type: ignore[override]
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            raise Refused(
                f"YAML alias *{event.anchor} is not allowed",
                event.start_mark,
                "write the value out in full; entries are plain YAML",
            )
        if isinstance(event, ScalarEvent | CollectionStartEvent):
            if event.anchor is not None:
                raise Refused(
                    f"YAML anchor &{event.anchor} is not allowed",
                    event.start_mark,
                    "remove the anchor; entries are plain YAML",
                )
            if event.tag is not None:
                raise Refused(
                    f"YAML tag {event.tag} is not allowed",
                    event.start_mark,
                    "remove the tag; quote the value if it must be a string",
                )
        return super().compose_node(parent, index)


def _line_map(node: Node, path: PathKey, lines: dict[PathKey, int]) -> None:
    """Record the 1-based line of every key (mappings) and item (sequences) under ``node``."""
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node.value, str) else str(key_node.value)
            sub = (*path, key)
            lines.setdefault(sub, key_node.start_mark.line + 1)
            _line_map(value_node, sub, lines)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            sub = (*path, i)
            lines[sub] = item.start_mark.line + 1
            _line_map(item, sub, lines)


def _duplicate_keys(node: Node, path: PathKey, out: list[tuple[PathKey, int]]) -> None:
    if isinstance(node, MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                out.append(((*path, key), key_node.start_mark.line + 1))
            seen.add(key)
            _duplicate_keys(value_node, (*path, key), out)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            _duplicate_keys(item, (*path, i), out)


def too_deep(text: str, limit: int) -> int | None:
    """The 1-based line where nesting first exceeds ``limit`` levels, or ``None``.

    Scans the event stream iteratively, before anything recursive (composing nodes, building the
    line map) could exhaust Python's stack on a small but deeply nested file.
    """
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > limit:
                return event.start_mark.line + 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


def parse_yaml(text: str) -> tuple[Any, dict[PathKey, int], list[tuple[PathKey, int]]]:
    """Parse plain YAML; return the data, its line map and duplicate keys (path, line).

    Raises ``yaml.YAMLError`` (with ``problem_mark``/``mark``) on invalid or non-plain YAML.
    """
    loader = PlainLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, []
        lines: dict[PathKey, int] = {(): node.start_mark.line + 1}
        _line_map(node, (), lines)
        dups: list[tuple[PathKey, int]] = []
        _duplicate_keys(node, (), dups)
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    return data, lines, dups
