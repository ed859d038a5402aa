"""Measuring few-step samplers: shared by the benchmarks of the two distillation techniques.

Progressive distillation ([`reference.timestep_distillation`][reference.timestep_distillation]) and
latent consistency distillation
([`reference.consistency_latent_diffusion`][reference.consistency_latent_diffusion]) are measured
the same way: a teacher sampler with many steps (baseline), the distilled model at a few steps
(technique), the teacher's own sampler at the same few steps (control: the same network calls, so
the same cost), all from the same noise and labels on every seed. This module holds what their
``bench.py`` files share: the size checks, sampling every run on every paired seed with its NFE
counted, the rows, the headline, the sample grid and the demo table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from reference.harness.bounds import at_least, check_seeds
from reference.harness.sampling import EpsFn, NFECounter
from reference.harness.seeds import N_QUALITY, SEEDS, SeedTable

Runs = dict[str, Callable[[], torch.Tensor]]
MakeRuns = Callable[[torch.Tensor, torch.Tensor, int, Callable[[str, EpsFn], EpsFn]], Runs]
"""``(noise, labels, seed, wrap) -> {key: () -> samples}``; ``seed`` seeds stochastic samplers
(the consistency model's re-noising), ``wrap(key, eps_fn)`` may count NFE."""
QUALITY_METRICS = ("fd_digits", "kid_digits", "accuracy")
"""What every few-step row reports per seed (FDD, KID, class accuracy)."""


@dataclass(frozen=True)
class Sizes:
    """The sizes every few-step benchmark has; a technique's ``Config`` extends them."""

    n: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 1

    def validate(self) -> None:
        at_least(self, n=10, latency_batch=1, repeats=1, warmup=0)
        check_seeds(self.seeds)


@dataclass
class Sampled:
    """Every run on every paired seed: the per-seed quality table, the NFE of each run and the
    samples of the first seed (for the figures)."""

    table: SeedTable
    nfe: dict[str, int]
    images: dict[str, torch.Tensor] = field(default_factory=dict)


def sample_seeds(
    make_runs: MakeRuns,
    n: int,
    seeds: tuple[int, ...],
    shape: tuple[int, ...],
    decode: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> Sampled:
    """Sample each run of ``make_runs`` from ``make_noise(n, seed)`` and ``n`` balanced labels on
    every seed (paired), count its calls and score it (FDD, KID, accuracy)."""
    from reference.harness import class_labels, count_nfe, make_noise, over_seeds, quality_report

    labels = class_labels(n)
    nfe: dict[str, int] = {}
    images: dict[str, torch.Tensor] = {}

    def sampler(key: str) -> Callable[[int], torch.Tensor]:
        def run(seed: int) -> torch.Tensor:
            counters: dict[str, NFECounter] = {}
            runs = make_runs(
                make_noise(n, seed, shape),
                labels,
                seed,
                lambda k, f: counters.setdefault(k, count_nfe(f)),
            )
            x = runs[key]()
            x = decode(x) if decode else x
            nfe[key] = counters[key].nfe
            if seed == seeds[0]:
                images[key] = x
            return x

        return run

    keys = list(make_runs(make_noise(1, 0, shape), class_labels(1), 0, lambda k, f: f))

    def measure(key: str, x: torch.Tensor, same: Mapping[str, Any]) -> dict[str, float]:
        report = quality_report(x, labels)
        return {m: report[m] for m in QUALITY_METRICS}

    table = over_seeds({k: sampler(k) for k in keys}, measure, seeds)
    return Sampled(table, nfe, images)


def timed_runs(
    make_runs: MakeRuns, batch: int, seeds: tuple[int, ...], shape: tuple[int, ...]
) -> Runs:
    """The same runs on a latency batch (its own noise, seed ``max(seeds) + 1``), uncounted."""
    from reference.harness import class_labels, make_noise

    seed = max(seeds) + 1
    return make_runs(make_noise(batch, seed, shape), class_labels(batch), seed, lambda k, f: f)


def row(
    key: str,
    config: dict[str, object],
    role: str,
    s: Sampled,
    lat: Any,
    values: Mapping[str, float] | None = None,
    spread: Mapping[str, float] | None = None,
) -> Any:
    """A timed row: the per-seed quality of run ``key`` (means, 95% intervals, seeds), its
    latency, speedup over the latency baseline (with its bootstrap interval) and NFE."""
    from reference.harness.results import Row

    mean, intervals, per_seed = s.table.row_fields(key)
    mean |= {
        "latency_ms": lat.median_ms(key),
        "speedup": lat.speedup[key],
        "nfe": float(s.nfe[key]),
        **(values or {}),
    }
    if key != lat.baseline:
        intervals["speedup"] = lat.speedup_interval(key)
    iqr = {"latency_ms": lat.iqr_ms(key), **(spread or {})}
    return Row(key, config, role, mean, intervals=intervals, spread=iqr, seeds=per_seed)  # type: ignore[arg-type]


def headline(row: str, lat: Any, limit: float, s: Sampled, baseline: str) -> Any:
    """The headline of a few-step row: its speedup with the bootstrap interval over timing
    rounds, its limit (an *estimate* computed from the work counted, the ratio of network calls;
    per-step overheads differ between samplers, so it is no bound) and its paired FDD ratio to
    the baseline with the interval over seeds."""
    from reference.harness.results import speedup_headline

    ratio = s.table.ratio(row, baseline, "fd_digits")
    return speedup_headline(
        row,
        lat,
        limit=limit,
        limit_kind="estimate",
        quality_ratio=ratio.value,
        quality_interval=ratio.interval,
    )


def save_samples(images: Mapping[str, torch.Tensor], keys: Sequence[str], path: Path) -> Path:
    """A grid with one row of (up to) ten samples per run in ``keys``, top to bottom."""
    from reference.harness import save_grid

    k = min(10, min(images[key].shape[0] for key in keys))
    return save_grid(torch.cat([images[key][:k] for key in keys]), path, nrow=k)


def run_demo(
    make_runs: MakeRuns,
    timed: Runs,
    titles: Mapping[str, str],
    cfg: Any,
    shape: tuple[int, ...],
    path: Path,
    decode: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> None:
    """Sample on ``cfg.seeds``, time the runs named in ``titles`` (``cfg``: n, seeds, repeats,
    warmup), print latency, mean FDD, KID and accuracy beside real digits at ``n``, and save the
    samples of the first seed."""
    from reference.harness import compare_latency, real_reference

    s = sample_seeds(make_runs, cfg.n, cfg.seeds, shape, decode)
    with torch.inference_mode():
        lat = compare_latency({k: timed[k] for k in titles}, repeats=cfg.repeats, warmup=cfg.warmup)
    width = max(map(len, titles.values())) + 2
    print(f"{'sampler':{width}} {'ms':>8} {'FDD':>7} {'KID':>7} {'acc':>6}")
    for key, title in titles.items():
        fd, kid, acc = (s.table.summary(key, m).value for m in QUALITY_METRICS)
        print(f"{title:{width}} {lat.median_ms(key):8.1f} {fd:7.2f} {kid:7.3f} {acc:6.2f}")
    ref = real_reference(cfg.n)
    print(
        f"(means over seeds {list(cfg.seeds)}; class-balanced real digits at n = {cfg.n}: "
        f"FDD {ref.fd_mean:.2f}, KID {ref.kid_mean:.3f})"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    grid = save_samples(s.images, list(titles), path)
    print(f"samples (rows: {', '.join(titles.values())}): {grid}")


def train_seconds(*names: str) -> float:
    """CPU training seconds of zoo models ``names`` together, from the zoo manifest."""
    from reference import zoo

    return sum(float(zoo.manifest_entry(name)["train_seconds"]) for name in names)
