"""Related links between entries: symmetric by default, one-way only where an entry says so.

``related`` lists the entries a reader should look at next. SKOS's ``skos:related`` (which the
SKOS export states) is a symmetric property: if A is related to B, B is related to A. So a link
must be written in both entries, or be marked as *deliberately one-way* by listing the target
in the entry's ``one_way`` field too (a subset of ``related``). One-way links are for hubs that
many techniques point to but that would drown their own list if they linked back to all of
them: the cost measures (FLOPs, NFE) and the backbones techniques act on (U-Net, DiT,
attention). They are exported as ``rdfs:seeAlso`` (not symmetric) instead of ``skos:related``.

:func:`check` reports, for the validator, every link that is neither reciprocated nor marked,
and every mark that is pointless (the target links back, or is not in ``related``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .model import Glossary

Report = Callable[[Any, tuple[str | int, ...], str, str | None], None]


def _slugs(value: Any) -> list[str]:
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


def check(datas: Mapping[str, tuple[Any, dict[str, Any]]], add: Report) -> None:
    """Check link symmetry across entries.

    ``datas`` maps each slug to ``(handle, data)``: the parsed YAML mapping and an opaque
    handle passed back to ``add(handle, path, message, hint)`` for each problem. Links to
    entries that do not exist are reported elsewhere and skipped here.
    """
    for slug, (handle, data) in datas.items():
        related = _slugs(data.get("related"))
        one_way = _slugs(data.get("one_way"))
        for i, target in enumerate(related):
            if target not in datas or target == slug:
                continue
            back = slug in _slugs(datas[target][1].get("related"))
            if not back and target not in one_way:
                add(
                    handle,
                    ("related", i),
                    f"one-way link: '{target}' does not list '{slug}' in related",
                    f"add {slug} to the related list of {target}.yaml, or list {target} under "
                    "one_way if the link is deliberately one-way",
                )
        for i, target in enumerate(one_way):
            if target not in related:
                add(
                    handle,
                    ("one_way", i),
                    f"'{target}' is marked one-way but is not in related",
                    "one_way lists slugs of related that are not linked back; add it to related "
                    "or remove it here",
                )
            elif target in datas and slug in _slugs(datas[target][1].get("related")):
                add(
                    handle,
                    ("one_way", i),
                    f"'{target}' is marked one-way but links back to '{slug}'",
                    "remove it from one_way (the link is symmetric)",
                )


def symmetric(g: Glossary) -> dict[str, list[str]]:
    """Each entry's two-way related entries, both directions stated (for ``skos:related``)."""
    out: dict[str, list[str]] = {e.slug: [] for e in g}

    def link(a: str, b: str) -> None:
        if b not in out[a]:
            out[a].append(b)

    for e in g:
        for target in e.related:
            if target in out and target not in e.one_way:
                link(e.slug, target)
                link(target, e.slug)
    return out


def one_way(g: Glossary) -> Iterable[tuple[str, str]]:
    """The deliberately one-way links (``rdfs:seeAlso`` in SKOS)."""
    for e in g:
        for target in e.one_way:
            if target in g:
                yield e.slug, target
