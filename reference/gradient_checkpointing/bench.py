"""Benchmark and demo of [`reference.gradient_checkpointing`][reference.gradient_checkpointing] (the
technique contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows: one training step of the zoo U-Net without checkpointing (baseline), with diffusers' own
``enable_gradient_checkpointing()`` (reference), per module, per stage and with ``sqrt(n)``
segments of stages (techniques), and gradient accumulation over micro-batches without
checkpointing (control: the other way to fit a step into less memory). Beside them, a chain of
residual blocks where Chen et al.'s ``sqrt(n)`` law is exact; its per-``n`` memory is kept in the
``chain-law`` note, so that the chain figure can be drawn again from the result.

What is declared
================
No variant samples (``sample=None``): checkpointing changes neither the weights nor what the
model computes, and its gradients equal the baseline's by construction, which the tests check and
the ``gradients-equal`` note reports (a fact, not an aim). Each variant's ``timed`` is one training
step (forward and backward of every micro-batch), timed interleaved by the harness; its ``facts``
are what does not vary between calls: the memory counts, the FLOPs and the gradient deviation,
measured once (`reference.gradient_checkpointing.measure`).

    memory ratio     M(sqrt) / M(none), M retained after the forward pass or peak   (1)
    speed            median T(none) / median T(policy)                              (2)
    speed limit      F(none) / F(policy), F = matmul/conv FLOPs of the step          (3)

The claims: (1) at most 1/3 for the retained and for the peak memory (`FactAim`, judged on the
point value: a byte count has no sampling spread), and (2) at least 1/1.4 (`SpeedupAim`, judged on
the round bootstrap). For a memory technique the "speedup" (2) is below 1: it is the inverse of
the step-time ratio, the price of the memory it saves. (3) is an estimate, not a bound: step time
is not proportional to FLOPs.

Pitfalls
========
* The harness times every variant under ``torch.inference_mode()``; a training step needs
  autograd, so every variant is declared ``grad=True`` and the harness switches it back on
  inside the timed call.
* The timed step does the same work on every call: gradients are zeroed in place
  (``zero_grad(set_to_none=False)``), and there is no optimizer whose state could grow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference.harness.compare import (
    Comparison,
    FactAim,
    HeadlineSpec,
    Measured,
    Outcome,
    Role,
    SpeedupAim,
    Variant,
    outcome,
)
from reference.harness.compare import measure as measure_comparison
from reference.harness.declared import lower
from reference.harness.entry import integer, integers
from reference.harness.results import Figure, Metric, metrics, settings_of

from .figures import chain_figure, unet_figure
from .measure import (
    MB,
    PolicyMeasurement,
    chain_curves,
    max_grad_difference,
    measure_policy,
    peak_rss_mb,
    training_batch,
)
from .notes import Study, result_notes
from .policies import sqrt_segments, unet_stages

CONTRACT = 2
SLUG = "gradient-checkpointing"
HEADLINE = "sqrt"
MEMORY_GAIN = 3.0
"""The memory aims: at least this many times less activation memory than the baseline (1)."""
MAX_STEP_TIME = 1.4
"""The step-time aim: at most this multiple of the baseline's step time, a speed (2) of at least
its inverse (Chen et al.'s one extra forward pass costs 4/3)."""
RSS_ROWS = ("none", "module", "sqrt", "accum")
"""Rows whose peak RSS is measured, each in a fresh process (seconds each)."""
CHAIN_WIDTH, CHAIN_BATCH = 64, 128


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
        if self.batch < 1:
            raise ValueError(f"--batch must be >= 1, got {self.batch}")
        if not 2 <= self.microbatches <= self.batch:
            raise ValueError(
                f"--microbatches must be between 2 and --batch ({self.batch}), "
                f"got {self.microbatches}"
            )
        if self.repeats < 2 or self.warmup < 0:
            raise ValueError("--repeats must be >= 2 (an interquartile range) and --warmup >= 0")
        if len(set(self.chain_ns)) < 2 or min(self.chain_ns) < 1:
            raise ValueError(
                f"--chain-ns needs two or more distinct lengths >= 1, got {self.chain_ns}"
            )


FULL = Config()
QUICK = Config(batch=4, microbatches=2, repeats=2, warmup=0, chain_ns=(4, 9), rss=False)
DEMO = Config(batch=32, repeats=3, warmup=1, chain_ns=(4, 9, 16, 25, 36, 49, 64), rss=False)
OPTIONS = (
    integer("batch", low=1, high=512),
    integer("microbatches", low=2, high=512),
    integer("repeats", low=2, high=200),
    integer("warmup", low=0, high=20),
    integers("chain_ns", low=1, high=400, min_count=2),
)

AIMS = (
    FactAim("retained-memory", HEADLINE, "none", "activation_mb", "<=", 1 / MEMORY_GAIN),
    SpeedupAim("step-time", HEADLINE, "none", ">=", 1 / MAX_STEP_TIME),
    FactAim("peak-memory", HEADLINE, "none", "peak_activation_mb", "<=", 1 / MEMORY_GAIN),
)
"""The technique's claims against the baseline: (1) for both memories, (2) for the step time."""


@dataclass(frozen=True)
class RowSpec:
    """A measured row: its id, checkpointing policy, micro-batches, configuration and role."""

    id: str
    policy: str
    microbatches: int
    config: dict[str, Any]
    role: Role


def row_specs(stages: int, cfg: Config) -> list[RowSpec]:
    """Every row of a U-Net with ``stages`` stages (`unet_stages`)."""
    segments = sqrt_segments(stages)
    accum = {"method": "micro-batches", "k": cfg.microbatches}
    return [
        RowSpec("none", "none", 1, {"method": "no-checkpointing"}, "baseline"),
        RowSpec("diffusers", "diffusers", 1, {"method": "diffusers-checkpointing"}, "reference"),
        RowSpec("module", "module", 1, {"method": "per-module"}, "technique"),
        RowSpec("stage", "stage", 1, {"method": "per-stage", "segments": stages}, "technique"),
        RowSpec("sqrt", "sqrt", 1, {"method": "sqrt-segments", "segments": segments}, "technique"),
        RowSpec("accum", "none", cfg.microbatches, accum, "control"),
    ]


def facts_of(m: PolicyMeasurement, base: PolicyMeasurement, batch: int) -> dict[str, float]:
    """A row's counted figures: retained and peak activation MB, GFLOPs per sample (with the
    recomputation), and the largest gradient deviation from the baseline."""
    return {
        "activation_mb": m.saved_bytes / MB,
        "peak_activation_mb": m.peak_bytes / MB,
        "step_gflops": m.flops / batch / 1e9,
        "grad_max_abs_diff": max_grad_difference(m.grads, base.grads),
    }


def comparison(cfg: Config, unet: torch.nn.Module) -> tuple[Comparison, Study]:
    """Every row's step on its own copy of ``unet``, measured once for its facts; the harness
    times the steps and judges `AIMS`."""
    b = training_batch(cfg.batch)
    specs = row_specs(len(unet_stages(unet)), cfg)
    measured = {s.id: measure_policy(unet, s.policy, b, s.microbatches) for s in specs}
    base = measured["none"][0]
    rss: dict[str, float] = {}
    if cfg.rss:
        probed = [s for s in specs if s.id in RSS_ROWS]
        rss = {s.id: peak_rss_mb(s.policy, cfg.batch, s.microbatches) for s in probed}
        rss["idle"] = peak_rss_mb(None, cfg.batch)
    variants = []
    for s in specs:
        m, step = measured[s.id]
        facts = facts_of(m, base, cfg.batch)
        if s.id in rss:
            facts["peak_rss_mb"] = rss[s.id]
        variants.append(Variant(s.id, s.config, s.role, timed=step, facts=facts, grad=True))
    flops = {k: m.flops for k, (m, _) in measured.items()}
    retained = {v.id: v.facts["activation_mb"] for v in variants}
    c = Comparison(
        variants=tuple(variants),
        metrics=_metrics(cfg),
        score=lambda x, same_seed: {},
        seeds=(),
        aims=AIMS,
        headline=HeadlineSpec(
            HEADLINE,
            limit=flops["none"] / flops[HEADLINE],  # (3), an estimate
            limit_kind="estimate",
            memory_ratio=retained[HEADLINE] / retained["none"],  # (1)
        ),
        repeats=cfg.repeats,
        warmup=cfg.warmup,
    )
    return c, Study(flops, rss, chain_curves(cfg.chain_ns, CHAIN_WIDTH, CHAIN_BATCH))


def _metrics(cfg: Config) -> Mapping[str, Metric]:
    rss = ("peak_rss_mb",) if cfg.rss else ()
    return metrics(
        "latency_ms",
        "speedup",
        "activation_mb",
        *rss,
        **lower("peak_activation_mb", unit="MB"),
        **lower("step_gflops", unit="GFLOP"),
        **lower("grad_max_abs_diff"),
    )


def _measured(cfg: Config) -> tuple[torch.nn.Module, Measured, Study]:
    from reference import zoo

    unet = zoo.load_teacher()
    c, study = comparison(cfg, unet)
    return unet, measure_comparison(c), study


def measure(cfg: Config, staging: Path) -> Outcome:
    """Measure every policy on the zoo teacher and the chain; write the two figures."""
    unet, m, study = _measured(cfg)
    figures = [Figure(f"{SLUG}-unet.png", "policies"), Figure(f"{SLUG}-chain.png", "chain")]
    unet_figure(m.rows, staging / figures[0].file)
    chain_figure(study.chain, staging / figures[1].file)
    return outcome(
        m,
        settings=settings_of(
            cfg,
            dtype="float32",
            use_reentrant=False,
            chain_width=CHAIN_WIDTH,
            chain_batch=CHAIN_BATCH,
        ),
        notes=result_notes(unet, cfg, m, study, HEADLINE),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Every policy on one training step, and the chain's sqrt(n) law: two tables, two figures."""
    _, m, study = _measured(cfg)
    print(f"One training step of the zoo U-Net, batch {cfg.batch} (MB = {MB} bytes)")
    print(f"{'row':10} {'retained MB':>12} {'peak MB':>9} {'step ms':>9}", end=" ")
    print(f"{'speed':>7} {'max|dg|':>9}")
    for r in m.rows:
        v = r.values
        print(
            f"{r.id:10} {v['activation_mb']:12.2f} {v['peak_activation_mb']:9.2f} "
            f"{v['latency_ms']:9.1f} {v['speedup']:7.2f} {v['grad_max_abs_diff']:9.1e}"
        )
    curves = study.chain
    print("\nChain of n residual blocks: retained activation memory (units of one block input)")
    print(f"{'n':>5} " + " ".join(f"{k:>10}" for k in curves.saved))
    for i, n in enumerate(curves.ns):
        print(f"{n:5d} " + " ".join(f"{c[i]:10.1f}" for c in curves.saved.values()))
    fig1 = unet_figure(m.rows, out / f"{SLUG}-demo-unet.png")
    fig2 = chain_figure(curves, out / f"{SLUG}-demo-chain.png")
    print(f"\nwrote {fig1} and {fig2}")
