"""Benchmark and demo of :mod:`reference.async_pipeline` (the technique contract of
:mod:`reference.harness.cli`).

For every batch size: one process with 2 threads (baseline), the 2-stage pipeline run
synchronously (control) and AsyncDiff-style (technique), and for a stream of two requests the
sequential single process (baseline) against the requests pipelined through the stages
(technique). All five are timed interleaved in one :func:`~reference.harness.compare_latency`.
The benchmark is one command on one machine: it spawns its two stage processes itself
(:class:`~.runtime.StagePool`) and is refused under ``torchrun``.

The demo runs either way. ``python -m reference.async_pipeline`` spawns the stages and prints the
sweep; under ``torchrun`` (``RANK`` and ``WORLD_SIZE`` set) the two launched processes are the
stages (:mod:`~.launch`), rank 0 prints and writes ``async-pipeline-torchrun.{safetensors,json}``
into ``--out``, and ``--threads`` is the thread count of each rank::

    # one host, two processes
    torchrun --standalone --nproc-per-node=2 -m reference.async_pipeline --quick --threads 1
    # two hosts, one process each: run on both, HOST:PORT reachable from both
    torchrun --nnodes=2 --nproc-per-node=1 --rdzv-id=pipe --rdzv-backend=c10d \\
        --rdzv-endpoint=HOST:PORT -m reference.async_pipeline --out DIR
    # fixed roles (static rendezvous): HOST runs --node-rank=0, is rank 0 and writes the output
    torchrun --nnodes=2 --nproc-per-node=1 --node-rank=0 --master-addr=HOST --master-port=PORT \\
        -m reference.async_pipeline --out DIR    # --node-rank=1 on the other host

Any other world size than 2 is one error line (exit 2).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

SLUG = "async-pipeline"
SPEED_AIM = 1.4
QUALITY_AIM = 1.2
ROWS: dict[str, tuple[str, str]] = {
    "single": ("single-process", "baseline"),
    "sync": ("sync-pipeline", "control"),
    "async": ("asyncdiff", "technique"),
    "single_x2": ("sequential-requests", "baseline"),
    "stream": ("stream-pipeline", "technique"),
}
"""Timed function -> (configuration method, role)."""


@dataclass(frozen=True)
class Config:
    """Batch sizes of the sweep, DDIM steps, synchronous warm-up steps, timing rounds."""

    batches: tuple[int, ...] = (1, 8, 64)
    steps: int = 20
    warmup: int = 2
    repeats: int = 15

    def validate(self) -> None:
        if not self.batches or min(self.batches) < 1:
            raise ValueError(f"--batches must be >= 1, got {list(self.batches)}")
        at_least(self, steps=2)
        if not 0 <= self.warmup < self.steps:
            raise ValueError(
                f"--warmup must be in 0..steps-1 ({self.steps - 1}), got {self.warmup}"
            )
        at_least(self, repeats=1)
        launched = launched_rank()  # torchrun: one process per stage
        if launched is not None and launched[1] != 2:
            from glossary.i18n import ui_lang_from_env
            from glossary.resulttext import ResultText

            text = ResultText(SLUG, ui_lang_from_env())
            raise ValueError(text.message("error.world-size", {"world": launched[1]}))


def launched_rank() -> tuple[int, int] | None:
    """``(RANK, WORLD_SIZE)`` when a launcher (``torchrun``) started this process, else ``None``
    (the variables of ``torch.distributed``'s ``env://`` rendezvous); ``ValueError`` when they
    are set but are not integers. Only the demo uses the ranks: run ``--bench`` without
    ``torchrun`` (it spawns its own two stage processes)."""
    import os

    rank, size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None or size is None:
        return None
    try:
        return int(rank), int(size)
    except ValueError:
        raise ValueError(f"RANK={rank!r} and WORLD_SIZE={size!r} must be integers") from None


FULL = Config()
QUICK = Config(batches=(2,), steps=3, warmup=1, repeats=2)
DEMO = Config(batches=(1, 16), steps=10, warmup=2, repeats=2)
OPTIONS = (
    Option("batches", int_tuple, "N,N,..."),
    Option("steps"),
    Option("warmup"),
    Option("repeats"),
)


def sweep(cfg: Config) -> dict[str, Any]:
    """Time single-process (2 threads) vs 2-stage sync / async / stream for every batch."""
    from tqdm import tqdm

    from reference import zoo
    from reference.harness import compare_latency, psnr_per_sample

    from .runtime import Job, StagePool, single_process
    from .stages import balanced_split, unit_names, unit_times_ms

    unet = zoo.load_teacher()
    big = max(cfg.batches)
    times = unit_times_ms(unet, big, repeats=1 if big <= 4 else 3)
    split = balanced_split(times)
    s1, s2 = sum(list(times.values())[:split]), sum(list(times.values())[split:])
    out: dict[str, Any] = {
        "split": split,
        "units": unit_names(unet),
        "limit_units": (s1 + s2) / max(s1, s2),
        "per_batch": {},
    }
    with StagePool(split) as pool:
        for n in tqdm(cfg.batches, desc="batch sweep", leave=False):
            jobs = {m: Job(n, cfg.steps, mode=m, warmup=cfg.warmup) for m in ("sync", "async")}
            stream = Job(n, cfg.steps, mode="stream", requests=2)
            funcs = {
                "single": lambda j=jobs["sync"]: single_process(unet, j),
                "sync": lambda j=jobs["sync"]: pool.run(j),
                "async": lambda j=jobs["async"]: pool.run(j),
                "single_x2": lambda j=stream: single_process(unet, j),
                "stream": lambda j=stream: pool.run(j),
            }
            lat = compare_latency(funcs, repeats=cfg.repeats, warmup=1)
            ref = single_process(unet, jobs["sync"])[0]
            res_async, res_sync = pool.run(jobs["async"]), pool.run(jobs["sync"])
            compute = res_async.compute_s
            out["per_batch"][n] = {
                "lat": lat,
                "ref": ref,
                "async": res_async.samples[0],
                "sync_max_abs": float((res_sync.samples[0] - ref).abs().max()),
                "psnr": float(psnr_per_sample(res_async.samples[0], ref).mean()),
                "limit": sum(compute) / max(compute),  # total compute over the slower rank
                "stream_gain": lat.median_ms("single_x2") / lat.median_ms("stream"),
            }
    return out


def _rows(cfg: Config, s: dict[str, Any]) -> list[Row]:
    rows = []
    for n, d in s["per_batch"].items():
        lat = d["lat"]
        for key, (method, role) in ROWS.items():
            requests = 2 if key in ("single_x2", "stream") else 1
            config: dict[str, Any] = {"method": method, "batch": n}
            config |= {"warmup": cfg.warmup} if key == "async" else {}
            config |= {"requests": requests} if requests > 1 else {}
            values: dict[str, float | None] = {
                "latency_ms": lat.median_ms(key),
                "throughput": requests * n / (lat.median_ms(key) / 1000),
            }
            intervals = {}
            if key in ("sync", "async"):
                values["speedup"] = lat.speedup[key]
                intervals["speedup"] = lat.speedup_interval(key)
            if key == "async":
                values["psnr_vs_baseline"] = d["psnr"]
            row_id = f"b{n}-{key.replace('_', '-')}"
            spread = {"latency_ms": lat.iqr_ms(key)}
            rows.append(Row(row_id, config, role, values, intervals=intervals, spread=spread))  # type: ignore[arg-type]
    return rows


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Run :func:`sweep`; FDD of the async samples and the baseline at the largest batch."""

    from reference.harness import fdd_floor, frechet_digits_distance

    s = sweep(cfg)
    big = max(cfg.batches)
    top = s["per_batch"][big]
    fd_async, fd_ref = frechet_digits_distance(top["async"]), frechet_digits_distance(top["ref"])
    rows = _rows(cfg, s)
    for row in rows:  # quality beside latency at the compute-bound batch
        if row.id in (f"b{big}-single", f"b{big}-async"):
            row.values["fd_digits"] = fd_async if row.id.endswith("async") else fd_ref
    head = f"b{big}-async"
    speedup, interval = top["lat"].speedup["async"], top["lat"].speedup_interval("async")
    batches = list(s["per_batch"])
    figures = [Figure(f"{SLUG}.png", "speedup-vs-batch")]
    _figure(s, out / figures[0].file)
    load = os.getloadavg()
    notes = [
        note(
            "split",
            split=s["split"],
            last=s["units"][s["split"] - 1],
            batch=big,
            limit_units=s["limit_units"],
            limit=top["limit"],
        ),
        note(
            "sync-exact",
            max_abs=[d["sync_max_abs"] for d in s["per_batch"].values()],
            batches=batches,
        ),
        note(
            "async-quality",
            psnr=[d["psnr"] for d in s["per_batch"].values()],
            batches=batches,
            batch=big,
            fd_async=fd_async,
            fd_ref=fd_ref,
            floor=fdd_floor(big),
        ),
        note("stream", batch=big, gain=top["stream_gain"]),
        latency_note(cfg.repeats, big),
        note("threads-and-load", load1=load[0], load5=load[1], load15=load[2]),
    ]
    return Measurement(
        settings=settings_of(cfg, split=s["split"], backend="gloo", threads_per_stage=1),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "psnr_vs_baseline",
            "fd_digits",
            throughput=Metric("images_per_s", "higher"),
        ),
        rows=rows,
        headline=speedup_headline(
            head,
            top["lat"],
            "async",
            limit=top["limit"],
            limit_kind="estimate",  # from the ranks' measured compute times
            quality_ratio=fd_async / fd_ref,
        ),
        aims=[
            aim("speedup", speedup, SPEED_AIM, ">=", interval=interval, batch=big),
            aim("quality", fd_async / fd_ref, QUALITY_AIM, "<=", batch=big),
        ],
        notes=notes,
        figures=figures,
    )


def _figure(s: dict[str, Any], path: Path) -> Path:
    from reference.harness import curve_plot

    per = s["per_batch"].values()
    series = {key: [d["lat"].speedup[key] for d in per] for key in ("sync", "async")}
    series["stream (throughput)"] = [d["stream_gain"] for d in per]
    path.parent.mkdir(parents=True, exist_ok=True)
    return curve_plot(
        list(s["per_batch"]),
        series,
        path,
        xlabel="batch size",
        ylabel="speedup vs one process, 2 threads",
        logx=True,
        hlines={"no gain": 1.0, "limit (compute)": max(d["limit"] for d in per)},
    )


def demo(cfg: Config, out: Path) -> None:
    """A short sweep: the split, a table per batch size and the speedup figure; under
    ``torchrun``, this process is one stage (:mod:`~.launch`) and only rank 0 prints."""
    if launched_rank() is not None:
        return _launched_demo(cfg, out)
    s = sweep(cfg)
    split = s["split"]
    print(f"split after unit {split}: stage 1 = {', '.join(s['units'][:split])}")
    print(
        f"{'batch':>5s} {'single ms':>10s} {'sync':>6s} {'async':>6s} {'stream':>7s} "
        f"{'PSNR dB':>8s} {'limit':>6s}"
    )
    for n, d in s["per_batch"].items():
        lat = d["lat"]
        print(
            f"{n:5d} {lat.median_ms('single'):10.1f} {lat.speedup['sync']:6.2f} "
            f"{lat.speedup['async']:6.2f} {d['stream_gain']:7.2f} {d['psnr']:8.1f} "
            f"{d['limit']:6.2f}"
        )
    print(f"figure: {_figure(s, out / f'{SLUG}-demo.png')}")


def _launched_demo(cfg: Config, out: Path) -> None:
    from glossary.i18n import ui_lang_from_env
    from glossary.resulttext import ResultText

    from .launch import report, run_ranks, write

    state = run_ranks(cfg)
    if state is not None:  # rank 0
        report(*write(cfg, state, out), ResultText(SLUG, ui_lang_from_env()))
