"""The elements of a stack: one per inference-time technique, plus ``torch.compile``.

An element is a few lines that call its technique's public shape (``apply_...``, a class, a
loader) on a `Pipeline` under construction. Nothing here is pair-specific: a stack is its
elements applied in the order of their levels (`Element.order`), and which pairs are refused is
decided by `reference.compatibility` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reference.compatibility import COMPILE, ROLES

if TYPE_CHECKING:
    from .compose import Pipeline, Settings

LEVEL_RANK = {"model": 0, "network": 1, "caching": 2, "guidance": 3, "forecasting": 4, "sampler": 5}
"""Composition order of the levels (`reference.compatibility`); runtimes compose with nothing."""

Apply = Callable[["Pipeline", "Settings"], None]


@dataclass(frozen=True)
class Element:
    """One element: its id (used in row ids), slug, place in the order, and what it does.

    ``exact``: the output equals its parent's to float rounding (fusion, compile), so its quality
    is inherited and only checked. ``writes``: the pipeline slots it replaces; two elements that
    write the same slot cannot stack (a test holds the matrix to that).
    """

    id: str
    slug: str
    rank: int
    exact: bool
    writes: frozenset[str]
    apply: Apply | None

    @property
    def level(self) -> str:
        level = ROLES[self.slug].level
        assert level is not None
        return level

    @property
    def order(self) -> tuple[int, int]:
        return (LEVEL_RANK.get(self.level, 9), self.rank)


def _student(p: Pipeline, s: Settings) -> None:
    from .compose import GridSampler

    p.model_name = f"student{s.student_steps}"
    p.sampler = GridSampler(s.student_steps)


def _consistency(p: Pipeline, s: Settings) -> None:
    from .compose import ConsistencySampler

    p.model_name, p.space = "consistency", "latent"
    p.sampler = ConsistencySampler(s.cm_steps)


def _pruned(p: Pipeline, s: Settings) -> None:
    p.model_name = "pruned_teacher"


def _transform(name: str) -> Apply:
    def apply(p: Pipeline, s: Settings) -> None:
        p.transforms = (*p.transforms, name)

    return apply


def _deepcache(p: Pipeline, s: Settings) -> None:
    from reference.feature_caching import DeepCacheEps

    p.network_eps = lambda m: DeepCacheEps(m, s.cache_interval, s.cache_branch)


def _guidance(p: Pipeline, s: Settings) -> None:
    from reference.classifier_guidance import ClassifierGuidanceConfig, apply_classifier_guidance

    def wrap(eps: Any, models: Any) -> Any:
        config = ClassifierGuidanceConfig(models.classifier(), models.alphas_cumprod(), s.cg_scale)
        return apply_classifier_guidance(eps, config)

    p.wrappers = (*p.wrappers, wrap)


def _forecast(p: Pipeline, s: Settings) -> None:
    from reference.accelerate_method import StepForecastConfig, apply_step_forecasting

    interval, order, warmup = s.forecast
    config = StepForecastConfig(interval, order, warmup, "newton")
    p.wrappers = (*p.wrappers, lambda eps, models: apply_step_forecasting(eps, config))


def _solver(p: Pipeline, s: Settings) -> None:
    from .compose import DiffusersSampler

    p.sampler = DiffusersSampler(s.solver, s.solver_steps)


def _e(id: str, slug: str, rank: int, writes: set[str], apply: Apply | None, exact: bool = False):
    return Element(id, slug, rank, exact, frozenset(writes), apply)


ELEMENTS: dict[str, Element] = {
    e.id: e
    for e in (
        _e("student", "timestep-distillation", 0, {"model", "sampler"}, _student),
        _e("consistency", "consistency-latent-diffusion", 0, {"model", "sampler"}, _consistency),
        _e("pruned", "pruning", 0, {"model"}, _pruned),
        _e("lowrank", "low-rank-inference", 1, set(), _transform("lowrank")),
        _e("fusion", "conv-fusion", 2, set(), _transform("fusion"), exact=True),
        _e("compile", COMPILE, 3, set(), _transform("compile"), exact=True),
        _e("deepcache", "feature-caching", 0, {"network_eps", "skip"}, _deepcache),
        _e("guidance", "classifier-guidance", 0, set(), _guidance),
        _e("forecast", "accelerate-method", 0, {"skip"}, _forecast),
        _e("solver", "scheduler-tradeoff", 0, {"sampler"}, _solver),
        _e("jax", "tpu-deployment", 0, {"loop"}, None),
        _e("ranks", "async-pipeline", 0, {"loop"}, None),
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
