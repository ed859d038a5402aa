"""The notes and the speedup figure of the benchmark ([`bench`][reference.async_pipeline.bench]),
read from the measured rows.

Every number a note quotes is a row's value or a fact the benchmark measured beside the rows
(the split, the limit estimate, the synchronous pipeline's deviation from the single process);
the figure draws each row's speedup against its own pair, the values the site redraws per
language (`glossary.site.benchfigures`, ``("async-pipeline", "speedup-vs-batch")``).

    max_abs(b) = max |x_sync(b) − x_single(b)|   on the last timed latency batch      (1)

Pitfalls: (1) compares two runs of the same noise (`reference.harness.sizes.LATENCY_SEED`)
whose timed calls kept their output; a timed call that returned nothing would leave the note
without its figure (a ``KeyError``, not a silent zero). The figure's English labels are only the
PNG's; the site's SVG takes its words from the catalogs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from reference.harness.compare import FIDELITY
from reference.harness.results import Note, note

SERIES = {"sync": "sync", "async": "async", "stream": "stream (throughput)"}
"""Row kind -> the figure's series label."""


def sync_exact(p: Any, batches: tuple[int, ...]) -> list[float]:
    """(1) per batch: the synchronous pipeline reproduces the single process (float
    reassociation of 1 against 2 threads only)."""
    out = []
    for n in batches:
        sync, single = p.kept[f"b{n}-sync"][0], p.kept[f"b{n}-single"][0]
        out.append(float((sync - single).abs().max()))  # (1)
    return out


def notes(cfg: Any, p: Any, m: Any) -> list[Note]:
    """The result's notes: the split, the limit, exactness, quality, stream, protocols."""
    from reference.harness.cost import latency_note
    from reference.harness.seeds import quality_note

    big = max(cfg.batches)
    rows = {r.id: r for r in m.rows}
    single, asyn, stream = (rows[f"b{big}-{k}"] for k in ("single", "async", "stream"))
    lo, hi = stream.intervals["speedup"]
    load = os.getloadavg()
    return [
        note("split", split=p.split, last=p.units[p.split - 1], batch=big, limit_units=p.balance),
        note(
            "limit",
            batch=big,
            t2=p.limit["t2"],
            s1=p.limit["s1"],
            s2=p.limit["s2"],
            warmup=cfg.warmup,
            async_steps=cfg.steps - cfg.warmup,
            limit=p.limit["limit"],
        ),
        note("sync-exact", max_abs=sync_exact(p, cfg.batches), batches=list(cfg.batches)),
        note(
            "async-quality",
            n=cfg.n_quality,
            steps=cfg.steps,
            rms_async=asyn.values[FIDELITY],
            rms_single=single.values[FIDELITY],
            fd_async=asyn.values["fd_digits"],
            fd_ref=single.values["fd_digits"],
        ),
        note("stream", batch=big, gain=stream.values["speedup"], lo=lo, hi=hi),
        latency_note(cfg.repeats, big),
        note("held-out-reference"),
        quality_note(cfg.n_quality, cfg.seeds),
        note("threads-and-load", load1=load[0], load5=load[1], load15=load[2]),
    ]


def figure(rows: list[Any], cfg: Any, limit: float, path: Path) -> Path:
    """Each kind's speedup against its own pair over the batch sizes (log x), with the lines
    of no gain and of the limit estimate at the largest batch."""
    from reference.harness import curve_plot

    values = {r.id: r.values for r in rows}
    series = {
        label: [values[f"b{n}-{kind}"]["speedup"] for n in cfg.batches]
        for kind, label in SERIES.items()
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    return curve_plot(
        list(cfg.batches),
        series,
        path,
        xlabel="batch size",
        ylabel="speedup vs one process, 2 threads",
        logx=True,
        hlines={"no gain": 1.0, f"limit estimate (1), batch {max(cfg.batches)}": limit},
    )


def throughputs(rows: list[Any]) -> None:
    """(2) added to every timed row: images per second of its requests."""
    for row in rows:
        latency = row.values.get("latency_ms")
        if latency is not None:
            images = row.config["batch"] * row.config.get("requests", 1)
            row.values["throughput"] = images / (latency / 1000)  # (2)


def print_sweep(
    split: int, units: list[str], rows: list[Any], batches: tuple[int, ...], limit: float
) -> None:
    """The demo's table: the split, then per batch size the single process's latency and the
    speedups of the synchronous and AsyncDiff pipelines and of the stream."""
    values = {r.id: r.values for r in rows}
    print(f"split after unit {split}: stage 1 = {', '.join(units[:split])}")
    print(f"{'batch':>5s} {'single ms':>10s} {'sync':>6s} {'async':>6s} {'stream':>7s}")
    for n in batches:
        v = {kind: values[f"b{n}-{kind}"] for kind in ("single", "sync", "async", "stream")}
        print(
            f"{n:5d} {v['single']['latency_ms']:10.1f} {v['sync']['speedup']:6.2f} "
            f"{v['async']['speedup']:6.2f} {v['stream']['speedup']:7.2f}"
        )
    top = values[f"b{max(batches)}-async"]
    print(f"limit estimate (1): {limit:.2f}; AsyncDiff RMS to x*: {top[FIDELITY]:.3g}")
