"""Build a stack: check it against the matrix, then apply its elements level by level.

Each element is applied to a `Pipeline` under construction by a few lines that call its
technique's public shape (``apply_...``, a class, a loader), in the order of the levels
(`reference.stacking.elements.ordered`): model, network, caching, guidance, forecasting,
sampler. Nothing here is pair-specific: which pairs are refused is decided by
`reference.compatibility` alone (`reference.stacking.elements.check`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .elements import IncompatibleStack, check, ordered
from .pipeline import ConsistencySampler, DiffusersSampler, GridSampler, Models, Pipeline

if TYPE_CHECKING:
    from .settings import Config as Settings

__all__ = ["APPLY", "IncompatibleStack", "Models", "Pipeline", "check", "compose"]

Apply = Callable[[Pipeline, "Settings"], None]


def _student(p: Pipeline, s: Settings) -> None:
    p.model_name = f"student{s.student_steps}"
    p.sampler = GridSampler(s.student_steps)


def _consistency(p: Pipeline, s: Settings) -> None:
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
    p.sampler = DiffusersSampler(s.solver, s.solver_steps)


APPLY: dict[str, Apply] = {
    "student": _student,
    "consistency": _consistency,
    "pruned": _pruned,
    "lowrank": _transform("lowrank"),
    "fusion": _transform("fusion"),
    "compile": _transform("compile"),
    "deepcache": _deepcache,
    "guidance": _guidance,
    "forecast": _forecast,
    "solver": _solver,
}
"""How each element that composes is applied (the runtimes own their loop and have none)."""


def compose(members: Sequence[str], settings: Settings) -> Pipeline:
    """The `Pipeline` of ``members`` (any order): checked, then applied level by level."""
    check(members)
    p = Pipeline(tuple(ordered(list(members))), DiffusersSampler("ddim", settings.base_steps))
    for m in p.members:
        APPLY[m](p, settings)
    return p
