"""Benchmark and demo of [`reference.async_pipeline`][reference.async_pipeline] (the technique
contract of `reference.harness.cli`).

For every batch size: one process with 2 threads (baseline), the 2-stage pipeline run synchronously
(control) and AsyncDiff-style (technique), and for a stream of two requests the sequential single
process (baseline) against the requests pipelined through the stages (technique). All five are timed
interleaved in one `compare_latency`. Quality: the single process and AsyncDiff from the same noise
on every seed (paired), FDD, KID and trajectory PSNR. The headline's limit and its speedup refer to
the same configuration: the pipeline (two 1-thread stages) against one process with 2 threads
([`pipeline_limit`][reference.async_pipeline.bench.pipeline_limit]).

The benchmark is one command on one machine: it spawns its two stage processes itself
([`StagePool`][reference.async_pipeline.runtime.StagePool]) and is refused under ``torchrun``.

The demo runs either way. ``python -m reference.async_pipeline`` spawns the stages and prints the
sweep; under ``torchrun`` (``RANK`` and ``WORLD_SIZE`` set) the two launched processes are the
stages ([`launch`][reference.async_pipeline.launch]), rank 0 prints and writes
``async-pipeline-torchrun.{safetensors,json}`` into ``--out``, and ``--threads`` is the thread count
of each rank:

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

from reference.harness.cli import Option, at_least, check_seeds, int_tuple, launched_rank
from reference.harness.cost import latency_note
from reference.harness.results import (
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
    """Batch sizes of the sweep, DDIM steps, synchronous warm-up steps, timing rounds, and the
    sample size and noise seeds of the quality figures."""

    batches: tuple[int, ...] = (1, 8, 64)
    steps: int = 20
    warmup: int = 2
    repeats: int = 15
    n_quality: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS

    def validate(self) -> None:
        if not self.batches or min(self.batches) < 1:
            raise ValueError(f"--batches must be >= 1, got {list(self.batches)}")
        at_least(self, steps=2)
        if not 0 <= self.warmup < self.steps:
            raise ValueError(
                f"--warmup must be in 0..steps-1 ({self.steps - 1}), got {self.warmup}"
            )
        at_least(self, repeats=1, n_quality=2)
        check_seeds(self.seeds)
        launched = launched_rank()  # torchrun: one process per stage
        if launched is not None and launched[1] != 2:
            from glossary.i18n import ui_lang_from_env
            from glossary.resulttext import ResultText

            text = ResultText(SLUG, ui_lang_from_env())
            raise ValueError(text.message("error.world-size", {"world": launched[1]}))


FULL = Config()
QUICK = Config(batches=(2,), steps=3, warmup=1, repeats=2, n_quality=12, seeds=(0, 1))
DEMO = Config(batches=(1, 16), steps=10, warmup=2, repeats=2, seeds=(0, 1))
OPTIONS = (
    Option("batches", int_tuple, "N,N,..."),
    Option("steps"),
    Option("warmup"),
    Option("repeats"),
    Option("n_quality"),
    Option("seeds", int_tuple, "S,S,..."),
)


def pipeline_limit(unet: Any, batch: int, split: int, cfg: Config) -> dict[str, float]:
    """The ideal speedup of AsyncDiff over one process with the run's threads (2), from unit
    times measured apart from the timing rounds: with stage times ``s1, s2`` at 1 thread (how
    the stage processes run), the full forward ``T2`` at the process's threads, ``S`` steps of
    which ``w`` are synchronous:

        limit = S T2 / (w (s1 + s2) + (S - w) max(s1, s2))                          (1)

    An estimate, not a bound: it leaves out the hand-off, the scheduler step and Python, and
    isolated unit timings are not the units' times inside a run.
    """
    import torch

    from .stages import unit_times_ms

    one = list(unit_times_ms(unet, batch, repeats=3, threads=1).values())
    t2 = sum(unit_times_ms(unet, batch, repeats=3, threads=torch.get_num_threads()).values())
    s1, s2 = sum(one[:split]), sum(one[split:])
    w, steps = cfg.warmup, cfg.steps
    limit = steps * t2 / (w * (s1 + s2) + (steps - w) * max(s1, s2))  # (1)
    return {"limit": limit, "t2": t2, "s1": s1, "s2": s2}


def sweep(cfg: Config) -> dict[str, Any]:
    """Time single-process (2 threads) vs 2-stage sync / async / stream for every batch."""
    from tqdm import tqdm

    from reference import zoo
    from reference.harness import compare_latency

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
            res_sync = pool.run(jobs["sync"])
            out["per_batch"][n] = {
                "lat": lat,
                "sync_max_abs": float((res_sync.samples[0] - ref).abs().max()),
                "stream_gain": lat.speedup_over("stream", "single_x2"),
                **pipeline_limit(unet, n, split, cfg),
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
            if key == "stream":  # against its own baseline: the same requests one by one
                values["speedup"] = lat.speedup_over(key, "single_x2")
                intervals["speedup"] = lat.speedup_interval(key, against="single_x2")
            row_id = f"b{n}-{key.replace('_', '-')}"
            spread = {"latency_ms": lat.iqr_ms(key)}
            rows.append(Row(row_id, config, role, values, intervals=intervals, spread=spread))  # type: ignore[arg-type]
    return rows


def quality_over_seeds(cfg: Config, split: int) -> Any:
    """FDD, KID, accuracy and trajectory PSNR of the single process and of AsyncDiff at
    ``cfg.n_quality`` samples, paired: on each seed both start from the noise and labels of
    ``Job(..., seed=seed)``. Returns the ``SeedTable``."""
    from reference import zoo
    from reference.harness import class_labels, over_seeds, quality_report, trajectory_deviation

    from .runtime import Job, StagePool, single_process

    unet, labels = zoo.load_teacher(), class_labels(cfg.n_quality)

    def job(mode: str, seed: int) -> Any:
        return Job(cfg.n_quality, cfg.steps, mode=mode, warmup=cfg.warmup, seed=seed)

    def report(key: str, x: Any, same: Any) -> dict[str, float]:
        q = quality_report(x, labels)
        out = {m: q[m] for m in ("fd_digits", "kid_digits", "accuracy")}
        if key == "async":  # the deviation from the exact trajectory of the same noise
            out["psnr_vs_baseline"] = trajectory_deviation(x, same["single"])["psnr_db"]
        return out

    with StagePool(split) as pool:
        samplers = {
            "single": lambda seed: single_process(unet, job("sync", seed))[0],
            "async": lambda seed: pool.run(job("async", seed)).samples[0],
        }
        return over_seeds(samplers, report, cfg.seeds, desc="async-pipeline: quality seeds")


def _quality_rows(cfg: Config, q: Any) -> list[Row]:
    rows = []
    for key, (method, role) in (("single", ROWS["single"]), ("async", ROWS["async"])):
        config: dict[str, Any] = {"method": method, "batch": cfg.n_quality}
        config |= {"warmup": cfg.warmup} if key == "async" else {}
        values, intervals, seeds = q.row_fields(key)
        rows.append(Row(f"q-{key}", config, role, values, intervals, seeds=seeds))  # type: ignore[arg-type]
    return [*rows, real_reference_row(cfg.n_quality)]


def _notes(cfg: Config, s: dict[str, Any], q: Any) -> list[Note]:
    big = max(cfg.batches)
    top = s["per_batch"][big]
    batches = list(s["per_batch"])
    lo, hi = top["lat"].speedup_interval("stream", against="single_x2")
    load = os.getloadavg()
    return [
        note(
            "split",
            split=s["split"],
            last=s["units"][s["split"] - 1],
            batch=big,
            limit_units=s["limit_units"],
        ),
        note(
            "limit",
            batch=big,
            t2=top["t2"],
            s1=top["s1"],
            s2=top["s2"],
            warmup=cfg.warmup,
            async_steps=cfg.steps - cfg.warmup,
            limit=top["limit"],
        ),
        note(
            "sync-exact",
            max_abs=[d["sync_max_abs"] for d in s["per_batch"].values()],
            batches=batches,
        ),
        note(
            "async-quality",
            n=cfg.n_quality,
            psnr=q.summary("async", "psnr_vs_baseline").value,
            fd_async=q.summary("async", "fd_digits").value,
            fd_ref=q.summary("single", "fd_digits").value,
        ),
        note("stream", batch=big, gain=top["stream_gain"], lo=lo, hi=hi),
        latency_note(cfg.repeats, big),
        quality_note(cfg.n_quality, cfg.seeds),
        note("threads-and-load", load1=load[0], load5=load[1], load15=load[2]),
    ]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Run [`sweep`][reference.async_pipeline.bench.sweep] and the paired quality seeds; the
    headline is AsyncDiff at the largest batch against one 2-thread process, beside the limit (1) of
    that comparison."""
    s = sweep(cfg)
    q = quality_over_seeds(cfg, s["split"])
    big = max(cfg.batches)
    top = s["per_batch"][big]
    head = f"b{big}-async"
    lat = top["lat"]
    quality = q.ratio("async", "single", "fd_digits")
    figures = [Figure(f"{SLUG}.png", "speedup-vs-batch")]
    _figure(s, out / figures[0].file)
    return Measurement(
        settings=settings_of(cfg, split=s["split"], backend="gloo", threads_per_stage=1),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "psnr_vs_baseline",
            "fd_digits",
            "kid_digits",
            "accuracy",
            throughput=Metric("images_per_s", "higher"),
        ),
        rows=[*_rows(cfg, s), *_quality_rows(cfg, q)],
        headline=speedup_headline(
            head,
            lat,
            "async",
            limit=top["limit"],
            limit_kind="estimate",  # (1): isolated unit times, no hand-off or scheduler cost
            quality_ratio=quality.value,
            quality_interval=quality.interval,
        ),
        aims=[
            aim(
                "speedup",
                lat.speedup["async"],
                SPEED_AIM,
                ">=",
                interval=lat.speedup_interval("async"),
                row=head,
                against=f"b{big}-single",
                batch=big,
            ),
            aim(
                "quality",
                quality.value,
                QUALITY_AIM,
                "<=",
                interval=quality.interval,
                row="q-async",
                against="q-single",
                batch=cfg.n_quality,
            ),
            aim(
                "beats-sync",
                lat.speedup_over("async", "sync"),
                1.0,
                ">",
                interval=lat.speedup_interval("async", against="sync"),
                row=head,
                against=f"b{big}-sync",
                batch=big,
            ),
        ],
        notes=_notes(cfg, s, q),
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
        hlines={"no gain": 1.0, "limit estimate (1), largest": max(d["limit"] for d in per)},
    )


def demo(cfg: Config, out: Path) -> None:
    """A short sweep: the split, a table per batch size and the speedup figure; under
    ``torchrun``, this process is one stage ([`launch`][reference.async_pipeline.launch]) and only
    rank 0 prints."""
    if launched_rank() is not None:
        return _launched_demo(cfg, out)
    s = sweep(cfg)
    split = s["split"]
    print(f"split after unit {split}: stage 1 = {', '.join(s['units'][:split])}")
    print(
        f"{'batch':>5s} {'single ms':>10s} {'sync':>6s} {'async':>6s} {'stream':>7s} {'limit':>6s}"
    )
    for n, d in s["per_batch"].items():
        lat = d["lat"]
        print(
            f"{n:5d} {lat.median_ms('single'):10.1f} {lat.speedup['sync']:6.2f} "
            f"{lat.speedup['async']:6.2f} {d['stream_gain']:7.2f} "
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
