"""Benchmark and demo of :mod:`reference.tpu_deployment` (the technique contract of
:mod:`reference.harness.cli`).

Rows: the harness's torch DDIM loop on the diffusers U-Net (baseline), the JAX port's whole loop
as one XLA program (technique), the same step jitted and dispatched per step from Python
(control), and the whole loop sharded over the host devices and in bfloat16 (techniques).
Everything measured here runs on JAX's **CPU** backend; no figure is a TPU figure.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

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

from . import JAX_MISSING, configure_host_devices, require_jax
from .measure import Runs, measure, payoff

configure_host_devices()  # before anything imports jax: the 8 host devices of the sharded row

SLUG = "tpu-deployment"
PARITY_TOLERANCE = 1e-4
ROWS = {
    "torch": ({"method": "torch-eager"}, "baseline"),
    "compiled": ({"method": "jax-loop"}, "technique"),
    "per-step": ({"method": "jax-per-step"}, "control"),
    "sharded": ({"method": "jax-sharded"}, "technique"),
    "bf16": ({"method": "jax-bf16"}, "technique"),
}


@dataclass(frozen=True)
class Config:
    """What to measure: ``n`` images, ``steps`` DDIM steps, guidance, timing rounds, and the
    stream of request sizes served with and without batch buckets."""

    n: int = 64
    steps: int = 20
    guidance_scale: float = 1.0
    repeats: int = 15
    warmup: int = 1
    stream: tuple[int, ...] = (3, 5, 6, 7, 12)
    buckets: tuple[int, ...] = (8, 16)
    full_rows: bool = True

    def validate(self) -> None:
        at_least(self, n=1, steps=1, guidance_scale=0, repeats=1, warmup=0)
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
QUICK = Config(n=8, steps=2, repeats=2, warmup=1, stream=(3, 5), buckets=(8,), full_rows=False)
DEMO = Config(n=16, steps=10, repeats=3, warmup=1, full_rows=False)
OPTIONS = (
    Option("n"),
    Option("steps"),
    Option("guidance_scale", float, "X"),
    Option("repeats"),
    Option("stream", int_tuple, "N,N,..."),
    Option("buckets", int_tuple, "N,N,..."),
)


def _run(cfg: Config) -> Runs:
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    return measure(**fields)


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


def _notes(cfg: Config, m: Runs, fdd_floor: float) -> list:
    import torch

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
        note("fdd-at-n", n=m.n, floor=fdd_floor),
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


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure every way of running the loop; write the figures into ``out``."""
    from reference.harness import fdd_floor, frechet_digits_distance

    m = _run(cfg)
    lat = m.latency
    fdd = {k: frechet_digits_distance(v) for k, v in m.samples.items()}
    rows = []
    for key in m.samples:
        config, role = ROWS[key]
        config = {**config, "devices": m.devices} if key == "sharded" else config
        rows.append(
            Row(
                key,
                {**config, "steps": m.steps},
                role,  # type: ignore[arg-type]
                {
                    "latency_ms": lat.median_ms(key),
                    "speedup": lat.speedup[key],
                    "ms_per_image": lat.median_ms(key) / m.n,
                    "fd_digits": fdd[key],
                    "compile_s": m.compile_s.get(key, 0.0),
                    "max_abs_vs_torch": m.max_abs[key],
                },
                intervals={"speedup": lat.speedup_interval(key)} if key != "torch" else {},
                spread={"latency_ms": lat.iqr_ms(key)},
            )
        )
    # the loop against per-step dispatch: the same paired rounds, per-step as the reference
    vs_step = dataclasses.replace(lat, baseline="per-step")
    loop_vs_step = lat.median_ms("per-step") / lat.median_ms("compiled")
    aims = [
        aim("parity", m.max_abs["compiled"], PARITY_TOLERANCE, "<="),
        aim("loop-vs-step", loop_vs_step, 1.0, ">=", interval=vs_step.speedup_interval("compiled")),
    ]
    return Measurement(
        settings=settings_of(
            cfg, devices=m.devices, backend="cpu", jax=str(require_jax().__version__)
        ),
        metrics=metrics(
            "latency_ms",
            "speedup",
            ms_per_image=Metric("ms", "lower"),
            fd_digits=metrics("fd_digits")["fd_digits"],
            compile_s=Metric("s", "lower"),
            max_abs_vs_torch=Metric("", "lower"),
        ),
        rows=rows,
        headline=speedup_headline(
            "compiled",
            lat,
            limit=None,
            limit_kind=None,
            quality_ratio=fdd["compiled"] / fdd["torch"],
        ),
        aims=aims,
        notes=_notes(cfg, m, fdd_floor(m.n)),
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
