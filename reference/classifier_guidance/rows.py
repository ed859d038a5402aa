"""The rows the benchmark compares, how each samples, and how each is scored.

Idea
====
Every row solves the harness's one problem, the probability-flow ODE of the *clipped* denoiser
(`reference.harness.ode`), with DDIM on the trailing timesteps, from the same noise and target
labels on every seed. Only the noise prediction that enters the clipped x̂₀ differs:

    conditional (baseline):   ε_θ(x_t, t, y)                                               (1)
    unguided:                 ε_θ(x_t, t, ∅)                                               (2)
    classifier guidance:      ε_θ(x_t, t, ∅) - √(1-ᾱ_t) · s · ∇ log p_φ(y | x_t, t)        (3)
    classifier-free guidance: ε_θ(x_t, t, ∅) + w · (ε_θ(x_t, t, y) - ε_θ(x_t, t, ∅))      (4)

(3) is Dhariwal & Nichol 2021 (arXiv:2105.05233), Algorithm 2, through
`reference.classifier_guidance.guidance`; (4) is Ho & Salimans 2022 (arXiv:2207.12598), eq. 6,
through `reference.harness.sampling.guided_eps`; w = 1 is (1).

The matched-cost control runs (4) with the DDIM steps whose FLOPs per sample equal those of (3)
at the main steps, `reference.classifier_guidance.study.matched_steps`:

    k = round(K · F_cg / F_cfg)                                                            (5)

with ``F`` the FLOPs of one step per sample (torch's FLOP counter, the classifier's backward pass
included).

Scores
======
Guidance changes the distribution to sample (that is its purpose), so no row is judged by its
distance to the conditional ODE's solution: every row is scored on the held-out digits
(`reference.harness.scores.held_out_score`: FDD and class-weighted KID against the reference
half, class accuracy on the targets, within-class diversity). The unguided row (2) ignores its
targets, so it is scored without them (`unguided_score`): FDD, and diversity grouped by the
predicted class; no accuracy, and no KID, whose class weights would read the targets.

Pitfalls
========
* Class accuracy is scored by the clean zoo classifier, not by the noisy classifier that guides:
  a guided sample that fools its own guide is not counted as correct.
* (3) and (4) are deterministic given the noise and the labels: the pairing of seeds holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from reference.harness.builders import counted_variant
from reference.harness.compare import Variant

from .config import BASELINE_STEPS, Config


def row_id(method: str, scale: float, steps: int) -> str:
    """``ddim50``, ``uncond``, ``cg-2``, ``cfg-1.5`` at the main steps; ``ddim5``, ``cg-2-nfe5``,
    ``cfg-1.5-nfe5`` on the NFE curves."""
    if method == "conditional":
        return f"ddim{steps}"
    if method == "unguided":
        return "uncond" if steps == BASELINE_STEPS else f"uncond-nfe{steps}"
    short = "cg" if method == "classifier-guidance" else "cfg"
    at = "" if steps == BASELINE_STEPS else f"-nfe{steps}"
    return f"{short}-{scale:g}{at}"


@dataclass(frozen=True)
class Sampler:
    """The zoo teacher and the noisy classifier, loaded once, and the ε of each method."""

    models: Any  # reference.classifier_guidance.study.Models

    def eps(self, method: str, scale: float) -> tuple[Callable[..., torch.Tensor], float]:
        """The ε function and the classifier-free scale ``ode.solve`` applies: (1)-(4)."""
        from reference.harness import model_eps_fn

        from .guidance import apply_classifier_guidance

        if method == "classifier-guidance":
            return apply_classifier_guidance(self.models.unet, self.models.guidance(scale)), 1.0
        w = scale if method in ("classifier-free-guidance", "cfg-same-cost") else 1.0
        return model_eps_fn(self.models.unet), w

    def run(
        self, method: str, scale: float, steps: int, noise: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, int]:
        """``steps`` DDIM steps on the clipped ODE; returns x₀ and the counted evaluations."""
        from reference.harness import count_nfe, ode

        eps, w = self.eps(method, scale)
        counter = count_nfe(eps)
        y = None if method == "unguided" else labels  # (2): the null class
        x = ode.solve(counter, noise, sampler="ddim", steps=steps, labels=y, guidance_scale=w)
        return x, counter.nfe


def unguided_score(n: int) -> Callable[[torch.Tensor, object], dict[str, float]]:
    """The score of the unguided row: FDD against the reference half and the diversity grouped
    by predicted class (its samples ignore the targets; see the module docstring)."""
    from reference.harness.quality import (
        classifier_features,
        frechet_distance,
        within_class_diversity,
    )
    from reference.harness.scores import gaussian_fit, reference_set

    def one(x: torch.Tensor, same_seed: object) -> dict[str, float]:
        f = gaussian_fit(classifier_features(x).numpy())
        return {
            "fd_digits": frechet_distance(f, reference_set().stats),
            "diversity": within_class_diversity(x, None),
        }

    return one


def variant(
    cfg: Config,
    sampler: Sampler,
    method: str,
    scale: float,
    steps: int,
    role: str,
    *,
    timed: bool = False,
    id: str | None = None,
    flops: float | None = None,
) -> Variant:
    """One row: ``method`` at ``scale`` with ``steps`` steps on a seed's noise (its evaluations
    counted, ``nfe``), timed on the latency batch if ``timed``; ``flops`` per step and sample
    gives its GFLOPs per sample."""
    config: dict[str, Any] = {"method": method, "scale": scale, "steps": steps}
    return counted_variant(
        cfg,
        id or row_id(method, scale, steps),
        config,
        role,
        lambda noise, labels: sampler.run(method, scale, steps, noise, labels),
        counted="nfe",
        timed=timed,
        facts={} if flops is None else {"gflops": flops * steps / 1e9},
        grad=method == "classifier-guidance",  # the classifier's gradient, (3)
        score=unguided_score(cfg.n_quality) if method == "unguided" else None,
    )


def variants(cfg: Config, sampler: Sampler, flops: dict[str, float], matched: int) -> list[Variant]:
    """The baseline, the unguided model, classifier guidance at every scale, classifier-free
    guidance at every scale and at the matched cost (5), then the NFE curves."""
    k, s, w = BASELINE_STEPS, cfg.cg_scale, cfg.cfg_scale
    f_cond, f_cg, f_cfg = flops["uncond"], flops["cg"], flops["cfg"]
    out = [
        variant(cfg, sampler, "conditional", 1.0, k, "baseline", timed=True, flops=f_cond),
        variant(cfg, sampler, "unguided", 0.0, k, "reference", flops=f_cond),
    ]
    out += [
        variant(cfg, sampler, "classifier-guidance", g, k, "technique", timed=g == s, flops=f_cg)
        for g in cfg.cg_scales
    ]
    out += [
        variant(
            cfg, sampler, "classifier-free-guidance", g, k, "control", timed=g == w, flops=f_cfg
        )
        for g in cfg.cfg_scales
    ]
    out.append(
        variant(
            cfg,
            sampler,
            "cfg-same-cost",
            w,
            matched,
            "control",
            timed=True,
            id="cfg-matched",
            flops=f_cfg,
        )
    )
    for n in sorted(cfg.nfe_grid):
        out += [
            variant(cfg, sampler, "conditional", 1.0, n, "reference"),
            variant(cfg, sampler, "classifier-guidance", s, n, "reference"),
            variant(cfg, sampler, "classifier-free-guidance", w, n, "reference"),
        ]
    return out
