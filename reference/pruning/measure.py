"""The measured models of the pruning benchmark, their measurements and figures.

:func:`build_entries` makes the rows (the teacher, one-shot structured prunes, the zoo's
fine-tuned prune and its from-scratch control, unstructured prunes); :func:`measure` fills their
cost, quality and interleaved latency; :func:`save_figures` draws them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .api import PruningConfig, apply_pruning
from .structured import count_macs
from .unstructured import weight_sparsity
from .zoo_specs import FINETUNE_STEPS, PRUNE_RATIO, TAYLOR_T_MAX, load_pruned

CURVE_LABEL = {
    "l1": "one-shot, L1 norm",
    "taylor": "one-shot, Taylor",
    "random": "one-shot, random",
}


@dataclass
class Entry:
    """One measured model: its row id, configuration, role and values."""

    key: str
    config: dict[str, Any]
    role: str
    model: nn.Module
    values: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    samples: torch.Tensor | None = None


def build_entries(cfg: Any) -> list[Entry]:
    """Teacher, one-shot structured prunes, zoo fine-tuned + scratch, unstructured prunes.

    ``cfg`` is the benchmark's :class:`~reference.pruning.bench.Config`.
    """
    from reference import zoo

    teacher = zoo.load_teacher()
    entries = [Entry("teacher", {"method": "teacher"}, "baseline", teacher)]
    for ratio in cfg.ratios:
        for crit in cfg.criteria:
            prune = PruningConfig(
                ratio,
                crit,
                t_max=TAYLOR_T_MAX,
                calibration_batches=cfg.calib_batches,
                calibration_batch=cfg.calib_batch,
            )
            model, _ = apply_pruning(teacher, prune)
            entries.append(
                Entry(
                    f"{crit}-{ratio}",
                    {"method": f"structured-{crit}", "ratio": ratio},
                    "technique",
                    model,
                )
            )
    if cfg.use_zoo:
        entries.append(
            Entry(
                "finetuned",
                {"method": "pruned-finetuned", "ratio": PRUNE_RATIO, "steps": FINETUNE_STEPS},
                "technique",
                load_pruned("pruned_teacher"),
            )
        )
        entries.append(
            Entry(
                "scratch",
                {"method": "pruned-scratch", "ratio": PRUNE_RATIO, "steps": FINETUNE_STEPS},
                "control",
                load_pruned("pruned_scratch"),
            )
        )
    for amount in cfg.unstructured:
        model, _ = apply_pruning(teacher, PruningConfig(amount, structured=False))
        entries.append(
            Entry(
                f"unstructured-{amount}",
                {"method": "unstructured", "amount": amount},
                "reference",
                model,
            )
        )
    return entries


def _forward(model: nn.Module, batch: int) -> Callable[[], None]:
    """One U-Net forward on fixed random inputs (the timed unit)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, 1, 16, 16, generator=gen)
    t = torch.randint(0, 1000, (batch,), generator=gen)
    y = torch.arange(batch) % 11

    def run() -> None:
        with torch.inference_mode():
            model(x, t, class_labels=y, return_dict=False)

    return run


def measure(entries: list[Entry], cfg: Any) -> Any:
    """Fill every entry's values (cost, FDD, deviation from the teacher, latency).

    Every row samples from the same noise; latency is one U-Net forward per row, interleaved
    (:func:`~reference.harness.cost.compare_latency`). Returns the ``LatencyComparison``.
    """
    from tqdm.auto import tqdm

    from reference import zoo
    from reference.harness import (
        class_labels,
        compare_latency,
        count_parameters,
        frechet_digits_distance,
        make_noise,
        model_eps_fn,
        sample,
        trajectory_deviation,
    )

    noise, labels = make_noise(cfg.n_samples, 0), class_labels(cfg.n_samples)
    base_flops = count_macs(entries[0].model)
    for e in tqdm(entries, desc="pruning: samples", leave=False):
        flops = count_macs(e.model)
        e.values["gflops"] = flops / 1e9
        e.values["flops_ratio"] = flops / base_flops
        e.values["params_m"] = count_parameters(e.model) / 1e6
        e.values["sparsity"] = weight_sparsity(e.model)
        e.samples = sample(
            model_eps_fn(e.model), zoo.teacher_scheduler(), noise, steps=cfg.steps, labels=labels
        )
        e.values["fd_digits"] = frechet_digits_distance(e.samples)
        e.values["mse_vs_baseline"] = trajectory_deviation(e.samples, entries[0].samples)["mse"]
    lat = compare_latency(
        {e.key: _forward(e.model, cfg.latency_batch) for e in entries},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
    )
    for e in entries:
        e.values["latency_ms"] = lat.median_ms(e.key)
        e.spread["latency_ms"] = lat.iqr_ms(e.key)
        e.values["speedup"] = lat.speedup[e.key]
    return lat


def save_figures(entries: Sequence[Entry], cfg: Any, curve: Path, grid: Path | None) -> None:
    """FDD against the fraction of channels removed (``curve``) and, when the zoo rows exist,
    a sample grid of teacher / fine-tuned / scratch (``grid``)."""
    from reference.harness import curve_plot, save_grid

    by_key = {e.key: e for e in entries}
    series = {
        CURVE_LABEL[c]: [by_key[f"{c}-{r}"].values["fd_digits"] for r in cfg.ratios]
        for c in cfg.criteria
    }
    hlines = {"teacher": by_key["teacher"].values["fd_digits"]}
    for key, label in (("finetuned", "50% + fine-tuning"), ("scratch", "50% from scratch")):
        if key in by_key:
            hlines[label] = by_key[key].values["fd_digits"]
    curve_plot(
        list(cfg.ratios),
        series,
        curve,
        xlabel="fraction of channels removed",
        ylabel="FDD (lower is better)",
        title="Structured pruning of the zoo U-Net",
        logy=True,
        hlines=hlines,
    )
    rows = [by_key[k] for k in ("teacher", "finetuned", "scratch") if k in by_key]
    if grid is not None and len(rows) > 1:
        save_grid(torch.cat([e.samples[:10] for e in rows if e.samples is not None]), grid)
