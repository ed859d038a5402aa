"""The "On a diffusers model" section of a technique page: the one call that applies the
technique to a diffusers model or pipeline.

Every inference-time technique has a public shape in its package's ``production`` module (a
frozen ``XConfig`` and ``apply_x(target, config)`` returning a removable handle). This module
lists, per entry, which calls a page shows (`CALLS`: the function, its module and a short
snippet), and reads the facts from the code itself: the classes a call supports are the value of
the module's supported-class constant, and the refused ones are the other production classes of
``reference.zoo.shapes.CLASS_OF``. Both are read with :mod:`ast` from the source files, so the
site generator imports neither torch nor diffusers, and a page can never list a class the code
does not accept.

The words (what a call does, why a class is refused) come from the site's gettext domain
``production`` (``glossary/locale/<lang>/LC_MESSAGES/production.po``, symbolic ids); the code
stays code and is not translated.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from glossary.resulttext import ResultText
from glossary.site.formatting import Translate
from glossary.site.markdown import heading

REPO = Path(__file__).resolve().parents[2]
DOMAIN = "production"
ANCHOR = "diffusers"
SHAPES_MODULE = "reference.zoo.shapes"
ALL_CLASSES = "CLASS_OF"
SCHEDULERS_MODULE = "reference.scheduler_tradeoff.production"
FLOW_MATCHING = "FLOW_MATCHING_PREFIX"


class CodeReadError(ValueError):
    """A constant a page needs could not be read from the source (one line)."""


@dataclass(frozen=True)
class Call:
    """One ``apply_x`` call a technique page shows.

    ``key``: the message id ``does.<key>`` (what it does). ``function`` and ``config``: the names
    the snippet imports from ``module`` (``config`` empty for a call that takes none).
    ``snippet``: the lines after the import. ``supported``: the name of the
    module's supported-class constant, or ``None`` for a scheduler swap (any pipeline whose
    scheduler is not a flow-matching one). ``reasons``: refused class -> reason id
    (``reason.<id>``); a test checks that it names exactly the classes the code refuses.
    """

    key: str
    module: str
    function: str
    config: str
    snippet: str
    supported: str | None
    reasons: dict[str, str] = field(default_factory=dict)


_TRANSFORMERS = (
    "DiTTransformer2DModel",
    "PixArtTransformer2DModel",
    "SD3Transformer2DModel",
    "FluxTransformer2DModel",
)
_UNETS = ("UNet2DModel", "UNet2DConditionModel")


def _each(classes: tuple[str, ...], reason: str) -> dict[str, str]:
    return dict.fromkeys(classes, reason)


CALLS: dict[str, tuple[Call, ...]] = {
    "feature-caching": (
        Call(
            "deepcache",
            "reference.feature_caching.production",
            "apply_deepcache",
            "DeepCacheConfig",
            "handle = apply_deepcache(pipe, DeepCacheConfig(interval=3, branch=1))\n"
            "images = pipe(prompt).images\n"
            "handle.remove()",
            "UNETS",
            _each(_TRANSFORMERS, "no-skip-branch"),
        ),
        Call(
            "first-block-cache",
            "reference.feature_caching.production",
            "apply_first_block_cache",
            "FirstBlockCacheConfig",
            "with apply_first_block_cache(pipe, FirstBlockCacheConfig(threshold=0.05)):\n"
            "    images = pipe(prompt).images",
            "TRANSFORMERS",
            _each(_UNETS, "no-block-chain"),
        ),
    ),
    "accelerate-method": (
        Call(
            "step-forecasting",
            "reference.accelerate_method.production",
            "apply_step_forecasting",
            "ForecastConfig",
            "with apply_step_forecasting(pipe, ForecastConfig(interval=3, order=1, warmup=2)):\n"
            "    images = pipe(prompt).images",
            "CLASSES",
        ),
    ),
    "low-rank-inference": (
        Call(
            "low-rank",
            "reference.low_rank_inference.production",
            "apply_low_rank",
            "LowRankConfig",
            "handle = apply_low_rank(pipe, LowRankConfig(rank_fraction=0.5))\n"
            "images = pipe(prompt).images\n"
            "handle.remove()",
            "SUPPORTED",
        ),
    ),
    "conv-fusion": (
        Call(
            "fusion",
            "reference.conv_fusion.production",
            "apply_fusion",
            "FusionConfig",
            "with apply_fusion(pipe, FusionConfig(qkv=True, norm=True)):\n"
            "    images = pipe(prompt).images",
            "SUPPORTED",
        ),
    ),
    "tpu-deployment": (
        Call(
            "regional-compile",
            "reference.tpu_deployment.production",
            "apply_regional_compile",
            "RegionalCompileConfig",
            'with apply_regional_compile(pipe, RegionalCompileConfig(backend="inductor")):\n'
            "    images = pipe(prompt).images",
            "SUPPORTED",
        ),
    ),
    "pruning": (
        Call(
            "structured-pruning",
            "reference.pruning.production",
            "apply_structured_pruning",
            "StructuredPruningConfig",
            "original = pipe.unet\n"
            "pipe.unet = apply_structured_pruning(pipe, StructuredPruningConfig(ratio=0.3))\n"
            "images = pipe(prompt).images\n"
            "pipe.unet = original",
            "SUPPORTED",
            _each(_TRANSFORMERS, "pruning-transformer"),
        ),
    ),
    "classifier-guidance": (
        Call(
            "cfg",
            "reference.classifier_guidance.production",
            "apply_cfg",
            "CFGConfig",
            "with apply_cfg(pipe, CFGConfig(guidance_scale=4.0)):\n"
            "    images = pipe(class_labels, guidance_scale=1.0).images",
            "CFG_SUPPORTED",
            {"FluxTransformer2DModel": "guidance-distilled"},
        ),
        Call(
            "classifier-guidance",
            "reference.classifier_guidance.production",
            "apply_classifier_guidance",
            "ClassifierGuidanceConfig",
            "with apply_classifier_guidance(pipe, ClassifierGuidanceConfig(2.0, classifier)):\n"
            "    images = pipe(class_labels).images",
            "CG_SUPPORTED",
            _each(("UNet2DConditionModel", *_TRANSFORMERS[1:]), "text-conditioned"),
        ),
    ),
    "scheduler-tradeoff": (
        Call(
            "scheduler",
            "reference.scheduler_tradeoff.production",
            "apply_scheduler",
            "SchedulerConfig",
            'with apply_scheduler(pipe, SchedulerConfig("unipc", steps=8)):\n'
            "    images = pipe(prompt).images",
            None,
        ),
    ),
    "grid-search": (
        Call(
            "grid-choice",
            "reference.grid_search.production",
            "apply_grid_choice",
            "",
            "with apply_grid_choice(pipe) as handle:\n"
            '    images = pipe(prompt, guidance_scale=handle.state["guidance_scale"]).images',
            None,
        ),
    ),
    "timestep-distillation": (
        Call(
            "distilled-sampler",
            "reference.timestep_distillation.production",
            "apply_distilled_sampler",
            "DistilledSamplerConfig",
            "config = DistilledSamplerConfig(steps=4, student=student)\n"
            "with apply_distilled_sampler(pipe, config):\n"
            "    images = pipe(prompt).images",
            None,
        ),
    ),
    "consistency-latent-diffusion": (
        Call(
            "consistency-sampler",
            "reference.consistency_latent_diffusion.production",
            "apply_consistency_sampler",
            "ConsistencySamplerConfig",
            "config = ConsistencySamplerConfig(steps=2, student=consistency_model)\n"
            "with apply_consistency_sampler(pipe, config):\n"
            "    images = pipe(prompt).images",
            None,
        ),
    ),
    "async-pipeline": (
        Call(
            "async-pipeline",
            "reference.async_pipeline.production",
            "apply_async_pipeline",
            "AsyncPipelineConfig",
            "with apply_async_pipeline(pipe, AsyncPipelineConfig(stages=2, warmup=2)):\n"
            '    latents = pipe(prompt_embeds=embeds, output_type="latent").images',
            "SUPPORTED",
            {"UNet2DModel": "async-zoo-unet", **_each(_TRANSFORMERS, "async-transformer")},
        ),
        Call(
            "run-async",
            "reference.async_pipeline.production_launch",
            "run_async",
            "AsyncPipelineConfig",
            "config = AsyncPipelineConfig(stages=2, warmup=2)\n"
            'run = run_async("unet2d-condition", config, steps=20, world_size=2)\n'
            "latents, seconds = run.latents, run.wall_s",
            "SUPPORTED",
            {"UNet2DModel": "async-zoo-unet", **_each(_TRANSFORMERS, "async-transformer")},
        ),
    ),
}
"""The calls each technique page shows, by entry slug; a technique not listed has none."""


# ------------------------------------------------------------------------ reading the code


def source_file(module: str) -> Path:
    """The source file of ``module`` (a module or a package's ``__init__``) in the checkout."""
    base = REPO.joinpath(*module.split("."))
    path = base.with_suffix(".py")
    return path if path.is_file() else base / "__init__.py"


@cache
def _tree(module: str) -> ast.Module:
    path = source_file(module)
    if not path.is_file():
        raise CodeReadError(f"{module}: no source file at {path}")
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` inside ``module`` names."""
    if not node.level:
        return node.module or ""
    package = module.split(".")
    if source_file(module).name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def top_level_names(module: str) -> set[str]:
    """Every name ``module`` defines or imports at its top level."""
    names: set[str] = set()
    for node in _tree(module).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _assigned(node: ast.stmt, name: str) -> ast.expr | None:
    """The value ``node`` assigns to ``name`` (``NAME = ...`` or ``NAME: T = ...``), if any."""
    if isinstance(node, ast.Assign):
        hit = any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        return node.value if hit else None
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.value if node.target.id == name else None
    return None


def constant(module: str, name: str) -> Any:
    """The value of the top-level constant ``name`` of ``module``, read from its source.

    Understood: literals (strings, numbers, tuples, lists, dicts), other constants by name (also
    imported ones) and ``tuple(X.values())`` / ``tuple(X)``; anything else is a `CodeReadError`.
    """
    for node in reversed(_tree(module).body):
        value = _assigned(node, name)
        if value is not None:
            return _value(module, value)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return constant(_absolute(module, node), alias.name)
    raise CodeReadError(f"{module}: no top-level constant {name}")


def _value(module: str, node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_value(module, e) for e in node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {
            _value(module, k): _value(module, v)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    if isinstance(node, ast.Name):
        return constant(module, node.id)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "tuple"
        and len(node.args) == 1
    ):
        arg = node.args[0]
        if (
            isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Attribute)
            and arg.func.attr == "values"
        ):
            return tuple(dict(_value(module, arg.func.value)).values())
        return tuple(_value(module, arg))
    raise CodeReadError(f"{module}: cannot read {ast.unparse(node)} without running it")


def production_classes() -> tuple[str, ...]:
    """Every production class the reference implementations know (``CLASS_OF``'s values)."""
    return tuple(dict(constant(SHAPES_MODULE, ALL_CLASSES)).values())


def supported_classes(call: Call) -> tuple[str, ...]:
    """The classes ``call`` accepts, as its module's constant says (empty for a scheduler swap,
    which takes any pipeline whose scheduler is not a flow-matching one)."""
    if call.supported is None:
        return ()
    return tuple(str(c) for c in constant(call.module, call.supported))


def refused_classes(call: Call) -> tuple[str, ...]:
    """The production classes ``call`` refuses: all of them but the supported ones."""
    if call.supported is None:
        return ()
    supported = set(supported_classes(call))
    return tuple(c for c in production_classes() if c not in supported)


def flow_matching_prefix() -> str:
    """The class-name prefix of the schedulers every scheduler swap refuses."""
    return str(constant(SCHEDULERS_MODULE, FLOW_MATCHING))


# ------------------------------------------------------------------------------- the section


def snippet(call: Call) -> str:
    """The call's Python snippet: its import from the real module, then the call."""
    names = sorted({n for n in (call.config, call.function) if n})
    return f"from {call.module} import {', '.join(names)}\n\n{call.snippet}"


def _codes(classes: tuple[str, ...]) -> str:
    return ", ".join(f"`{c}`" for c in classes)


def class_lines(call: Call, lang: str, _: Translate) -> list[str]:
    """The supported classes and the refused ones with their reasons, as list items."""
    words = ResultText(DOMAIN, lang)
    accepts, refuses = _("Supported"), _("Refused")
    if call.supported is None:
        prefix = flow_matching_prefix()
        return [
            f"- {accepts}: {words.message('supported.ddpm-scheduler')}",
            f"- {refuses}: {words.message('refused.prefix', {'prefix': f'`{prefix}`'})} — "
            + words.message("reason.flow-matching"),
        ]
    lines = [f"- {accepts}: {_codes(supported_classes(call))}."]
    refused = refused_classes(call)
    if not refused:
        return [*lines, f"- {refuses}: {words.message('refused.none')}"]
    by_reason: dict[str, list[str]] = {}
    for cls in refused:
        if cls not in call.reasons:
            raise CodeReadError(f"{call.module}: {cls} is refused, and no page says why")
        by_reason.setdefault(call.reasons[cls], []).append(cls)
    for reason, classes in by_reason.items():
        text = words.message(f"reason.{reason}")
        lines.append(f"- {refuses}: {_codes(tuple(classes))} — {text}")
    return lines


def production_section(slug: str, lang: str, _: Translate) -> list[str]:
    """The page's "On a diffusers model" section, or nothing for a technique without a
    production shape."""
    calls = CALLS.get(slug, ())
    if not calls:
        return []
    words = ResultText(DOMAIN, lang)
    lines = [heading(2, _("On a diffusers model"), ANCHOR, searchable=False), ""]
    for call in calls:
        lines += [f"`{call.function}`: {words.message(f'does.{call.key}')}", ""]
        lines += ["```python", snippet(call), "```", ""]
        lines += [*class_lines(call, lang, _), ""]
    return lines
