"""The measured models of the pruning benchmark, their measurements and figures.

[`build_entries`][reference.pruning.measure.build_entries] makes the rows (the teacher, one-shot
structured prunes, the zoo's fine-tuned prune and its from-scratch control, unstructured prunes) and
[`add_fewer_steps_control`][reference.pruning.measure.add_fewer_steps_control] the teacher with
fewer DDIM steps at the headline prune's sampling FLOPs; `measure` fills their cost, their quality
over paired noise seeds and their interleaved sampling latency;
[`save_figures`][reference.pruning.measure.save_figures] draws them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
QUALITY = ("fd_digits", "kid_digits", "accuracy")
"""The sample-quality metrics of every row (means over paired seeds)."""
GRID_ROWS = ("teacher", "finetuned", "scratch")


@dataclass
class Entry:
    """One measured model: its row id, configuration, role, DDIM steps and values.

    ``timed`` rows enter the latency comparison (one-shot prunes do not: they are quality
    figures of the damage before repair, and share their architecture with a timed row).
    """

    key: str
    config: dict[str, Any]
    role: str
    model: nn.Module
    steps: int
    timed: bool = True
    values: dict[str, float | None] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)


def build_entries(cfg: Any) -> list[Entry]:
    """Teacher, one-shot structured prunes, zoo fine-tuned + scratch, unstructured prunes,
    each with its cost filled in (``cfg`` is the benchmark's ``Config``)."""
    from reference import zoo

    teacher = zoo.load_teacher()
    entries = [
        Entry("teacher", {"method": "teacher", "steps": cfg.steps}, "baseline", teacher, cfg.steps)
    ]
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
            config = {"method": f"structured-{crit}", "ratio": ratio}
            # without the zoo rows the headline is the last criterion's first prune: time it
            timed = not cfg.use_zoo and (ratio, crit) == (cfg.ratios[0], cfg.criteria[-1])
            entries.append(Entry(f"{crit}-{ratio}", config, "technique", model, cfg.steps, timed))
    if cfg.use_zoo:
        zoo_rows = (
            ("finetuned", "pruned-finetuned", "technique", "pruned_teacher"),
            ("scratch", "pruned-scratch", "control", "pruned_scratch"),
        )
        for key, method, role, name in zoo_rows:
            config = {"method": method, "ratio": PRUNE_RATIO, "steps": FINETUNE_STEPS}
            entries.append(Entry(key, config, role, load_pruned(name), cfg.steps))
    for amount in cfg.unstructured:
        model, _ = apply_pruning(teacher, PruningConfig(amount, structured=False))
        config = {"method": "unstructured", "amount": amount}
        entries.append(Entry(f"unstructured-{amount}", config, "reference", model, cfg.steps))
    for e in entries:
        _fill_cost(e, entries[0])
    return entries


def _fill_cost(e: Entry, base: Entry) -> None:
    from reference.harness import count_parameters

    flops = count_macs(e.model)
    e.values["gflops"] = flops / 1e9
    e.values["flops_ratio"] = e.values["gflops"] / float(base.values["gflops"] or 1.0)
    e.values["params_m"] = count_parameters(e.model) / 1e6
    e.values["sparsity"] = weight_sparsity(e.model)
    e.values["nfe"] = e.steps


def control_steps(steps: int, flops_ratio: float) -> int:
    """DDIM steps of the teacher that cost what ``steps`` steps of a model with ``flops_ratio``
    of its FLOPs per forward cost:

        k = max(1, round(steps · F_pruned / F_teacher))                            (1)
    """
    return max(1, round(steps * flops_ratio))  # (1)


def add_fewer_steps_control(entries: list[Entry], head: Entry) -> Entry:
    """Append the matched-cost control: the teacher itself with (1) steps, so that it spends
    the FLOPs of ``head``'s sampling the plain way (fewer steps instead of a smaller model)."""
    base = entries[0]
    k = control_steps(head.steps, float(head.values["flops_ratio"] or 1.0))
    control = Entry(
        "fewer-steps", {"method": "teacher-fewer-steps", "steps": k}, "control", base.model, k
    )
    _fill_cost(control, base)
    entries.append(control)
    return control


def _sampler(e: Entry, n: int, labels: torch.Tensor) -> Callable[[int], torch.Tensor]:
    """``run(seed)``: ``n`` class-conditional DDIM samples of ``e`` from ``make_noise(n, seed)``."""
    from reference import zoo
    from reference.harness import make_noise, model_eps_fn, sample

    def run(seed: int) -> torch.Tensor:
        noise = make_noise(n, seed)
        return sample(
            model_eps_fn(e.model), zoo.teacher_scheduler(), noise, steps=e.steps, labels=labels
        )

    return run


def measure_quality(entries: list[Entry], cfg: Any, grid: dict[str, torch.Tensor]) -> Any:
    """FDD, KID, accuracy and MSE against the teacher's samples of the same seed, for every
    row over ``cfg.seeds`` (paired: the same noise and labels per seed). The first seed's
    samples of the grid rows are kept in ``grid``. Returns the ``SeedTable``."""
    from reference.harness import class_labels, over_seeds, quality_report, trajectory_deviation

    labels = class_labels(cfg.n_samples)

    def report(key: str, x: torch.Tensor, same: Mapping[str, torch.Tensor]) -> dict[str, float]:
        if key in GRID_ROWS and key not in grid:
            grid[key] = x[:10]
        q = quality_report(x, labels)
        mse = trajectory_deviation(x, same["teacher"])["mse"]
        return {**{m: q[m] for m in QUALITY}, "mse_vs_baseline": mse}

    samplers = {e.key: _sampler(e, cfg.n_samples, labels) for e in entries}
    return over_seeds(samplers, report, cfg.seeds, desc="pruning: quality seeds")


def measure_latency(entries: list[Entry], cfg: Any) -> Any:
    """One DDIM sampling of ``cfg.latency_batch`` digits per timed row, interleaved
    (`compare_latency`); returns the ``LatencyComparison``."""
    from reference.harness import class_labels, compare_latency

    labels = class_labels(cfg.latency_batch)
    timed = {e.key: _sampler(e, cfg.latency_batch, labels) for e in entries if e.timed}
    lat = compare_latency(
        {k: (lambda run=run: run(99)) for k, run in timed.items()},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
    )
    for e in entries:
        if e.key in timed:
            e.values["latency_ms"] = lat.median_ms(e.key)
            e.spread["latency_ms"] = lat.iqr_ms(e.key)
            e.values["speedup"] = lat.speedup[e.key]
    return lat


def save_figures(
    entries: Sequence[Entry],
    q: Any,
    cfg: Any,
    curve: Path,
    grid: Path | None,
    samples: Mapping[str, torch.Tensor],
) -> None:
    """FDD (mean over seeds) against the fraction of channels removed (``curve``) and, when
    the zoo rows exist, a sample grid of teacher / fine-tuned / scratch (``grid``)."""
    from reference.harness import curve_plot, save_grid

    keys = {e.key for e in entries}

    def fd(key: str) -> float:
        return q.summary(key, "fd_digits").value

    series = {CURVE_LABEL[c]: [fd(f"{c}-{r}") for r in cfg.ratios] for c in cfg.criteria}
    hlines = {"teacher": fd("teacher")}
    for key, label in (("finetuned", "50% + fine-tuning"), ("scratch", "50% from scratch")):
        if key in keys:
            hlines[label] = fd(key)
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
    rows = [samples[k] for k in GRID_ROWS if k in samples]
    if grid is not None and len(rows) > 1:
        save_grid(torch.cat(rows), grid)
