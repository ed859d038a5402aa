"""The guidance study: sample classifier guidance, classifier-free guidance and the unguided
model at every scale and NFE from the same noise, and time one step of each.

``measure(cfg)`` takes the benchmark's :class:`~reference.classifier_guidance.bench.Config`
(any object with its fields) and returns a :class:`Study`; :mod:`.bench` turns it into rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from reference.data import NULL_CLASS
from reference.harness.sampling import frozen

from .guidance import ClassifierGuidanceConfig, apply_classifier_guidance

Key = tuple[str, float, int]
"""``(method, scale, steps)``; method ``"cg"``, ``"cfg"`` (classifier-free) or ``"uncond"``."""


class Models:
    """The zoo teacher, the noisy classifier and the schedule, loaded once (frozen)."""

    def __init__(self) -> None:
        from reference import zoo

        self.unet = frozen(zoo.load_teacher())
        self.classifier = frozen(zoo.load_noisy_classifier())
        self.alphas_cumprod = zoo.teacher_scheduler().alphas_cumprod

    def guidance(self, scale: float) -> ClassifierGuidanceConfig:
        return ClassifierGuidanceConfig(self.classifier, self.alphas_cumprod, scale)

    def sample(
        self, method: str, scale: float, noise: torch.Tensor, steps: int, labels: torch.Tensor
    ) -> torch.Tensor:
        """``method``: ``"cg"`` (classifier guidance at ``scale``), ``"cfg"`` (classifier-free
        guidance at ``scale``, 1 = conditional) or ``"uncond"`` (null class)."""
        from reference import zoo
        from reference.harness import model_eps_fn, sample

        sched = zoo.teacher_scheduler()
        if method == "cg":
            guided = apply_classifier_guidance(self.unet, self.guidance(scale))
            return sample(guided, sched, noise, steps=steps, labels=labels)
        eps = model_eps_fn(self.unet)
        if method == "cfg":
            return sample(eps, sched, noise, steps=steps, labels=labels, guidance_scale=scale)
        if method == "uncond":
            return sample(eps, sched, noise, steps=steps)
        raise ValueError(f"unknown method {method!r}")

    def step_fns(self, batch: int, seed: int) -> dict[str, Callable[[], torch.Tensor]]:
        """One denoising evaluation of each method at ``t = 500`` on ``batch`` samples."""
        from reference.harness import class_labels, guided_eps, make_noise, model_eps_fn

        x = make_noise(batch, seed)
        t = torch.full((batch,), 500, dtype=torch.long)
        y = class_labels(batch)
        eps = model_eps_fn(self.unet)
        cg = apply_classifier_guidance(self.unet, self.guidance(2.0))
        return {
            "uncond": lambda: eps(x, t, torch.full_like(y, NULL_CLASS)),
            "cg": lambda: cg(x, t, y),
            "cfg": lambda: guided_eps(eps, x, t, y, 2.0),
        }


def first_reaching(curve: dict[int, float], target: float) -> int | None:
    """Smallest NFE whose accuracy is >= ``target`` (``None`` if none)."""
    hits = [k for k, acc in sorted(curve.items()) if acc >= target]
    return hits[0] if hits else None


def pick_scale(
    results: dict[Key, dict[str, Any]],
    method: str,
    scales: tuple[float, ...],
    steps: int,
    target: float,
) -> float:
    """The smallest guiding scale whose accuracy reaches ``target``, else the most accurate.

    Only scales that guide are candidates (``s > 0`` for classifier guidance, ``w > 1`` for
    classifier-free guidance); ties in accuracy go to the larger scale.
    """
    neutral = 0.0 if method == "cg" else 1.0
    candidates = sorted(s for s in scales if s > neutral) or sorted(scales)

    def acc(s: float) -> float:
        return results[(method, s, steps)]["accuracy"] or 0.0

    ok = [s for s in candidates if acc(s) >= target]
    return ok[0] if ok else max(reversed(candidates), key=acc)


@dataclass
class Study:
    """Everything measured: quality per ``(method, scale, steps)``, samples at the main steps,
    the headline scales, FLOPs per sample of one step and the step latency comparison."""

    results: dict[Key, dict[str, Any]]
    samples: dict[Key, torch.Tensor]
    cg_scale: float
    cfg_scale: float
    flops: dict[str, float]
    lat: Any  # reference.harness.cost.LatencyComparison

    def curve(self, method: str, scale: float, grid: tuple[int, ...]) -> dict[int, float]:
        """Class accuracy against NFE (DDIM steps) of one method and scale."""
        return {k: self.results[(method, scale, k)]["accuracy"] for k in grid}


def measure(cfg: Any) -> Study:
    """Quality against scale and NFE, and the cost of one step, for CG, CFG and unguided."""
    from tqdm.auto import tqdm

    from reference.harness import (
        class_accuracy,
        class_labels,
        compare_latency,
        count_flops,
        frechet_digits_distance,
        make_noise,
        within_class_diversity,
    )

    models = Models()
    noise, labels = make_noise(cfg.samples, cfg.seed), class_labels(cfg.samples)

    def quality(x: torch.Tensor, method: str, scale: float) -> dict[str, Any]:
        targeted = method != "uncond"  # accuracy against the target labels (chance at s = 0)
        steered = targeted and not (method == "cg" and scale == 0.0)
        return {
            "accuracy": class_accuracy(x, labels) if targeted else None,
            "fd_digits": frechet_digits_distance(x),
            # samples that ignore their targets are grouped by predicted class, as unguided ones
            "diversity": within_class_diversity(x, labels if steered else None),
        }

    def run(jobs: list[Key], desc: str, keep: bool) -> None:
        for method, scale, steps in tqdm(jobs, desc=desc, leave=False):
            x = models.sample(method, scale, noise, steps, labels)
            results[(method, scale, steps)] = quality(x, method, scale)
            if keep:
                samples[(method, scale, steps)] = x

    results: dict[Key, dict[str, Any]] = {}
    samples: dict[Key, torch.Tensor] = {}
    k = cfg.steps
    jobs = [("cg", s, k) for s in cfg.cg_scales] + [("cfg", w, k) for w in cfg.cfg_scales]
    run([*jobs, ("uncond", 0.0, k)], "guidance scales", keep=True)
    cg_head = pick_scale(results, "cg", cfg.cg_scales, k, cfg.target_accuracy)
    cfg_head = pick_scale(results, "cfg", cfg.cfg_scales, k, cfg.target_accuracy)
    heads = (("cg", cg_head), ("cfg", cfg_head), ("cfg", 1.0))
    nfe_jobs = [(m, s, n) for n in cfg.nfe_grid for m, s in heads if (m, s, n) not in results]
    run(nfe_jobs, "NFE sweep", keep=False)
    fns = models.step_fns(cfg.latency_batch, cfg.seed + 1)
    with torch.no_grad():
        flops = {name: count_flops(f) / cfg.latency_batch for name, f in fns.items()}
    lat = compare_latency(fns, repeats=cfg.repeats, warmup=cfg.warmup)
    return Study(results, samples, cg_head, cfg_head, flops, lat)
