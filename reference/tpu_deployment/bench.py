"""Benchmark and demo of [`reference.tpu_deployment`][reference.tpu_deployment] (the technique
contract of `reference.harness.cli`).

Rows: the harness's torch DDIM loop on the diffusers U-Net (baseline), the JAX port's whole loop
as one XLA program (technique), the same step jitted and dispatched per step from Python
(control), the whole loop sharded over the host devices and in bfloat16 (techniques), and
class-balanced real digits (reference). Latency on one timed batch; the quality of torch, the
loop and bfloat16 on paired noise seeds (the other rows run the loop's float32 arithmetic).
Everything measured here runs on JAX's **CPU** backend; no figure is a TPU figure.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from reference.harness.cli import Option, at_least, check_seeds, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Aim,
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
from reference.harness.seeds import N_QUALITY, SEEDS, SeedTable

from . import JAX_MISSING, configure_host_devices, require_jax
from .measure import Runs, measure, payoff, quality_samplers

configure_host_devices()  # before anything imports jax: the 8 host devices of the sharded row

SLUG = "tpu-deployment"
PARITY_TOLERANCE = 1e-4
BF16_TOLERANCE = 1.05
"""bfloat16 may move the FDD of the float32 loop by at most 5% (paired ratio)."""
ROWS = {
    "torch": ({"method": "torch-eager"}, "baseline"),
    "compiled": ({"method": "jax-loop"}, "technique"),
    "per-step": ({"method": "jax-per-step"}, "control"),
    "sharded": ({"method": "jax-sharded"}, "technique"),
    "bf16": ({"method": "jax-bf16"}, "technique"),
}


@dataclass(frozen=True)
class Config:
    """What to measure: ``n`` images per timed batch, ``steps`` DDIM steps, guidance, timing
    rounds, the stream of request sizes served with and without batch buckets, and the quality
    of ``n_quality`` images on each of ``seeds``."""

    n: int = 64
    n_quality: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    steps: int = 20
    guidance_scale: float = 1.0
    repeats: int = 15
    warmup: int = 1
    stream: tuple[int, ...] = (3, 5, 6, 7, 12)
    buckets: tuple[int, ...] = (8, 16)
    full_rows: bool = True

    def validate(self) -> None:
        at_least(self, n=1, n_quality=10, steps=1, guidance_scale=0, repeats=1, warmup=0)
        check_seeds(self.seeds)
        if any(s < 1 for s in self.stream):
            raise ValueError(f"--stream sizes must be >= 1, got {self.stream}")
        if not self.buckets or any(b < 1 for b in self.buckets):
            raise ValueError(f"--buckets must be one or more sizes >= 1, got {self.buckets}")
        if self.stream and max(self.stream) > max(self.buckets):
            raise ValueError(
                f"--stream size {max(self.stream)} exceeds the largest of --buckets {self.buckets}"
            )
        try:
            jax = require_jax()
        except ImportError:
            raise ValueError(JAX_MISSING) from None
        if self.full_rows and self.n % jax.device_count():
            raise ValueError(
                f"--n {self.n} must be a multiple of the {jax.device_count()} devices of the mesh"
            )


FULL = Config()
QUICK = Config(
    n=8,
    n_quality=20,
    seeds=(0, 1),
    steps=2,
    repeats=2,
    warmup=1,
    stream=(3, 5),
    buckets=(8,),
    full_rows=False,
)
DEMO = Config(n=16, steps=10, repeats=3, warmup=1, full_rows=False)
OPTIONS = (
    Option("n"),
    Option("n_quality"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("steps"),
    Option("guidance_scale", float, "X"),
    Option("repeats"),
    Option("stream", int_tuple, "N,N,..."),
    Option("buckets", int_tuple, "N,N,..."),
)


def _run(cfg: Config) -> Runs:
    quality = ("n_quality", "seeds")  # measured apart, on the paired seeds (_quality)
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    return measure(**{k: v for k, v in fields.items() if k not in quality})


def _quality(cfg: Config) -> SeedTable:
    """FDD and KID of torch, the compiled loop and (full rows) bfloat16, paired over seeds."""
    from reference.harness import frechet_digits_distance, kernel_digits_distance, over_seeds

    samplers = quality_samplers(cfg.n_quality, cfg.steps, cfg.guidance_scale, cfg.full_rows)

    def measure_fn(key: str, x, same) -> dict[str, float]:  # type: ignore[no-untyped-def]
        return {"fd_digits": frechet_digits_distance(x), "kid_digits": kernel_digits_distance(x)}

    return over_seeds(samplers, measure_fn, cfg.seeds)


def _figures(m: Runs, out: Path) -> list[Figure]:
    from reference.harness import bar_chart, curve_plot

    figures = [Figure(f"{SLUG}.png", "latency"), Figure(f"{SLUG}-compile-payoff.png", "payoff")]
    keys = list(m.samples)
    bar_chart(
        keys,
        [m.latency.median_ms(k) for k in keys],
        out / figures[0].file,
        roles=[ROWS[k][1] for k in keys],
        errors=[m.latency.iqr_ms(k) for k in keys],
        ylabel=f"ms for {m.n} images x {m.steps} DDIM steps (CPU)",
    )
    images = [0, m.n, 4 * m.n, 16 * m.n, 64 * m.n]
    series = {}
    for k in ("torch", "per-step", "compiled"):
        per = m.latency.median_ms(k) / m.n / 1000
        series[k] = [m.compile_s.get(k, 0.0) + i * per for i in images]
    curve_plot(
        images,
        series,
        out / figures[1].file,
        xlabel="images served",
        ylabel="seconds incl. compilation (CPU)",
    )
    return figures


def _notes(cfg: Config, m: Runs) -> list:
    import torch

    from reference.harness import quality_note

    lat = m.latency
    per_image = {k: lat.median_ms(k) / m.n for k in m.samples}
    vs_torch = payoff(m.compile_s["compiled"], per_image["torch"], per_image["compiled"])
    vs_step = payoff(
        m.compile_s["compiled"] - m.compile_s["per-step"],
        per_image["per-step"],
        per_image["compiled"],
    )
    notes = [
        note("cpu-only", threads=torch.get_num_threads()),
        note("parity", max_diff=m.max_abs["compiled"], n=m.n, steps=m.steps, tol=PARITY_TOLERANCE),
        note("compile-times", loop=m.compile_s["compiled"], step=m.compile_s["per-step"]),
        note(vs_torch[0], row="torch", **vs_torch[1]),
        note(vs_step[0], row="per-step", **vs_step[1]),
        quality_note(cfg.n_quality, cfg.seeds),
        note("quality-rows", n=cfg.n_quality),
        note("published-tpu"),
        latency_note(cfg.repeats, m.n),
    ]
    if m.stream:
        ex, bu = m.stream["exact"], m.stream["buckets"]
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
    if "sharded" in m.samples:
        notes.append(
            note(
                "sharded",
                devices=m.devices,
                max_diff=float((m.samples["sharded"] - m.samples["compiled"]).abs().max()),
                sharded_ms=lat.median_ms("sharded"),
                loop_ms=lat.median_ms("compiled"),
                cores=os.cpu_count() or 1,
            )
        )
    if "bf16" in m.samples:
        diff = float((m.samples["bf16"] - m.samples["compiled"]).abs().max())
        notes.append(note("bf16", max_diff=diff))
    return notes


def _row(key: str, m: Runs, q: SeedTable) -> Row:
    """A row: latency of the timed batch, compile time, max deviation from torch and, for the
    rows whose quality is measured, the FDD and KID over the paired seeds."""
    lat = m.latency
    config, role = ROWS[key]
    config = {**config, "devices": m.devices} if key == "sharded" else config
    values, intervals, seeds = q.row_fields(key) if key in q.values else ({}, {}, {})
    values |= {
        "latency_ms": lat.median_ms(key),
        "speedup": lat.speedup[key],
        "ms_per_image": lat.median_ms(key) / m.n,
        "compile_s": m.compile_s.get(key, 0.0),
        "max_abs_vs_torch": m.max_abs[key],
    }
    if key != "torch":
        intervals["speedup"] = lat.speedup_interval(key)
    spread = {"latency_ms": lat.iqr_ms(key)}
    return Row(key, {**config, "steps": m.steps}, role, values, intervals, spread, seeds)  # type: ignore[arg-type]


def _aims(m: Runs, q: SeedTable) -> list[Aim]:
    lat = m.latency
    # the loop against per-step dispatch: the same paired rounds, per-step as the reference
    loop_vs_step = lat.speedup_over("compiled", "per-step")
    step_interval = lat.speedup_interval("compiled", against="per-step")
    aims = [
        aim(
            "parity", m.max_abs["compiled"], PARITY_TOLERANCE, "<=", row="compiled", against="torch"
        ),
        aim(
            "loop-vs-step",
            loop_vs_step,
            1.0,
            ">=",
            step_interval,
            row="compiled",
            against="per-step",
        ),
    ]
    if "bf16" in q.values:
        r = q.ratio("bf16", "compiled", "fd_digits")
        aims.append(
            aim(
                "bf16-quality",
                r.value,
                BF16_TOLERANCE,
                "<=",
                r.interval,
                row="bf16",
                against="compiled",
            )
        )
    return aims


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure every way of running the loop; write the figures into ``out``."""
    from reference.harness import real_reference_row

    m = _run(cfg)
    q = _quality(cfg)
    ratio = q.ratio("compiled", "torch", "fd_digits")
    return Measurement(
        settings=settings_of(
            cfg, devices=m.devices, backend="cpu", jax=str(require_jax().__version__)
        ),
        metrics=metrics(
            "latency_ms",
            "speedup",
            ms_per_image=Metric("ms", "lower"),
            fd_digits=metrics("fd_digits")["fd_digits"],
            kid_digits=metrics("kid_digits")["kid_digits"],
            compile_s=Metric("s", "lower"),
            max_abs_vs_torch=Metric("", "lower"),
        ),
        rows=[*(_row(key, m, q) for key in m.samples), real_reference_row(cfg.n_quality)],
        headline=speedup_headline(
            "compiled",
            m.latency,
            limit=None,
            limit_kind=None,
            quality_ratio=ratio.value,
            quality_interval=ratio.interval,
        ),
        aims=_aims(m, q),
        notes=_notes(cfg, m),
        figures=_figures(m, out),
    )


def demo(cfg: Config, out: Path) -> None:
    """torch eager vs the compiled JAX loop vs per-step dispatch: a table and a sample grid."""
    from reference.harness import save_grid

    m = _run(cfg)
    print(f"{'row':10s} {'ms':>9s} {'compile s':>9s} {'max|dx|':>9s}  (JAX CPU backend)")
    for k in m.samples:
        print(
            f"{k:10s} {m.latency.median_ms(k):9.1f} {m.compile_s.get(k, 0.0):9.2f} "
            f"{m.max_abs[k]:9.2e}"
        )
    out.mkdir(parents=True, exist_ok=True)
    grid = save_grid(m.samples["compiled"], out / f"{SLUG}-demo.png")
    print(f"{grid} (samples of the compiled JAX loop)")
