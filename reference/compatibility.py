"""Which inference-time techniques compose, and why not: the registry's second table.

`reference.registry` lists the techniques; this module says, for every pair of the ones that
change what runs when a trained model samples, whether they can be stacked, and if not, why not,
in one line. `reference.stacking` refuses an incompatible stack with that line before it loads a
single weight, and its test runs every compatible pair.

Levels
======
A technique acts at one level of the sampling pipeline, and the levels compose in one order:

    model -> network -> caching -> guidance -> forecasting -> sampler

* **model**: which network (and, for a distilled or consistency student, its own sampler);
* **network**: transforms of the module (pruning, low rank, fusion, ``torch.compile``);
* **caching**: builds the denoiser call from the module (DeepCache);
* **guidance**: wraps the denoiser call (classifier guidance);
* **forecasting**: wraps the whole guided step (skips steps by extrapolation);
* **sampler**: the solver and its number of steps.

A **runtime** (the JAX port, the two-rank pipeline) owns the whole loop, so nothing composes
with it. Techniques that act at training time or are a procedure (gradient checkpointing,
mixture of experts, stochastic reparameterization, grid search) are not in any pair.

Why the table is not in ``registry.py``
=======================================
``registry.py`` is hashed into every committed result, so a byte changed there makes all 15
results stale, although no number of theirs depends on this table. Only the stacking study does,
and its result hashes this file. Every slug here is checked against the registry by a test, and a
new technique fails CI until its pairs are classified.

This module imports only the standard library (the ``glossary`` command reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

COMPILE = "torch-compile"
"""The network-level element without a glossary entry of its own: ``torch.compile``."""

LEVELS = ("model", "network", "caching", "guidance", "forecasting", "sampler", "runtime")


@dataclass(frozen=True)
class Role:
    """Where a slug acts: its level, or (``level is None``) why it is not inference-time."""

    slug: str
    level: str | None
    not_inference_time: str | None = None


ROLES: dict[str, Role] = {
    r.slug: r
    for r in (
        Role("pruning", "network"),
        Role("classifier-guidance", "guidance"),
        Role("low-rank-inference", "network"),
        Role("accelerate-method", "forecasting"),
        Role(
            "gradient-checkpointing",
            None,
            "it trades recomputation for activation memory in the backward pass; sampling has none",
        ),
        Role(
            "mixture-of-experts",
            None,
            "experts are an architecture chosen before training, not a transformation "
            "of a trained model",
        ),
        Role("timestep-distillation", "model"),
        Role(
            "stochastic-reparameterization",
            None,
            "it changes the training objective's estimator; a trained model samples the same way",
        ),
        Role("feature-caching", "caching"),
        Role("tpu-deployment", "runtime"),
        Role("scheduler-tradeoff", "sampler"),
        Role("conv-fusion", "network"),
        Role("consistency-latent-diffusion", "model"),
        Role(
            "grid-search",
            None,
            "it is a search procedure; its output is a sampler setting, which the "
            "sampler level covers",
        ),
        Role("async-pipeline", "runtime"),
        Role(COMPILE, "network"),
    )
}
"""Every registered slug plus `COMPILE`, in registry order."""

REASONS: dict[str, str] = {
    "own-sampler": (
        "a consistency student has its own sampler, so a multistep solver does not apply"
    ),
    "own-grid": (
        "the distilled student learned jumps on its own step grid; another solver or step count "
        "leaves them"
    ),
    "one-model": "both replace the teacher by a student; a stack has one model",
    "no-pruned-student": (
        "pruning needs its fine-tune; the zoo has a pruned teacher but no pruned student"
    ),
    "one-skipper": (
        "both decide which steps skip the network; two skip schedules over the same calls keep "
        "neither schedule"
    ),
    "renoised": (
        "each consistency step re-noises with fresh noise; there is no smooth trajectory to "
        "forecast or cache along"
    ),
    "unguided-distillation": (
        "the student was distilled without guidance; guiding it needs guided distillation"
    ),
    "own-loop-jax": (
        "the JAX port runs the whole sampling loop as one XLA program; torch modules and "
        "schedulers cannot enter it"
    ),
    "own-loop-ranks": (
        "the pipeline's ranks run their own sampling loop on a U-Net state dict; other models "
        "and schedulers cannot enter it"
    ),
}
"""Reason id -> the one English line (the en catalog of ``stacking`` repeats it as
``reason.<id>``; es and ru translate it)."""


def _pairs(reason: str, *pairs: tuple[str, str]) -> dict[frozenset[str], str]:
    return {frozenset(p): reason for p in pairs}


_RUNTIMES = ("tpu-deployment", "async-pipeline")

INCOMPATIBLE: dict[frozenset[str], str] = {
    **_pairs("own-sampler", ("consistency-latent-diffusion", "scheduler-tradeoff")),
    **_pairs("own-grid", ("timestep-distillation", "scheduler-tradeoff")),
    **_pairs("one-model", ("timestep-distillation", "consistency-latent-diffusion")),
    **_pairs(
        "no-pruned-student",
        ("pruning", "timestep-distillation"),
        ("pruning", "consistency-latent-diffusion"),
    ),
    **_pairs("one-skipper", ("accelerate-method", "feature-caching")),
    **_pairs(
        "renoised",
        ("consistency-latent-diffusion", "accelerate-method"),
        ("consistency-latent-diffusion", "feature-caching"),
    ),
    **_pairs(
        "unguided-distillation",
        ("timestep-distillation", "classifier-guidance"),
        ("consistency-latent-diffusion", "classifier-guidance"),
    ),
    **{
        frozenset((a, b)): "own-loop-jax"
        for a in ("tpu-deployment",)
        for b in ROLES
        if b != a and ROLES[b].level is not None
    },
    **{
        frozenset((a, b)): "own-loop-ranks"
        for a in ("async-pipeline",)
        for b in ROLES
        if b not in _RUNTIMES and ROLES[b].level is not None
    },
}
"""Pair -> reason id. Every other pair of inference-time slugs is compatible."""


@dataclass(frozen=True)
class Verdict:
    """Whether two slugs stack; ``reason`` (an id of `REASONS`) and ``line`` when they do not."""

    compatible: bool
    reason: str | None = None
    line: str | None = None


def inference_time() -> list[str]:
    """The slugs that change what runs at sampling time, in registry order, then `COMPILE`."""
    return [s for s, r in ROLES.items() if r.level is not None]


def verdict(a: str, b: str) -> Verdict:
    """Do ``a`` and ``b`` stack? ``KeyError`` naming the slug that is not inference-time."""
    for slug in (a, b):
        role = ROLES.get(slug)
        if role is None:
            raise KeyError(f"unknown technique {slug!r}; known: {', '.join(ROLES)}")
        if role.level is None:
            raise KeyError(f"{slug} is not an inference-time technique: {role.not_inference_time}")
    if a == b:
        raise KeyError(f"a pair needs two different techniques, got {a!r} twice")
    reason = INCOMPATIBLE.get(frozenset((a, b)))
    if reason is None:
        return Verdict(True)
    return Verdict(False, reason, REASONS[reason])


def all_pairs() -> list[tuple[str, str, Verdict]]:
    """Every pair of `inference_time` slugs with its verdict (66 pairs for 12 slugs)."""
    return [(a, b, verdict(a, b)) for a, b in combinations(inference_time(), 2)]


def compatible_pairs() -> list[tuple[str, str]]:
    """The pairs that stack, in `all_pairs` order."""
    return [(a, b) for a, b, v in all_pairs() if v.compatible]
