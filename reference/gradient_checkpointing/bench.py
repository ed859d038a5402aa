"""Benchmark and demo of [`reference.gradient_checkpointing`][reference.gradient_checkpointing] (the
technique contract of `reference.harness.cli`).

Rows: one training step of the zoo U-Net without checkpointing (baseline), with diffusers' own
``enable_gradient_checkpointing()`` (reference), per module, per stage and with ``sqrt(n)``
segments of stages (techniques), and gradient accumulation over micro-batches without
checkpointing (control: the other way to fit a step into less memory). Beside them, a chain of
residual blocks where Chen et al.'s ``sqrt(n)`` law is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference.harness.cli import Option, at_least, int_tuple
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

from .figures import chain_figure, unet_figure
from .measure import (
    MB,
    chain_curves,
    growth,
    max_grad_difference,
    measure_policy,
    peak_rss_mb,
    training_batch,
)
from .policies import even_segments, sqrt_segments, unet_stages

SLUG = "gradient-checkpointing"
HEADLINE = "sqrt"


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    batch: int = 64
    microbatches: int = 4
    repeats: int = 15
    warmup: int = 2
    chain_ns: tuple[int, ...] = (4, 9, 16, 25, 36, 49, 64, 81, 100)
    rss: bool = True

    def validate(self) -> None:
        at_least(self, batch=1)
        if not 2 <= self.microbatches <= self.batch:
            raise ValueError(
                f"--microbatches must be between 2 and --batch ({self.batch}), "
                f"got {self.microbatches}"
            )
        at_least(self, repeats=1, warmup=0)
        if len(set(self.chain_ns)) < 2 or min(self.chain_ns) < 1:
            raise ValueError(
                f"--chain-ns needs two or more distinct lengths >= 1, got {self.chain_ns}"
            )


FULL = Config()
QUICK = Config(batch=8, repeats=2, warmup=1, chain_ns=(4, 9, 16), rss=False)
DEMO = Config(batch=32, repeats=3, warmup=1, chain_ns=(4, 9, 16, 25, 36, 49, 64), rss=False)
OPTIONS = (
    Option("batch"),
    Option("microbatches"),
    Option("repeats"),
    Option("warmup"),
    Option("chain_ns", int_tuple, "N,N,..."),
)


def row_specs(
    unet: torch.nn.Module, cfg: Config
) -> list[tuple[str, str, int, dict[str, Any], str]]:
    """``(row id, policy, micro-batches, config, role)`` of every measured row."""
    n = len(unet_stages(unet))
    return [
        ("none", "none", 1, {"method": "no-checkpointing"}, "baseline"),
        ("diffusers", "diffusers", 1, {"method": "diffusers-checkpointing"}, "reference"),
        ("module", "module", 1, {"method": "per-module"}, "technique"),
        ("stage", "stage", 1, {"method": "per-stage", "segments": n}, "technique"),
        ("sqrt", "sqrt", 1, {"method": "sqrt-segments", "segments": sqrt_segments(n)}, "technique"),
        ("accum", "none", cfg.microbatches, {"method": "micro-batches", "k": cfg.microbatches},
         "control"),
    ]  # fmt: skip


def measure_rows(unet: torch.nn.Module, cfg: Config) -> tuple[list[Row], Any, dict[str, Any]]:
    """Memory, FLOPs, gradients and interleaved step times of every row."""
    from reference.harness import compare_latency

    b = training_batch(cfg.batch)
    specs = row_specs(unet, cfg)
    measured, steps = {}, {}
    for key, policy, micro, _, _ in specs:
        measured[key], steps[key] = measure_policy(unet, policy, b, micro)
    lat = compare_latency(steps, repeats=cfg.repeats, warmup=cfg.warmup)
    rss = {}
    if cfg.rss:
        probed = ("none", "module", "sqrt", "accum")  # each a fresh process (seconds)
        rss = {k: peak_rss_mb(p, cfg.batch, m) for k, p, m, _, _ in specs if k in probed}
        rss["idle"] = peak_rss_mb(None, cfg.batch)
    rows = []
    for key, _, _, config, role in specs:
        m, base = measured[key], measured["none"]
        values: dict[str, float | None] = {
            "activation_mb": m.saved_bytes / MB,
            "peak_activation_mb": m.peak_bytes / MB,
            "step_ms": lat.median_ms(key),
            "step_time_ratio": lat.median_ms(key) / lat.median_ms("none"),
            "step_gflops": m.flops / cfg.batch / 1e9,
            "grad_max_abs_diff": max_grad_difference(m.grads, base.grads),
        }
        if cfg.rss:
            values["peak_rss_mb"] = rss.get(key)
        ratio_ci = {}
        if key != "none":  # step-time ratio = 1 / speedup: its interval is the reciprocal one
            lo, hi = lat.speedup_interval(key)
            ratio_ci = {"step_time_ratio": (1 / hi, 1 / lo)}
        rows.append(Row(key, config, role, values, intervals=ratio_ci,  # type: ignore[arg-type]
                        spread={"step_ms": lat.iqr_ms(key)}))  # fmt: skip
    flops = {k: m.flops for k, m in measured.items()}
    return rows, lat, {"flops": flops, "rss": rss}


def _notes(unet: torch.nn.Module, cfg: Config, v: dict, lat: Any, extra: dict, curves: Any) -> list:
    h, base, accum = v[HEADLINE], v["none"], v["accum"]
    stages = [name for name, _ in unet_stages(unet)]
    last = even_segments(len(stages), sqrt_segments(len(stages)))[-1]
    techniques = ("module", "stage", "sqrt")
    best = min(techniques, key=lambda k: v[k]["peak_activation_mb"])
    flops = extra["flops"]
    notes = [
        note(
            "setup",
            batch=cfg.batch,
            params_mb=sum(p.numel() for p in unet.parameters()) * 4 / MB,
            retained=base["activation_mb"],
        ),
        note(
            "gradients-equal",
            diff=max(v[k]["grad_max_abs_diff"] for k in ("diffusers", *techniques)),
            accum_diff=accum["grad_max_abs_diff"],
        ),
        note(
            "retained-not-peak",
            retained=h["activation_mb"],
            gain=base["activation_mb"] / h["activation_mb"],
            peak=h["peak_activation_mb"],
            peak_gain=base["peak_activation_mb"] / h["peak_activation_mb"],
            first=stages[last[0]],
            last=stages[last[-1]],
            best=best,
            best_peak=v[best]["peak_activation_mb"],
        ),
        note(
            "step-time",
            iqr=100 * lat.iqr_ms("none") / lat.median_ms("none"),
            flop_ratio=flops[HEADLINE] / flops["none"],
        ),
        note(
            "control",
            k=cfg.microbatches,
            gain=base["activation_mb"] / accum["activation_mb"],
            ratio=accum["step_time_ratio"],
        ),
        note(
            "chain-law",
            plain=growth(curves.saved["none"], curves.ns),
            per_block=growth(curves.saved["per-block"], curves.ns),
            sqrt=growth(curves.saved["sqrt"], curves.ns),
            peak_sqrt=growth(curves.peak["sqrt"], curves.ns),
        ),
        note("positional-tensors"),
        latency_note(cfg.repeats, cfg.batch),
    ]
    if extra["rss"]:
        rss = extra["rss"]
        notes.append(
            note("peak-rss", **{k: rss[k] for k in ("idle", "none", "module", "sqrt", "accum")})
        )
    return notes


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure every policy on the zoo teacher and the chain; write the figures into ``out``."""
    from reference import zoo

    unet = zoo.load_teacher()
    rows, lat, extra = measure_rows(unet, cfg)
    curves = chain_curves(cfg.chain_ns)
    figures = [Figure(f"{SLUG}-unet.png", "policies"), Figure(f"{SLUG}-chain.png", "chain")]
    unet_figure(rows, out / figures[0].file)
    chain_figure(curves, out / figures[1].file)
    v = {r.id: r.values for r in rows}
    h, base = v[HEADLINE], v["none"]
    head = next(r for r in rows if r.id == HEADLINE)
    flops = extra["flops"]
    aims = [
        aim(
            "retained-memory",
            base["activation_mb"] / h["activation_mb"],
            3.0,
            ">=",
            row=HEADLINE,
            against="none",
        ),
        aim(
            "step-time",
            h["step_time_ratio"],
            1.4,
            "<=",
            interval=head.intervals["step_time_ratio"],
            row=HEADLINE,
            against="none",
        ),
        aim(
            "peak-memory",
            base["peak_activation_mb"] / h["peak_activation_mb"],
            3.0,
            ">=",
            row=HEADLINE,
            against="none",
        ),
    ]
    return Measurement(
        settings=settings_of(
            cfg, dtype="float32", use_reentrant=False, chain_width=64, chain_batch=128
        ),
        metrics=metrics(
            "activation_mb",
            peak_activation_mb=Metric("MB", "lower"),
            step_ms=Metric("ms", "lower"),
            step_time_ratio=Metric("x", "lower"),
            step_gflops=Metric("GFLOP", "lower"),
            grad_max_abs_diff=Metric("", "lower"),
            **({"peak_rss_mb": metrics("peak_rss_mb")["peak_rss_mb"]} if cfg.rss else {}),
        ),
        rows=rows,
        headline=speedup_headline(
            HEADLINE,
            lat,
            limit=flops["none"] / flops[HEADLINE],
            limit_kind="estimate",
            memory_ratio=h["activation_mb"] / base["activation_mb"],
        ),
        aims=aims,
        notes=_notes(unet, cfg, v, lat, extra, curves),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Every policy on one training step, and the chain's sqrt(n) law: two tables, two figures."""
    from reference import zoo

    rows, _, _ = measure_rows(zoo.load_teacher(), cfg)
    print(f"One training step of the zoo U-Net, batch {cfg.batch} (MB = {MB} bytes)")
    print(
        f"{'row':10} {'retained MB':>12} {'peak MB':>9} {'step ms':>9} {'x time':>7} {'max|dg|':>9}"
    )
    for r in rows:
        v = r.values
        print(
            f"{r.id:10} {v['activation_mb']:12.2f} {v['peak_activation_mb']:9.2f} "
            f"{v['step_ms']:9.1f} {v['step_time_ratio']:7.2f} {v['grad_max_abs_diff']:9.1e}"
        )
    curves = chain_curves(cfg.chain_ns)
    print("\nChain of n residual blocks: retained activation memory (units of one block input)")
    print(f"{'n':>5} " + " ".join(f"{k:>10}" for k in curves.saved))
    for i, n in enumerate(curves.ns):
        print(f"{n:5d} " + " ".join(f"{c[i]:10.1f}" for c in curves.saved.values()))
    fig1 = unet_figure(rows, out / f"{SLUG}-demo-unet.png")
    fig2 = chain_figure(curves, out / f"{SLUG}-demo-chain.png")
    print(f"\nwrote {fig1} and {fig2}")
