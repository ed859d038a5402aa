"""Stacking: which techniques combine, and what they buy together.

Idea
====
Each technique of this project makes one part of sampling cheaper: fewer or cheaper solver
steps, skipped network evaluations, a smaller or faster network, a student that needs fewer
steps. They act at different levels, so many of them can be applied at once. Whether their
savings *multiply* is an empirical question: two techniques that skip the same work overlap, and
a fixed cost that neither touches caps the product (Amdahl's law, Amdahl 1967). The diffusers
inference-speed tutorial stacks bfloat16, SDPA, ``torch.compile``, fused QKV projections and
int8 quantisation on one model, one after another; this study measures a dozen techniques and
all their compatible pairs on one model, one quality metric and one latency protocol, with
intervals.

Composition
===========
A stack is composed through each technique's public shape, level by level
(`reference.compatibility`):

    model -> network (pruning, low rank, fusion, compile) -> caching -> guidance
          -> forecasting -> sampler

so ``sampler(forecast(guide(cache(compile(fuse(prune(teacher)))))))``. Two techniques that
write the same slot (two models, two samplers, two step skippers) cannot stack; the matrix in
`reference.compatibility` says so, with its reason, and `compose` refuses the stack before it
loads a weight.

The math
========
With every configuration timed in one interleaved comparison against the teacher's DDIM-50,

    speedup(X) = median_t(base) / median_t(X)                                 (1)
    I(S)       = speedup(S) / prod_{e in S} speedup(e)                        (2)
    gain(S'|S) = ln(speedup(S') / speedup(S)) / max(ln q(S'|S), ln 1.01)      (3)

where ``q(S'|S)`` is the paired FDD ratio of ``S'`` to ``S``. ``I`` below 1: the members overlap;
above 1: they help each other. The greedy stack adds, stage by stage, the element of largest
gain (3) among those that keep the FDD ratio to the baseline within the budget.

Primary sources
===============
* G. M. Amdahl, "Validity of the single processor approach to achieving large scale computing
  capabilities", AFIPS 1967: the cap a fixed serial cost puts on any speedup.
* The member techniques' own sources, in their packages (`reference.scheduler_tradeoff`,
  `reference.feature_caching`, `reference.accelerate_method`, `reference.pruning`,
  `reference.conv_fusion`, `reference.timestep_distillation`,
  `reference.consistency_latent_diffusion`, `reference.classifier_guidance`).

Pitfalls
========
* **Interaction intervals are not products of intervals.** The factor (2) is bootstrapped over
  paired rounds of one comparison (`reference.stacking.stats.speedup_product`).
* **Semantics, not crashes, make most incompatibilities.** A forecaster around DeepCache runs,
  but DeepCache then counts the forecaster's calls, not the sampler's steps, so neither
  schedule holds. The matrix refuses such pairs; it does not wait for an exception.
* **Exact elements.** Fusion and compilation change float rounding only. Their configurations
  inherit the quality of their parent, and every one is checked against it on the latency batch.
* **Silent eager fallback.** ``torch.compile`` falls back to eager when it hits its recompile
  limit, and eager output is exact too; `reference.stacking.compile` makes that an error.
* **One operating point.** Every element runs at its technique's headline configuration, at one
  batch size; interaction factors at batch 1 differ (overhead dominates there).

Usage
=====
    python -m reference.stacking --list           # the compatibility matrix
    python -m reference.stacking --quick --bench  # seconds: a smoke run
    glossary bench stacking                       # the standard study (about 40 minutes)
"""

from __future__ import annotations

from reference.lazy import attributes

_EXPORTS: dict[str, str] = {
    "ELEMENTS": "elements",
    "Element": "elements",
    "row_id": "elements",
    "IncompatibleStack": "elements",
    "Pipeline": "pipeline",
    "check": "elements",
    "compose": "compose",
    "compile_blocks": "compile",
    "interaction": "rows",
    "pareto_front": "stats",
    "speedup_product": "stats",
    "gain": "stats",
    "run_study": "study",
    "check_stacking": "provenance",
}

__all__ = sorted(_EXPORTS)


__getattr__ = attributes(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
