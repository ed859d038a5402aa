"""Which module may import which: the layers of ``reference`` import one way (data, zoo,
harness, techniques, studies), ``reference`` takes from ``glossary`` only the small modules both
need, and no new import cycle appears.

The graph is read from the source (every ``import`` statement, those inside functions too, since
a lazy import is still a dependency), so the test needs no import of torch.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOWER = {
    "reference",
    "reference.data",
    "reference.registry",
    "reference.compatibility",
    "reference.lazy",
}
"""Modules below the harness that it may import (besides the zoo)."""
SHARED = {"glossary.resulttext", "glossary.i18n", "glossary.safewrite"}
"""What ``reference`` takes from ``glossary``: result text, the interface language, the safe
writer (and what they import)."""
KNOWN_CYCLES: set[frozenset[str]] = set()
"""Import cycles that are known and tolerated: none (the zoo's training loop no longer imports
the zoo; it receives its loader)."""


@cache
def modules() -> dict[str, Path]:
    out = {}
    for pkg in ("reference", "glossary"):
        for f in (ROOT / pkg).rglob("*.py"):
            if "locale" in f.parts:
                continue
            name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = f
    return out


def _known(name: str) -> str | None:
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    mods = modules()
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            if mods[module].name != "__init__.py":
                parts = parts[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    return [t for t in map(_known, names) if t is not None and t != module]


@cache
def graph() -> dict[str, frozenset[str]]:
    out = {}
    for module, path in modules().items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom) and getattr(node, "module", "") != (
                "__future__"
            ):
                edges.update(_targets(module, node))
        out[module] = frozenset(edges)
    return out


def cycles() -> set[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    g, index, low, stack, on, found = graph(), {}, {}, [], set(), set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.add(frozenset(comp))

    for v in g:
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read() -> None:
    g = graph()
    assert "reference.harness.integrity" in g
    assert "reference.harness.integrity" in g["reference.stacking.integrity"]


def test_the_harness_imports_no_technique_and_no_study() -> None:
    """A study's own result check is found by name (`integrity.study_check`), not imported."""
    bad = {
        m: sorted(t for t in targets if t.startswith("reference.") and not _below_harness(t))
        for m, targets in graph().items()
        if m.startswith("reference.harness")
    }
    assert {m: t for m, t in bad.items() if t} == {}


def _below_harness(module: str) -> bool:
    return module in LOWER or module.startswith(("reference.harness", "reference.zoo"))


def test_the_zoo_imports_nothing_above_it() -> None:
    bad = {
        m: sorted(t for t in ts if t.startswith("reference.") and not _in_zoo_or_lower(t))
        for m, ts in graph().items()
        if m.startswith("reference.zoo")
    }
    assert {m: t for m, t in bad.items() if t} == {}


def _in_zoo_or_lower(module: str) -> bool:
    return module in LOWER or module.startswith("reference.zoo")


def test_reference_takes_only_the_shared_modules_from_glossary() -> None:
    taken = {
        t for m, ts in graph().items() if m.startswith("reference") for t in ts if "glossary" in t
    }
    assert taken <= SHARED
    # and the shared modules themselves stay small: nothing of the site, lookup or command line
    reach = {t for s in SHARED for t in graph()[s]}
    assert all(t.startswith("glossary.") for t in reach)
    assert not reach & {"glossary.cli", "glossary.lookup", "glossary.site", "glossary.loader"}


def test_no_import_cycle_but_the_known_ones() -> None:
    """A new cycle fails; a known one that is gone must leave the list (so it cannot return)."""
    assert cycles() == KNOWN_CYCLES
