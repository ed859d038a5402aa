"""Benchmark and demo of :mod:`reference.pruning` (the technique contract of
:mod:`reference.harness.cli`).

Rows: the zoo teacher U-Net (baseline); one-shot structured prunes at every ratio and criterion
and the zoo's pruned + fine-tuned teacher (technique); the same pruned architecture trained from
scratch on the same budget (control); unstructured magnitude pruning (reference: sparsity
without speed). Latency is one U-Net forward, interleaved over all rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from reference.harness.cli import Option, at_least, float_tuple, name_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)

from .measure import Entry, build_entries, measure, save_figures
from .structured import CRITERIA
from .zoo_specs import CALIBRATION, FINETUNE_STEPS, TAYLOR_T_MAX, ZOO_SPECS


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    ratios: tuple[float, ...] = (0.25, 0.5, 0.75)
    criteria: tuple[str, ...] = ("l1", "taylor")
    unstructured: tuple[float, ...] = (0.5, 0.75)
    n_samples: int = 256
    steps: int = 20
    latency_batch: int = 64
    repeats: int = 30
    warmup: int = 3
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
        for name in ("steps", "latency_batch", "repeats", "calib_batches", "calib_batch"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}"
                )
        at_least(self, warmup=0, n_samples=2)


FULL = Config()
QUICK = Config(
    ratios=(0.5,),
    unstructured=(0.5,),
    n_samples=40,
    steps=4,
    latency_batch=8,
    repeats=3,
    warmup=1,
    calib_batches=2,
    calib_batch=16,
)
DEMO = Config(ratios=(0.5,), unstructured=(0.5,), n_samples=100, steps=10, repeats=5)
OPTIONS = (
    Option("ratios", float_tuple, "X,X,..."),
    Option("criteria", name_tuple, "NAME,..."),
    Option("unstructured", float_tuple, "X,X,..."),
    Option("n_samples"),
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
        "gflops",
        "params_m",
        "mse_vs_baseline",
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


def _rows(entries: list[Entry], lat: object) -> list[Row]:
    return [
        Row(
            e.key,
            e.config,
            e.role,  # type: ignore[arg-type]
            dict(e.values),
            intervals={} if i == 0 else {"speedup": lat.speedup_interval(e.key)},  # type: ignore[attr-defined]
            spread=dict(e.spread),
        )
        for i, e in enumerate(entries)
    ]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure structured and unstructured pruning of the zoo teacher; figures into ``out``."""
    from reference.harness import fdd_floor

    entries = build_entries(cfg)
    lat = measure(entries, cfg)
    by_key = {e.key: e for e in entries}
    base = by_key["teacher"].values
    head = by_key.get("finetuned") or by_key[f"{cfg.criteria[-1]}-{cfg.ratios[0]}"]
    h = head.values
    q_ratio = h["fd_digits"] / base["fd_digits"]
    speed, speed_ci = h["speedup"], lat.speedup_interval(head.key)
    figures = [Figure("pruning.png", "fdd-vs-ratio")]
    if "finetuned" in by_key:
        figures.append(Figure("pruning-samples.png", "samples"))
    save_figures(entries, cfg, out / figures[0].file, out / "pruning-samples.png")

    one_shot = [
        e.values["fd_digits"] for e in entries if e.config["method"].startswith("structured")
    ]
    notes = [
        latency_note(cfg.repeats, cfg.latency_batch),
        note("fdd-at-n", n=cfg.n_samples, floor=fdd_floor(cfg.n_samples)),
        note("same-noise", steps=cfg.steps),
        note("depgraph", tp_version=_tp_version()),
        note(
            "structured-is-smaller",
            ratio=head.config["ratio"],
            flops=h["flops_ratio"],
            params=h["params_m"] / base["params_m"],
        ),
        note("unstructured-dense"),
        note("one-shot", best=min(one_shot), teacher=base["fd_digits"]),
    ]
    aims = [
        aim("speedup", speed, 1.5, ">=", interval=speed_ci, ratio=head.config["ratio"]),
        aim("quality", q_ratio, 1.3, "<="),
    ]
    if "finetuned" in by_key:
        ft, sc = by_key["finetuned"].values, by_key["scratch"].values
        teacher_steps = _teacher_steps()
        notes.append(
            note(
                "finetune-budget",
                steps=FINETUNE_STEPS,
                batch=ZOO_SPECS["pruned_teacher"].batch,
                share=100 * FINETUNE_STEPS * ft["flops_ratio"] / teacher_steps,
                teacher_steps=teacher_steps,
                size=1 / ft["flops_ratio"],
                fd_finetuned=ft["fd_digits"],
                fd_scratch=sc["fd_digits"],
            )
        )
        aims.append(
            aim("beats-scratch", ft["fd_digits"] / sc["fd_digits"], 1.0, "<=", steps=FINETUNE_STEPS)
        )
    if speed < 1.5:
        notes.append(note("speedup-gap", speedup=speed, flop_speedup=1 / h["flops_ratio"]))
    return Measurement(
        settings=settings_of(
            cfg, scheduler="ddim", taylor_t_max=TAYLOR_T_MAX, finetune_steps=FINETUNE_STEPS
        ),
        metrics=_metrics(),
        rows=_rows(entries, lat),
        headline=speedup_headline(
            head.key,
            lat,
            limit=1 / h["flops_ratio"],
            limit_kind="bound",
            memory_ratio=h["params_m"] / base["params_m"],
            quality_ratio=q_ratio,
        ),
        aims=aims,
        notes=notes,
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
    entries = build_entries(cfg)
    measure(entries, cfg)
    print(f"{'row':20} {'role':9} {'FLOPs':>6} {'params M':>8} {'speedup':>8} {'FDD':>8}")
    for e in entries:
        v = e.values
        print(
            f"{e.key:20} {e.role:9} {v['flops_ratio']:6.2f} {v['params_m']:8.3f} "
            f"{v['speedup']:7.2f}x {v['fd_digits']:8.2f}"
        )
    curve, grid = out / "pruning-demo.png", out / "pruning-demo-samples.png"
    save_figures(entries, cfg, curve, grid)
    print(f"{curve}: FDD against the fraction of channels removed")
    if grid.is_file():
        print(f"{grid}: rows teacher, fine-tuned prune, from-scratch control")
