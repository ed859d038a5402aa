"""Benchmark and command line of :mod:`reference.async_pipeline` (harness protocol)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SLUG = "async-pipeline"
MODULE = "reference.async_pipeline"
SOURCES = [
    Path(__file__).with_name(n)
    for n in ("__init__.py", "stages.py", "runtime.py", "bench.py", "__main__.py")
]


@dataclass(frozen=True)
class BenchConfig:
    """Batch sizes of the sweep, DDIM steps, synchronous warm-up steps, timing repeats."""

    batches: tuple[int, ...] = (1, 8, 64)
    steps: int = 20
    warmup: int = 2
    repeats: int = 3

    def __post_init__(self) -> None:
        if not self.batches or min(self.batches) < 1:
            raise ValueError(f"batch sizes must be >= 1, got {list(self.batches)}")
        if self.steps < 2:
            raise ValueError(f"steps must be >= 2, got {self.steps}")
        if not 0 <= self.warmup < self.steps:
            raise ValueError(f"warmup must be in 0..steps-1, got {self.warmup}")


QUICK = BenchConfig(batches=(2,), steps=3, warmup=1, repeats=1)


def _single_process(unet: Any, job: Any, requests: int = 1) -> list[Any]:
    import torch

    from reference import zoo
    from reference.harness import model_eps_fn, sample

    from .runtime import job_noise

    out = []
    with torch.inference_mode():
        for r in range(requests):
            noise, labels = job_noise(job, r)
            out.append(
                sample(
                    model_eps_fn(unet),
                    zoo.teacher_scheduler(),
                    noise,
                    steps=job.steps,
                    labels=labels,
                )
            )
    return out


def sweep(cfg: BenchConfig, progress: bool = True) -> dict[str, Any]:
    """Time single-process (2 threads) vs 2-stage sync / async / stream for every batch."""
    import torch
    from tqdm import tqdm

    from reference import zoo
    from reference.harness import compare_latency, psnr_per_sample

    from .runtime import Job, StagePool
    from .stages import balanced_split, unit_names, unit_times_ms

    torch.set_num_threads(2)
    unet = zoo.load_teacher()
    big = max(cfg.batches)
    times = unit_times_ms(unet, big, repeats=1 if big <= 4 else 3)
    split = balanced_split(times)
    names = unit_names(unet)
    s1, s2 = sum(list(times.values())[:split]), sum(list(times.values())[split:])
    out: dict[str, Any] = {
        "split": split,
        "stage1": names[:split],
        "unit_ms": times,
        "limit_units": (s1 + s2) / max(s1, s2),
        "per_batch": {},
    }
    with StagePool(split) as pool:
        for n in tqdm(cfg.batches, desc="batch sweep", disable=not progress):
            jobs = {m: Job(n, cfg.steps, mode=m, warmup=cfg.warmup) for m in ("sync", "async")}
            stream = Job(n, cfg.steps, mode="stream", requests=2)
            funcs = {
                "single": lambda j=jobs["sync"]: _single_process(unet, j),
                "sync": lambda j=jobs["sync"]: pool.run(j),
                "async": lambda j=jobs["async"]: pool.run(j),
                "single_x2": lambda j=stream: _single_process(unet, j, requests=2),
                "stream": lambda j=stream: pool.run(j),
            }
            lat = compare_latency(funcs, repeats=cfg.repeats, warmup=1, threads=2)
            ref = _single_process(unet, jobs["sync"])[0]
            res_async = pool.run(jobs["async"])
            res_sync = pool.run(jobs["sync"])
            compute = res_async.compute_s
            out["per_batch"][n] = {
                "lat": lat,
                "ref": ref,
                "async": res_async.samples[0],
                "sync_max_abs": float((res_sync.samples[0] - ref).abs().max()),
                "psnr": float(psnr_per_sample(res_async.samples[0], ref).mean()),
                "limit": sum(compute) / max(compute),
                "compute_s": compute,
            }
    return out


def benchmark(quick: bool = False, cfg: BenchConfig | None = None) -> Any:
    """Run :func:`sweep` and return the harness ``BenchmarkResult``."""

    from reference.harness import (
        BenchmarkResult,
        Headline,
        MetricSpec,
        Row,
        aim,
        fdd_floor,
        frechet_digits_distance,
        metrics,
        output_dir,
        provenance,
    )

    cfg = cfg or (QUICK if quick else BenchConfig())
    s = sweep(cfg, progress=not quick)
    big = max(cfg.batches)
    rows = []
    labels = {
        "single": ("one process, 2 threads (baseline)", "baseline"),
        "sync": ("2 stage processes x 1 thread, synchronous (control)", "control"),
        "async": (f"2 stage processes, AsyncDiff (warm-up {cfg.warmup})", "technique"),
        "single_x2": ("2 requests one after another, one process, 2 threads", "baseline"),
        "stream": ("2 requests pipelined through the 2 stages", "technique"),
    }
    for n, d in s["per_batch"].items():
        lat = d["lat"]
        for key, (label, role) in labels.items():
            per = 2 if key in ("single_x2", "stream") else 1
            values = {
                "latency_ms": lat.median_ms(key),
                "throughput": per * n / (lat.median_ms(key) / 1000),
                "batch": float(n),
            }
            if key == "async":
                values["psnr_vs_baseline"] = d["psnr"]
            rows.append(Row(f"batch {n}: {label}", role, values, {"latency_ms": lat.iqr_ms(key)}))
    top = s["per_batch"][big]
    fd_async = frechet_digits_distance(top["async"])
    fd_ref = frechet_digits_distance(top["ref"])
    for row in rows:  # quality beside latency at the compute-bound batch
        if row.name == f"batch {big}: {labels['single'][0]}":
            row.values["fd_digits"] = fd_ref
        elif row.name == f"batch {big}: {labels['async'][0]}":
            row.values["fd_digits"] = fd_async
    speedup = top["lat"].speedup["async"]
    stream_gain = top["lat"].median_ms("single_x2") / top["lat"].median_ms("stream")
    out = output_dir(quick)
    figures = _figures(s, out)
    load = os.getloadavg()
    notes = [
        f"Split after unit {s['split']} ({', '.join(s['stage1'])} in stage 1), chosen from "
        "measured "
        f"unit times at batch {big} so that the slower stage is as short as possible; unit-time "
        f"limit {s['limit_units']:.2f}x, measured per-rank compute limit {top['limit']:.2f}x "
        "(total compute over the slower rank).",
        "Synchronous 2-process pipeline vs single process (same noise): max |dx| = "
        + ", ".join(f"{d['sync_max_abs']:.1e} (batch {n})" for n, d in s["per_batch"].items())
        + " (float reassociation from 1 vs 2 threads).",
        "AsyncDiff trajectory PSNR vs the synchronous sampler: "
        + ", ".join(f"{d['psnr']:.1f} dB (batch {n})" for n, d in s["per_batch"].items())
        + f"; FDD at batch {big}: async {fd_async:.2f} vs baseline {fd_ref:.2f} "
        f"(floor {fdd_floor(big):.2f}).",
        f"Stream pipelining of 2 requests at batch {big}: throughput {stream_gain:.2f}x the "
        "sequential single process; the latency of one request is not reduced.",
        "Each stage process uses 1 thread; the baseline uses 2 threads in one process (same "
        f"cores). Load average during the run: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
        "(other jobs shared the 2 cores).",
    ]
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="AsyncDiff-style 2-stage pipeline of the zoo U-Net over torch.distributed (gloo)",
        quick=quick,
        settings={
            "batches": list(cfg.batches),
            "steps": cfg.steps,
            "warmup": cfg.warmup,
            "repeats": cfg.repeats,
            "split": s["split"],
            "backend": "gloo",
            "threads": 2,
            "threads_per_stage": 1,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (active spin)"),
        },
        metrics=metrics(
            "latency_ms",
            "psnr_vs_baseline",
            "fd_digits",
            throughput=MetricSpec("Throughput", "images/s", "higher"),
            batch=MetricSpec("Batch size", "", "higher"),
        ),
        rows=rows,
        headline=Headline(
            speedup=speedup,
            speedup_limit=top["limit"],
            quality_ratio=fd_async / fd_ref,
            quality_metric="fd_digits",
        ),
        aims=[
            aim(
                f">= 1.4x latency speedup at batch {big} (async vs one process, 2 threads)",
                speedup,
                1.4,
                ">=",
            ),
            aim("FDD within 1.2x of the baseline", fd_async / fd_ref, 1.2, "<="),
        ],
        notes=notes,
        figures=figures,
        provenance=provenance(SOURCES),
    )


def _figures(s: dict[str, Any], out: Path) -> list[str]:
    from reference.harness import curve_plot

    out.mkdir(parents=True, exist_ok=True)
    batches = list(s["per_batch"])
    series = {
        key: [d["lat"].speedup[key] for d in s["per_batch"].values()] for key in ("sync", "async")
    }
    series["stream (throughput)"] = [
        d["lat"].median_ms("single_x2") / d["lat"].median_ms("stream")
        for d in s["per_batch"].values()
    ]
    curve_plot(
        batches,
        series,
        out / f"{SLUG}.png",
        xlabel="batch size",
        ylabel="speedup vs one process, 2 threads",
        logx=True,
        hlines={
            "no gain": 1.0,
            "limit (compute)": max(d["limit"] for d in s["per_batch"].values()),
        },
        title="Where communication stops dominating (2-core CPU)",
    )
    return [f"{SLUG}.png"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.async_pipeline",
        description="Split the zoo U-Net into 2 stage processes (torch.distributed, gloo) and "
        "sample with stale features (AsyncDiff) or pipeline a stream of requests.",
    )
    p.add_argument("--batch", type=int, nargs="+", default=[1, 16], help="batch sizes (demo)")
    p.add_argument("--steps", type=int, default=10, help="DDIM steps")
    p.add_argument("--warmup", type=int, default=2, help="synchronous warm-up steps")
    p.add_argument("--repeats", type=int, default=2, help="timing rounds")
    p.add_argument("--bench", action="store_true", help="full benchmark -> reference/results/")
    p.add_argument("--quick", action="store_true", help="with --bench: small run to artifacts/")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="demo output dir")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    from reference.zoo.store import ZooError

    args = _parser().parse_args(argv)
    try:
        if args.bench:
            from reference.harness import write_result

            result = benchmark(quick=args.quick)
            path = write_result(result)
            for a in result.aims:
                print(f"[{'met' if a.met else 'NOT met'}] {a.text}: {a.measured:.3g}")
            print(f"wrote {path}")
            return 0
        cfg = BenchConfig(
            batches=tuple(args.batch), steps=args.steps, warmup=args.warmup, repeats=args.repeats
        )
        s = sweep(cfg)
        print(f"split after unit {s['split']}: stage 1 = {', '.join(s['stage1'])}")
        print(
            f"{'batch':>5s} {'single ms':>10s} {'sync':>6s} {'async':>6s} {'stream':>7s} "
            f"{'PSNR dB':>8s} {'limit':>6s}"
        )
        for n, d in s["per_batch"].items():
            lat = d["lat"]
            print(
                f"{n:5d} {lat.median_ms('single'):10.1f} {lat.speedup['sync']:6.2f} "
                f"{lat.speedup['async']:6.2f} "
                f"{lat.median_ms('single_x2') / lat.median_ms('stream'):7.2f} "
                f"{d['psnr']:8.1f} {d['limit']:6.2f}"
            )
        for name in _figures(s, args.out):
            print(f"figure: {args.out / name}")
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")
