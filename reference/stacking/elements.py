"""The elements of a stack: one per inference-time technique, plus ``torch.compile``.

An element is data: its technique, its level and rank in the composition order, the pipeline
slots it writes, whether it is exact. How it is applied to a `Pipeline` (a few lines that call
its technique's public shape) is in `reference.stacking.compose`; `check` refuses an
impossible stack here, torch-free, before any model is loaded. Nothing here is pair-specific: a
stack is its elements applied in the order of their levels (`Element.order`), and which pairs
are refused is decided by `reference.compatibility` alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reference.compatibility import COMPILE, ROLES, verdict

LEVEL_RANK = {"model": 0, "network": 1, "caching": 2, "guidance": 3, "forecasting": 4, "sampler": 5}
"""Composition order of the levels (`reference.compatibility`); runtimes compose with nothing."""


@dataclass(frozen=True)
class Element:
    """One element: its id (used in row ids), slug, place in the order, and what it does.

    ``exact``: the output equals its parent's to float rounding (fusion, compile), so its quality
    is inherited and only checked. ``writes``: the pipeline slots it replaces; two elements that
    write the same slot cannot stack (a test holds the matrix to that). ``owns_loop``: a runtime
    (JAX, the rank pipeline) that owns the whole sampling loop and composes with nothing.
    """

    id: str
    slug: str
    rank: int
    exact: bool
    writes: frozenset[str]
    owns_loop: bool

    @property
    def level(self) -> str:
        level = ROLES[self.slug].level
        assert level is not None
        return level

    @property
    def order(self) -> tuple[int, int]:
        return (LEVEL_RANK.get(self.level, 9), self.rank)


def _e(id: str, slug: str, rank: int, writes: set[str], exact: bool = False, loop: bool = False):
    return Element(id, slug, rank, exact, frozenset(writes), loop)


ELEMENTS: dict[str, Element] = {
    e.id: e
    for e in (
        _e("student", "timestep-distillation", 0, {"model", "sampler"}),
        _e("consistency", "consistency-latent-diffusion", 0, {"model", "sampler"}),
        _e("pruned", "pruning", 0, {"model"}),
        _e("lowrank", "low-rank-inference", 1, set()),
        _e("fusion", "conv-fusion", 2, set(), exact=True),
        _e("compile", COMPILE, 3, set(), exact=True),
        _e("deepcache", "feature-caching", 0, {"network_eps", "skip"}),
        _e("guidance", "classifier-guidance", 0, set()),
        _e("forecast", "accelerate-method", 0, {"skip"}),
        _e("solver", "scheduler-tradeoff", 0, {"sampler"}),
        _e("jax", "tpu-deployment", 0, {"loop"}, loop=True),
        _e("ranks", "async-pipeline", 0, {"loop"}, loop=True),
    )
}
"""Every inference-time slug of `reference.compatibility` as an element, by id."""

BY_SLUG: dict[str, Element] = {e.slug: e for e in ELEMENTS.values()}


def element(id: str) -> Element:
    """The element ``id``; ``KeyError`` naming the known ids otherwise."""
    try:
        return ELEMENTS[id]
    except KeyError:
        raise KeyError(f"unknown element {id!r}; known: {', '.join(ELEMENTS)}") from None


def ordered(members: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``members`` in composition order (level, then rank inside the level)."""
    return tuple(sorted(members, key=lambda m: element(m).order))


def row_id(members: tuple[str, ...] | list[str]) -> str:
    """The row id of a stack: its members in composition order joined by ``.``."""
    return ".".join(ordered(members)) or "base"


def quality_members(members: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The members that change the samples (the exact ones removed): whose quality it inherits."""
    return tuple(m for m in ordered(members) if not element(m).exact)


class IncompatibleStack(ValueError):
    """A stack the compatibility matrix refuses; ``str(exc)`` is the matrix's one line."""

    def __init__(self, pair: tuple[str, str], reason: str, line: str) -> None:
        super().__init__(line)
        self.pair, self.reason, self.line = pair, reason, line


def check(members: Sequence[str]) -> None:
    """Refuse an impossible stack before any model is loaded.

    ``KeyError`` for an unknown element, ``ValueError`` for a repeated one or a runtime element
    (it owns the whole loop), `IncompatibleStack` with the matrix's line for a refused pair."""
    ids = [element(m).id for m in members]
    if len(set(ids)) != len(ids):
        raise ValueError(f"stack {'+'.join(ids)}: an element appears twice")
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            v = verdict(ELEMENTS[a].slug, ELEMENTS[b].slug)
            if not v.compatible:
                assert v.reason is not None and v.line is not None
                raise IncompatibleStack((a, b), v.reason, v.line)
            clash = ELEMENTS[a].writes & ELEMENTS[b].writes
            if clash:  # the matrix must never allow this (tests/test_stacking_matrix.py)
                raise ValueError(f"{a} and {b} both write the {sorted(clash)[0]} slot")
    for m in ids:
        if ELEMENTS[m].owns_loop:
            raise ValueError(
                f"{ELEMENTS[m].slug} owns the whole sampling loop; run python -m "
                f"reference.{ELEMENTS[m].slug.replace('-', '_')} on its own"
            )
