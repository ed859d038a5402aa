"""The technique registry: the one place where a glossary slug meets its reference package.

Every technique of the glossary that has a reference implementation is listed here, once, by
its slug. Its package name follows from the slug by one rule: ``reference.`` + the slug with
hyphens replaced by underscores (``accelerate-method`` -> ``reference.accelerate_method``). The
glossary entries (``reference: module:``), ``glossary bench``, ``glossary run``, the site, the
zoo's student models and the tests all derive from this table, and a test fails if an entry and
the registry disagree.

This module imports nothing but the standard library, so that the ``glossary`` command can
read it on its torch-free lookup path.

Layers
======
The ``reference`` package imports one way:

    reference.data  ->  reference.zoo  ->  reference.harness  ->  reference.<technique>

Four technique packages train students that live in the zoo. The zoo does not import them; it
asks this registry which ``zoo_specs`` module of which technique adds models (a plugin hook
that is resolved only when such a model is built or trained).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SLUG_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
REFERENCE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Technique:
    """One registered technique.

    ``zoo_specs`` names the submodule of the technique's package whose ``ZOO_SPECS`` dict adds
    student models to the zoo (``None`` when the technique trains nothing for the zoo).
    """

    slug: str
    zoo_specs: str | None = None

    @property
    def package(self) -> str:
        """The import path of the reference package, derived from the slug."""
        return package_of(self.slug)

    @property
    def directory(self) -> Path:
        """The package's folder in this checkout."""
        return REFERENCE_DIR / self.package.removeprefix("reference.")


TECHNIQUES: tuple[Technique, ...] = (
    Technique("pruning", zoo_specs="zoo_specs"),
    Technique("classifier-guidance"),
    Technique("low-rank-inference"),
    Technique("accelerate-method"),
    Technique("gradient-checkpointing"),
    Technique("mixture-of-experts", zoo_specs="zoo_specs"),
    Technique("timestep-distillation", zoo_specs="train"),
    Technique("stochastic-reparameterization"),
    Technique("feature-caching"),
    Technique("tpu-deployment"),
    Technique("scheduler-tradeoff"),
    Technique("conv-fusion"),
    Technique("consistency-latent-diffusion", zoo_specs="train"),
    Technique("grid-search"),
    Technique("async-pipeline"),
)
"""The 15 techniques in the order of the user's glossary."""

BY_SLUG: dict[str, Technique] = {t.slug: t for t in TECHNIQUES}

STUDIES: tuple[Technique, ...] = (
    Technique("baseline-sanity"),
    Technique("realshape"),
    Technique("realshape-gpu"),
)
"""The studies: measured comparisons with the technique command line and a committed result,
but no glossary entry (`reference.harness.study`). The stacking study has its own command line
(`reference.stacking`)."""


def package_of(slug: str) -> str:
    """``accelerate-method`` -> ``reference.accelerate_method`` (the one naming rule)."""
    if not SLUG_RE.fullmatch(slug):
        raise ValueError(f"not a slug: {slug!r} (lowercase ascii words joined by hyphens)")
    return "reference." + slug.replace("-", "_")


def get(slug: str) -> Technique:
    """The registered technique ``slug``; ``KeyError`` naming the known slugs otherwise."""
    try:
        return BY_SLUG[slug]
    except KeyError:
        raise KeyError(f"unknown technique {slug!r}; known: {', '.join(BY_SLUG)}") from None


def by_package(package: str) -> Technique | None:
    """The technique whose package is ``package`` (``None`` if it is not registered)."""
    return next((t for t in TECHNIQUES if t.package == package), None)


def study_by_package(package: str) -> Technique | None:
    """The study whose package is ``package`` (``None`` if there is none)."""
    return next((s for s in STUDIES if s.package == package), None)


def slugs() -> list[str]:
    """The registered slugs, in registry order."""
    return [t.slug for t in TECHNIQUES]


def zoo_extension_modules() -> list[str]:
    """Modules whose ``ZOO_SPECS`` add technique students to the zoo."""
    return [f"{t.package}.{t.zoo_specs}" for t in TECHNIQUES if t.zoo_specs]
