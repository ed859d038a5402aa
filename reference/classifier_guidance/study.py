"""The guidance study: sample classifier guidance, classifier-free guidance and the unguided
model at every scale and NFE on paired noise seeds, and time whole sampling runs of each.

``measure(cfg)`` takes the benchmark's [`Config`][reference.classifier_guidance.bench.Config] (any
object with its fields) and returns a [`Study`][reference.classifier_guidance.study.Study];
[`bench`][reference.classifier_guidance.bench] turns it into rows.

The matched-cost control is classifier-free guidance with the number of DDIM steps whose FLOPs
per sample equal those of classifier guidance at the main steps ``K``:

    k = round(K · F_cg / F_cfg)                                                     (1)

with ``F`` the FLOPs of one denoising step per sample (``torch.utils.flop_counter``, the
classifier's backward pass included).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from reference.data import NULL_CLASS
from reference.harness.sampling import frozen
from reference.harness.seeds import SeedTable

from .guidance import ClassifierGuidanceConfig, apply_classifier_guidance

Key = tuple[str, float, int]
"""``(method, scale, steps)``; method ``"cg"``, ``"cfg"`` (classifier-free) or ``"uncond"``."""


def table_key(method: str, scale: float, steps: int) -> str:
    """The `SeedTable` key of a configuration:
    ``uncond@20``, ``cg-2@5``, ``cfg-1.5@20``."""
    return f"uncond@{steps}" if method == "uncond" else f"{method}-{scale:g}@{steps}"


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
    results: Mapping[Key, Mapping[str, Any]],
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


def matched_steps(steps: int, flops: Mapping[str, float]) -> int:
    """DDIM steps of classifier-free guidance at the per-sample FLOPs of classifier guidance
    with ``steps`` steps (1), at least one."""
    return max(1, round(steps * flops["cg"] / flops["cfg"]))  # (1)


@dataclass
class Study:
    """Everything measured: per-seed quality of every ``(method, scale, steps)`` (``table``,
    keyed by [`table_key`][reference.classifier_guidance.study.table_key]), the first seed's samples
    at the main steps, the headline scales, the matched-cost steps, FLOPs per sample of one step and
    the timed runs."""

    table: SeedTable
    samples: dict[Key, torch.Tensor]
    cg_scale: float
    cfg_scale: float
    matched: int
    flops: dict[str, float]
    lat: Any  # reference.harness.cost.LatencyComparison

    def mean(self, key: Key, metric: str) -> float | None:
        """Mean over seeds of ``metric`` (``None`` when not measured: unguided accuracy)."""
        got = self.table.values.get(table_key(*key), {})
        return self.table.summary(table_key(*key), metric).value if metric in got else None

    def curve(self, method: str, scale: float, grid: tuple[int, ...]) -> dict[int, float]:
        """Mean class accuracy against NFE (DDIM steps) of one method and scale."""
        return {k: self.mean((method, scale, k), "accuracy") or 0.0 for k in grid}


def _sweep(models: Models, cfg: Any, table: SeedTable, jobs: list[Key], samples: dict) -> None:
    """Sample ``jobs`` on every seed from ``make_noise(n, seed)`` (paired) into ``table``."""
    from reference.harness import (
        class_accuracy,
        class_labels,
        frechet_digits_distance,
        kernel_digits_distance,
        make_noise,
        over_seeds,
        within_class_diversity,
    )

    labels = class_labels(cfg.samples)
    unguided: dict[tuple[int, int], torch.Tensor] = {}
    by_key = {table_key(*job): job for job in jobs}

    def sampler(job: Key) -> Callable[[int], torch.Tensor]:
        method, scale, steps = job

        def run(seed: int) -> torch.Tensor:
            if method == "cg" and scale == 0.0 and (seed, steps) in unguided:
                x = unguided[(seed, steps)]  # s = 0 is the unguided sampler exactly (tested)
            else:
                x = models.sample(method, scale, make_noise(cfg.samples, seed), steps, labels)
            if method == "uncond":
                unguided[(seed, steps)] = x
            if seed == cfg.seeds[0] and steps == cfg.steps:
                samples[job] = x
            return x

        return run

    def quality(key: str, x: torch.Tensor, same: Mapping[str, Any]) -> dict[str, float]:
        method, scale, _ = by_key[key]
        steered = method == "cfg" or (method == "cg" and scale > 0.0)
        out = {
            "fd_digits": frechet_digits_distance(x),
            "kid_digits": kernel_digits_distance(x),
            # samples that ignore their targets are grouped by predicted class, as unguided ones
            "diversity": within_class_diversity(x, labels if steered else None),
        }
        if method != "uncond":  # accuracy against the target labels (chance at s = 0)
            out["accuracy"] = class_accuracy(x, labels)
        return out

    jobs = sorted(jobs, key=lambda j: j[0] != "uncond")  # unguided first: s = 0 reuses it
    found = over_seeds({table_key(*j): sampler(j) for j in jobs}, quality, cfg.seeds)
    table.values.update(found.values)


def measure(cfg: Any) -> Study:
    """Quality against scale and NFE on paired seeds, FLOPs of one step, and the latency of
    whole sampling runs (unguided, both headline scales, the matched-cost control)."""
    from reference.harness import class_labels, compare_latency, count_flops, make_noise

    models = Models()
    fns = models.step_fns(cfg.latency_batch, max(cfg.seeds) + 1)
    with torch.no_grad():
        flops = {name: count_flops(f) / cfg.latency_batch for name, f in fns.items()}
    table, samples, k = SeedTable(cfg.seeds), {}, cfg.steps
    guided = [("cg", s, k) for s in cfg.cg_scales] + [("cfg", w, k) for w in cfg.cfg_scales]
    _sweep(models, cfg, table, [("uncond", 0.0, k), *guided], samples)
    means = {j: {"accuracy": table.summary(table_key(*j), "accuracy").value} for j in guided}
    cg_head = pick_scale(means, "cg", cfg.cg_scales, k, cfg.target_accuracy)
    cfg_head = pick_scale(means, "cfg", cfg.cfg_scales, k, cfg.target_accuracy)
    matched = matched_steps(k, flops)
    heads = (("cg", cg_head), ("cfg", cfg_head), ("cfg", 1.0))
    more = {(m, s, n) for n in cfg.nfe_grid for m, s in heads} | {("cfg", cfg_head, matched)}
    _sweep(models, cfg, table, sorted(j for j in more if table_key(*j) not in table.values), {})
    x, y = make_noise(cfg.latency_batch, max(cfg.seeds) + 1), class_labels(cfg.latency_batch)
    timed = {
        "uncond": lambda: models.sample("uncond", 0.0, x, k, y),
        "cg": lambda: models.sample("cg", cg_head, x, k, y),
        "cfg": lambda: models.sample("cfg", cfg_head, x, k, y),
        "cfg-matched": lambda: models.sample("cfg", cfg_head, x, matched, y),
    }
    lat = compare_latency(timed, repeats=cfg.repeats, warmup=cfg.warmup)
    return Study(table, samples, cg_head, cfg_head, matched, flops, lat)
