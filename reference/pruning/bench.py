"""Benchmark and demo of [`reference.pruning`][reference.pruning] (the technique contract of
`reference.harness.cli`).

Rows: the zoo teacher U-Net (baseline); one-shot structured prunes at every ratio and criterion
and the zoo's pruned + fine-tuned teacher (technique); two controls, the same pruned
architecture trained from scratch on the same budget and the teacher itself with fewer DDIM
steps at the prune's sampling FLOPs; unstructured magnitude pruning (reference: sparsity
without speed). Quality: every row over paired noise seeds. Latency: one DDIM sampling of the
latency batch per timed row, interleaved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reference.harness.cli import Option, at_least, check_seeds, float_tuple, int_tuple, name_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Aim,
    Figure,
    Measurement,
    Metric,
    Note,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)
from reference.harness.seeds import N_QUALITY, SEEDS, quality_note, real_reference_row

from .measure import (
    Entry,
    add_fewer_steps_control,
    build_entries,
    measure_latency,
    measure_quality,
    save_figures,
)
from .structured import CRITERIA
from .zoo_specs import CALIBRATION, FINETUNE_STEPS, TAYLOR_T_MAX, ZOO_SPECS


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    ratios: tuple[float, ...] = (0.25, 0.5, 0.75)
    criteria: tuple[str, ...] = ("l1", "taylor")
    unstructured: tuple[float, ...] = (0.5, 0.75)
    n_samples: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    steps: int = 20
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 1
    calib_batches: int = CALIBRATION["batches"]
    calib_batch: int = CALIBRATION["batch"]
    use_zoo: bool = True

    def validate(self) -> None:
        if not self.ratios or not all(0.0 < r < 1.0 for r in self.ratios):
            raise ValueError(f"--ratios must be in (0, 1), got {list(self.ratios)}")
        if not all(0.0 < a < 1.0 for a in self.unstructured):
            raise ValueError(f"--unstructured must be in (0, 1), got {list(self.unstructured)}")
        unknown = [c for c in self.criteria if c not in CRITERIA] or ([] if self.criteria else [""])
        if unknown:
            raise ValueError(
                f"--criteria: unknown {unknown[0]!r}; choose from {', '.join(CRITERIA)}"
            )
        at_least(self, steps=1, latency_batch=1, repeats=1, calib_batches=1, calib_batch=1)
        at_least(self, warmup=0, n_samples=2)
        check_seeds(self.seeds)


FULL = Config()
QUICK = Config(
    ratios=(0.5,),
    unstructured=(0.5,),
    n_samples=20,
    seeds=(0, 1),
    steps=4,
    latency_batch=4,
    repeats=3,
    warmup=1,
    calib_batches=2,
    calib_batch=16,
)
DEMO = Config(ratios=(0.5,), unstructured=(0.5,), n_samples=100, seeds=(0, 1), steps=10, repeats=5)
OPTIONS = (
    Option("ratios", float_tuple, "X,X,..."),
    Option("criteria", name_tuple, "NAME,..."),
    Option("unstructured", float_tuple, "X,X,..."),
    Option("n_samples"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("steps"),
    Option("latency_batch"),
    Option("repeats"),
    Option("warmup"),
)


def _metrics() -> dict[str, Metric]:
    return metrics(
        "latency_ms",
        "speedup",
        "fd_digits",
        "kid_digits",
        "accuracy",
        "mse_vs_baseline",
        "nfe",
        "gflops",
        "params_m",
        flops_ratio=Metric("", "lower"),
        sparsity=Metric("", "higher"),
    )


def _tp_version() -> str:
    import torch_pruning as tp

    version = str(getattr(tp, "__version__", "unknown")).lower()
    return version if re.fullmatch(r"[a-z0-9]+([._-][a-z0-9]+)*", version) else "unknown"


def _teacher_steps() -> int:
    from reference import zoo

    return int(zoo.manifest_entry("teacher")["steps"])


def _rows(entries: list[Entry], q: Any, lat: Any) -> list[Row]:
    rows = []
    for e in entries:
        values, intervals, seeds = q.row_fields(e.key)
        if e.timed and e.role != "baseline":
            intervals["speedup"] = lat.speedup_interval(e.key)
        rows.append(
            Row(e.key, e.config, e.role, {**e.values, **values}, intervals, dict(e.spread), seeds)  # type: ignore[arg-type]
        )
    return rows


def _head(entries: list[Entry], cfg: Config) -> Entry:
    by_key = {e.key: e for e in entries}
    return by_key.get("finetuned") or by_key[f"{cfg.criteria[-1]}-{cfg.ratios[0]}"]


def _aims(head: Entry, control: Entry, q: Any, lat: Any, keys: set[str]) -> list[Aim]:
    """Speed and quality of the headline prune against the teacher, and its quality against
    both controls, each judged on its 95% interval."""
    quality = q.ratio(head.key, "teacher", "fd_digits")
    vs_fewer = q.ratio(head.key, control.key, "fd_digits")
    aims = [
        aim(
            "speedup",
            lat.speedup[head.key],
            1.5,
            ">=",
            interval=lat.speedup_interval(head.key),
            row=head.key,
            against="teacher",
            ratio=head.config["ratio"],
        ),
        aim(
            "quality",
            quality.value,
            1.3,
            "<=",
            interval=quality.interval,
            row=head.key,
            against="teacher",
        ),
        aim(
            "beats-fewer-steps",
            vs_fewer.value,
            1.0,
            "<=",
            interval=vs_fewer.interval,
            row=head.key,
            against=control.key,
            steps=head.steps,
            control_steps=control.steps,
        ),
    ]
    if "scratch" in keys:
        vs_scratch = q.ratio(head.key, "scratch", "fd_digits")
        aims.append(
            aim(
                "beats-scratch",
                vs_scratch.value,
                1.0,
                "<=",
                interval=vs_scratch.interval,
                row=head.key,
                against="scratch",
                steps=FINETUNE_STEPS,
            )
        )
    return aims


def _notes(cfg: Config, entries: list[Entry], q: Any, lat: Any, speed_met: bool) -> list[Note]:
    by_key = {e.key: e for e in entries}
    base, head, control = by_key["teacher"], _head(entries, cfg), by_key["fewer-steps"]
    h = head.values

    def fd(key: str) -> float:
        return q.summary(key, "fd_digits").value

    one_shot = [fd(e.key) for e in entries if e.config["method"].startswith("structured")]
    notes = [
        latency_note(cfg.repeats, cfg.latency_batch),
        quality_note(cfg.n_samples, cfg.seeds),
        note("same-noise", steps=cfg.steps),
        note("depgraph", tp_version=_tp_version()),
        note(
            "structured-is-smaller",
            ratio=head.config["ratio"],
            flops=h["flops_ratio"],
            params=float(h["params_m"] or 0.0) / float(base.values["params_m"] or 1.0),
        ),
        note(
            "fewer-steps-control",
            steps=head.steps,
            control_steps=control.steps,
            flops=h["flops_ratio"],
            faster=lat.median_ms(head.key) / lat.median_ms(control.key),
        ),
        note("unstructured-dense"),
        note("one-shot", best=min(one_shot), teacher=fd("teacher")),
    ]
    if "finetuned" in by_key:
        teacher_steps = _teacher_steps()
        notes.append(
            note(
                "finetune-budget",
                steps=FINETUNE_STEPS,
                batch=ZOO_SPECS["pruned_teacher"].batch,
                share=100 * FINETUNE_STEPS * float(h["flops_ratio"] or 0.0) / teacher_steps,
                teacher_steps=teacher_steps,
                size=1 / float(h["flops_ratio"] or 1.0),
                fd_finetuned=fd("finetuned"),
                fd_scratch=fd("scratch"),
            )
        )
    if not speed_met:
        notes.append(
            note(
                "speedup-gap",
                speedup=lat.speedup[head.key],
                flop_speedup=1 / float(h["flops_ratio"] or 1.0),
            )
        )
    return notes


def _run(cfg: Config) -> tuple[list[Entry], Any, Any, dict[str, Any]]:
    entries = build_entries(cfg)
    add_fewer_steps_control(entries, _head(entries, cfg))
    grid: dict[str, Any] = {}
    q = measure_quality(entries, cfg, grid)
    lat = measure_latency(entries, cfg)
    return entries, q, lat, grid


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure structured and unstructured pruning of the zoo teacher; figures into ``out``."""
    entries, q, lat, grid = _run(cfg)
    head, control = _head(entries, cfg), entries[-1]
    figures = [Figure("pruning.png", "fdd-vs-ratio")]
    if "finetuned" in grid:
        figures.append(Figure("pruning-samples.png", "samples"))
    save_figures(entries, q, cfg, out / figures[0].file, out / "pruning-samples.png", grid)
    aims = _aims(head, control, q, lat, {e.key for e in entries})
    quality = q.ratio(head.key, "teacher", "fd_digits")
    base_params = float(entries[0].values["params_m"] or 1.0)
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            taylor_t_max=TAYLOR_T_MAX,
            finetune_steps=FINETUNE_STEPS,
            control_steps=control.steps,
        ),
        metrics=_metrics(),
        rows=[*_rows(entries, q, lat), real_reference_row(cfg.n_samples)],
        headline=speedup_headline(
            head.key,
            lat,
            limit=1 / float(head.values["flops_ratio"] or 1.0),
            limit_kind="estimate",
            memory_ratio=float(head.values["params_m"] or 0.0) / base_params,
            quality_ratio=quality.value,
            quality_interval=quality.interval,
        ),
        aims=aims,
        notes=_notes(cfg, entries, q, lat, aims[0].state == "met"),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Prune at one ratio, print FLOPs, speed and FDD per row, and write the figures."""
    from reference.zoo import ZooError

    from .zoo_specs import load_pruned

    try:
        load_pruned("pruned_teacher")
    except ZooError:
        cfg = replace(cfg, use_zoo=False)
        print("(zoo models pruned_teacher/pruned_scratch not trained: one-shot rows only)")
    entries, q, _, grid = _run(cfg)
    print(f"{'row':20} {'role':9} {'FLOPs':>6} {'NFE':>4} {'speedup':>8} {'FDD':>8}")
    for e in entries:
        v, speed = e.values, e.values.get("speedup")
        shown = "   —    " if speed is None else f"{speed:7.2f}x"
        fdd = q.summary(e.key, "fd_digits").value
        print(f"{e.key:20} {e.role:9} {v['flops_ratio']:6.2f} {e.steps:4d} {shown} {fdd:8.2f}")
    curve, samples = out / "pruning-demo.png", out / "pruning-demo-samples.png"
    save_figures(entries, q, cfg, curve, samples, grid)
    print(f"{curve}: FDD against the fraction of channels removed")
    if samples.is_file():
        print(f"{samples}: rows teacher, fine-tuned prune, from-scratch control")
