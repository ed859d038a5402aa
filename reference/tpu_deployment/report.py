"""The figures and notes of the tpu-deployment result, from the rows the harness derived.

`figures` draws the latency bars and the compile-payoff lines (the site redraws both per
language from the rows: ``glossary.site.benchfigures``); `notes` quotes the numbers the
catalogs' sentences need. The payoff model: serving ``k`` images costs ``compile_s + k ·
ms_per_image / 1000`` seconds, so an option that compiles longer is ahead after
``extra compile / per-image gain`` images (`reference.tpu_deployment.measure.payoff`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reference.harness.results import Figure, Row, note


def figures(rows: Mapping[str, Row], n: int, steps: int, out: Path, slug: str) -> list[Figure]:
    """The latency bars and the compile-payoff lines (redrawn per language by the site from
    the rows: ``glossary.site.benchfigures``)."""
    from reference.harness import bar_chart, curve_plot

    figs = [Figure(f"{slug}.png", "latency"), Figure(f"{slug}-compile-payoff.png", "payoff")]
    timed = [k for k, r in rows.items() if "latency_ms" in r.values]  # in declaration order
    bar_chart(
        timed,
        [rows[k].values["latency_ms"] for k in timed],
        out / figs[0].file,
        roles=[rows[k].role for k in timed],
        errors=[rows[k].spread["latency_ms"] for k in timed],
        ylabel=f"ms for {n} images x {steps} DDIM steps (CPU)",
    )
    images = [0, n, 4 * n, 16 * n, 64 * n]
    series = {
        k: [rows[k].values["compile_s"] + i * rows[k].values["ms_per_image"] / 1000 for i in images]
        for k in ("torch", "per-step", "compiled")
    }
    curve_plot(
        images,
        series,
        out / figs[1].file,
        xlabel="images served",
        ylabel="seconds incl. compilation (CPU)",
    )
    return figs


def payoff_notes(rows: Mapping[str, Row]) -> list:
    """When the whole-loop program is ahead of torch and of per-step dispatch."""
    from .measure import payoff

    per = {k: r.values["ms_per_image"] for k, r in rows.items() if "ms_per_image" in r.values}
    comp = {k: r.values["compile_s"] for k, r in rows.items() if "compile_s" in r.values}
    vs_torch = payoff(comp["compiled"], per["torch"], per["compiled"])
    vs_step = payoff(comp["compiled"] - comp["per-step"], per["per-step"], per["compiled"])
    return [
        note(vs_torch[0], row="torch", **vs_torch[1]),
        note(vs_step[0], row="per-step", **vs_step[1]),
    ]


def notes(cfg: Any, rows: Mapping[str, Row], ways: Any, tolerance: float) -> list:
    """Every note of the result, with the numbers its sentence quotes (``tolerance``: the
    parity aim's bound on the largest pixel deviation)."""
    import torch

    from reference.harness import quality_note
    from reference.harness.cost import latency_note

    compiled = rows["compiled"]
    notes = [
        note("cpu-only", threads=torch.get_num_threads()),
        note("same-ode", steps=cfg.steps, solution_steps=cfg.solution_steps),
        note(
            "parity",
            max_diff=max(compiled.seeds["max_abs_vs_torch"]),
            n=cfg.n_quality,
            seeds=len(cfg.seeds),
            steps=cfg.steps,
            tol=tolerance,
        ),
        note(
            "compile-times",
            loop=compiled.values["compile_s"],
            step=rows["per-step"].values["compile_s"],
        ),
        *payoff_notes(rows),
        note("held-out-reference"),
        quality_note(cfg.n_quality, cfg.seeds),
        note("quality-rows", n=cfg.n_quality, batch=cfg.batch_latency),
        note("published-tpu"),
        latency_note(cfg.repeats, cfg.batch_latency),
    ]
    if ways.stream:
        ex, bu = ways.stream["exact"], ways.stream["buckets"]
        notes.append(
            note(
                "stream",
                sizes=list(cfg.stream),
                exact_programs=ex["compilations"],
                exact_s=ex["seconds"],
                buckets=list(cfg.buckets),
                bucket_programs=bu["compilations"],
                bucket_s=bu["seconds"],
            )
        )
    if "sharded" in rows:
        notes.append(
            note(
                "sharded",
                devices=ways.devices,
                max_diff=ways.max_abs["sharded"],
                sharded_ms=rows["sharded"].values["latency_ms"],
                loop_ms=compiled.values["latency_ms"],
                cores=os.cpu_count() or 1,
            )
        )
    if "bf16" in rows:
        notes.append(note("bf16", max_diff=rows["bf16"].values["max_abs_vs_torch"]))
    return notes
