"""Measuring few-step samplers: shared by the benchmarks of the two distillation techniques.

Progressive distillation (:mod:`reference.timestep_distillation`) and latent consistency
distillation (:mod:`reference.consistency_latent_diffusion`) are measured the same way: a teacher
sampler with many steps (baseline), the distilled model at a few steps (technique), the teacher's
own sampler at the same few steps (control), all from the same noise and labels. This module holds
what their ``bench.py`` files share: the size checks, sampling every run once with its NFE
counted, the rows, the sample grid and the demo table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference.harness.cli import Option
from reference.harness.sampling import EpsFn, NFECounter

Runs = dict[str, Callable[[], torch.Tensor]]
MakeRuns = Callable[[torch.Tensor, torch.Tensor, Callable[[str, EpsFn], EpsFn]], Runs]
"""``(noise, labels, wrap) -> {key: () -> samples}``; ``wrap(key, eps_fn)`` may count NFE."""


@dataclass(frozen=True)
class Sizes:
    """The sizes every few-step benchmark has; a technique's ``Config`` extends them."""

    n: int = 300
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 1
    seed: int = 0

    def validate(self) -> None:
        if self.n < 10:
            raise ValueError(f"--n must be >= 10, got {self.n}")
        if self.latency_batch < 1:
            raise ValueError(f"--latency-batch must be >= 1, got {self.latency_batch}")
        if self.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {self.repeats}")
        if self.warmup < 0:
            raise ValueError(f"--warmup must be >= 0, got {self.warmup}")


SIZE_OPTIONS = (Option("n"), Option("latency_batch"), Option("repeats"), Option("seed"))
"""The command-line options of :class:`Sizes`."""


@dataclass
class Sampled:
    """Every run sampled once from the same noise: images, FDD, class accuracy and NFE."""

    images: dict[str, torch.Tensor]
    fdd: dict[str, float]
    accuracy: dict[str, float]
    nfe: dict[str, int]


def sample_all(
    make_runs: MakeRuns,
    n: int,
    seed: int,
    shape: tuple[int, ...],
    decode: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> Sampled:
    """Sample each run of ``make_runs`` on ``n`` balanced labels, count its calls, score it."""
    from reference.harness import (
        class_accuracy,
        class_labels,
        count_nfe,
        frechet_digits_distance,
        make_noise,
    )

    noise, labels = make_noise(n, seed, shape), class_labels(n)
    counters: dict[str, NFECounter] = {}
    runs = make_runs(noise, labels, lambda k, f: counters.setdefault(k, count_nfe(f)))
    images = {k: (decode(fn()) if decode else fn()) for k, fn in runs.items()}
    return Sampled(
        images,
        {k: frechet_digits_distance(x) for k, x in images.items()},
        {k: class_accuracy(x, labels) for k, x in images.items()},
        {k: counters[k].nfe for k in images},
    )


def timed_runs(make_runs: MakeRuns, batch: int, seed: int, shape: tuple[int, ...]) -> Runs:
    """The same runs on a latency batch (its own noise, ``seed + 1``), without NFE counters."""
    from reference.harness import class_labels, make_noise

    return make_runs(make_noise(batch, seed + 1, shape), class_labels(batch), lambda k, f: f)


def values(key: str, s: Sampled, lat: Any, **extra: float) -> dict[str, float | None]:
    """A row's values: latency, speedup, FDD, accuracy and NFE of run ``key``, + ``extra``."""
    return {
        "latency_ms": lat.median_ms(key),
        "speedup": lat.speedup[key],
        "fd_digits": s.fdd[key],
        "accuracy": s.accuracy[key],
        "nfe": float(s.nfe[key]),
        **extra,
    }


def headline(row: str, lat: Any, limit: float, quality_ratio: float) -> Any:
    """The headline of a few-step row: its speedup with the bootstrap interval over timing
    rounds, its limit (an *estimate*: both techniques derive it from counts or medians whose
    per-step overheads differ) and its FDD ratio to the baseline."""
    from reference.harness.results import speedup_headline

    return speedup_headline(
        row, lat, limit=limit, limit_kind="estimate", quality_ratio=quality_ratio
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
    """Sample, time the runs named in ``titles`` (``cfg``: n, seed, repeats, warmup), print a
    table of latency, FDD and accuracy with the FDD floor at ``n``, and save the samples."""
    from reference.harness import compare_latency, fdd_floor

    s = sample_all(make_runs, cfg.n, cfg.seed, shape, decode)
    with torch.inference_mode():
        lat = compare_latency({k: timed[k] for k in titles}, repeats=cfg.repeats, warmup=cfg.warmup)
    width = max(map(len, titles.values())) + 2
    print(f"{'sampler':{width}} {'ms':>8} {'FDD':>7} {'acc':>6}")
    for key, title in titles.items():
        print(f"{title:{width}} {lat.median_ms(key):8.1f} {s.fdd[key]:7.2f} {s.accuracy[key]:6.2f}")
    print(f"(FDD of {cfg.n} real training digits: {fdd_floor(cfg.n):.2f})")
    path.parent.mkdir(parents=True, exist_ok=True)
    grid = save_samples(s.images, list(titles), path)
    print(f"samples (rows: {', '.join(titles.values())}): {grid}")


def train_seconds(*names: str) -> float:
    """CPU training seconds of zoo models ``names`` together, from the zoo manifest."""
    from reference import zoo

    return sum(float(zoo.manifest_entry(name)["train_seconds"]) for name in names)
