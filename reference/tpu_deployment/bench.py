"""Benchmark and demo of [`reference.tpu_deployment`][reference.tpu_deployment] (the technique
contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows, every one solving the same clipped ODE (`reference.harness.ode`, DDIM on the trailing grid
of ``steps`` steps) from the same noise:

* ``torch``: the harness's DDIM on the diffusers U-Net, eager (baseline);
* ``compiled``: the JAX port's whole loop as one XLA program (technique);
* ``per-step``: the same step jitted and dispatched from Python (control, timed only);
* ``sharded``: the whole loop with the batch split over the host devices (technique, timed
  only: it runs the loop's float32 arithmetic);
* ``bf16``: the whole loop with bfloat16 weights and activations (technique);
* ``real``: held-out real digits at the same sample size (reference).

The port is a training-free approximation of the torch computation, so its primary figure is
the fidelity ``rms_to_solution``: the per-sample RMS distance to the converged solution of the
same noise (DPM-Solver++(2M), 200 steps), the headline's quality ratio (compiled over torch).
Beside it, per seed: the largest pixel deviation from the torch samples of the same noise
(``max_abs_vs_torch``) and FDD and KID against the reference half of the held-out digits.

Aims: ``parity`` (the float32 port reproduces torch, max |dx| within ``PARITY_TOLERANCE`` on the
interval over seeds), ``loop-vs-step`` (one program is at least as fast as per-step dispatch)
and ``bf16-quality`` (bfloat16 keeps the loop's distance to the solution within
``BF16_TOLERANCE``). Everything runs on JAX's **CPU** backend; no figure is a TPU figure.

Math
====
For samples ``x_i`` (``D`` pixels each) of one seed, the torch samples ``x^torch_i`` and the
converged solution ``x*_i`` of the same noise, and a timed program's rounds ``T_r``:

    rms_to_solution  = (1/N) Σ_i ‖x_i − x*_i‖ / √D          (the harness, `reference.harness.ode`)
    max_abs_vs_torch = max_{i,p} |x_ip − x^torch_ip|                                        (1)
    ms_per_image     = median_r T_r / n                                                     (2)
    compile_s        = first call − median_r T_r        (0 for torch, which compiles nothing)  (3)

Sources: DDIM, Song et al. 2021 (arXiv:2010.02502); DPM-Solver++, Lu et al. 2022
(arXiv:2211.01095), the solution; TPU v4, Jouppi et al. 2023 (arXiv:2304.01433), quoted only.

Pitfalls
========
* ``parity`` is a bound on one row's per-seed value (a value aim), judged on that row's t
  interval clipped at 0 (`MAX_ABS_RANGE`): with two seeds the raw interval of a deviation near
  0 reaches below it.
* At t = 999 the clipped x0 divides by sqrt(alpha_bar) = 4.9e-5, so float32 rounding of two
  frameworks shows up as about 1e-5 at 50 steps and more with fewer (the quick run's 2 steps
  miss the parity bound by design: its next grid point keeps the magnified difference).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reference.harness import sizes
from reference.harness.compare import (
    Comparison,
    HeadlineSpec,
    Outcome,
    QualityAim,
    Range,
    SpeedupAim,
    Variant,
)
from reference.harness.declared import SAMPLED_COLUMNS, lower, sampled_outcome
from reference.harness.entry import integer, integers, real
from reference.harness.results import Row, metrics
from reference.harness.scores import held_out_score

from . import JAX_MISSING, configure_host_devices, require_jax

configure_host_devices()  # before anything imports jax: the 8 host devices of the sharded row

CONTRACT = 2
SLUG = "tpu-deployment"
PARITY_TOLERANCE = 1e-4
"""Largest pixel deviation of the float32 port from torch (pixels span [-1, 1])."""
BF16_TOLERANCE = 1.25
"""bfloat16 may move the loop at most 25% further from the solution (paired ratio): its
rounding must stay well below the DDIM discretisation error it adds to."""
ROWS: dict[str, tuple[str, Any]] = {
    "torch": ("torch-eager", "baseline"),
    "compiled": ("jax-loop", "technique"),
    "per-step": ("jax-per-step", "control"),
    "sharded": ("jax-sharded", "technique"),
    "bf16": ("jax-bf16", "technique"),
}
SAMPLED = ("torch", "compiled", "bf16")
"""The rows whose samples can differ; per-step and sharded run the loop's float32 arithmetic."""
MAX_ABS_RANGE: Range = (0.0, None)
"""A largest deviation is never negative: its t interval over seeds is clipped at 0 (eq. (7) of
`reference.harness.compare`), as the integrity check clips it from the range the result records."""


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """The quality sample and the timing (`sizes`: ``batch_latency`` images per timed batch),
    ``steps`` DDIM steps, guidance, the stream of request sizes served with and without batch
    ``buckets``, and the solution's ``solution_steps``."""

    steps: int = 50
    guidance_scale: float = 1.0
    stream: tuple[int, ...] = (3, 5, 6, 7, 12)
    buckets: tuple[int, ...] = (8, 16)
    full_rows: bool = True
    solution_steps: int = sizes.SOLUTION_STEPS

    def validate(self) -> None:
        super().validate()
        if self.stream and max(self.stream) > max(self.buckets):
            raise ValueError(
                f"--stream size {max(self.stream)} exceeds the largest of --buckets {self.buckets}"
            )
        try:
            jax = require_jax()
        except ImportError:
            raise ValueError(JAX_MISSING) from None
        if self.full_rows and self.batch_latency % jax.device_count():
            raise ValueError(
                f"--batch-latency {self.batch_latency} must be a multiple of the "
                f"{jax.device_count()} devices of the mesh"
            )


FULL = Config()
QUICK = Config(
    batch_latency=8,
    n_quality=sizes.MIN_QUALITY,
    seeds=(0, 1),
    steps=2,
    repeats=2,
    warmup=0,
    stream=(3, 5),
    buckets=(8,),
    full_rows=False,
    solution_steps=8,
)
DEMO = replace(  # the quick run, longer, against the full solution
    QUICK, batch_latency=16, steps=10, repeats=3, solution_steps=sizes.SOLUTION_STEPS
)
OPTIONS = (
    *sizes.SCORED_OPTIONS,
    integer("steps", low=1, high=1000),
    real("guidance_scale", low=0.0, high=20.0),
    *sizes.TIMED_OPTIONS,
    integers("stream", low=1, high=512, unique=False),
    integers("buckets", low=1, high=512),
)


def score(n: int) -> Callable[[Any, Mapping[str, Any]], dict[str, float]]:
    """The held-out score and the largest pixel deviation from the torch samples of the same
    seed."""
    held_out = held_out_score(n)

    def one(x: Any, same_seed: Mapping[str, Any]) -> dict[str, float]:
        deviation = float((x - same_seed["torch"]).abs().max())  # (1)
        return {**held_out(x, same_seed), "max_abs_vs_torch": deviation}

    return one


def row_config(row: str, steps: int, devices: int) -> dict[str, Any]:
    """The language-neutral configuration of a row."""
    config: dict[str, Any] = {"method": ROWS[row][0], "steps": steps}
    return {**config, "devices": devices} if row == "sharded" else config


def aims(rows: tuple[str, ...]) -> tuple[QualityAim | SpeedupAim, ...]:
    """The declared aims (``bf16-quality`` only when the bfloat16 row runs); ``parity`` bounds
    the compiled loop's own deviation from torch (a value aim on its per-seed values)."""
    declared: list[QualityAim | SpeedupAim] = [
        QualityAim(
            "parity", "compiled", "torch", "max_abs_vs_torch", "<=", PARITY_TOLERANCE, "value"
        ),
        SpeedupAim("loop-vs-step", "compiled", "per-step", ">=", 1.0),
    ]
    if "bf16" in rows:
        declared.append(
            QualityAim("bf16-quality", "bf16", "compiled", "rms_to_solution", "<=", BF16_TOLERANCE)
        )
    return tuple(declared)


def comparison(cfg: Config, ways: Any) -> Comparison:
    """Every way of running the loop on the same noise; the compiled loop is the headline,
    judged against torch on the fidelity to the converged solution."""
    variants = tuple(
        Variant(
            row,
            row_config(row, cfg.steps, ways.devices),
            ROWS[row][1],
            sample=ways.sample.get(row),
            timed=run,
            facts={} if row in SAMPLED else {"max_abs_vs_torch": ways.max_abs[row]},
        )
        for row, run in ways.timed.items()
    )
    return Comparison(
        variants=variants,
        metrics=metrics(
            *SAMPLED_COLUMNS,
            **lower("rms_to_solution", "max_abs_vs_torch"),
            **lower("ms_per_image", unit="ms"),
            **lower("compile_s", unit="s"),
        ),
        score=score(cfg.n_quality),
        seeds=cfg.seeds,
        aims=aims(tuple(ways.timed)),
        headline=HeadlineSpec("compiled", quality="rms_to_solution"),
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        solution=ways.solution,
        ranges={"max_abs_vs_torch": MAX_ABS_RANGE},
    )


def serving_values(rows: list[Row], ways: Any) -> None:
    """Add to each timed row its time per image and its compile time: the first call on the
    timed batch less the median of the timed rounds (0 for torch, which compiles nothing)."""
    for row in rows:
        latency = row.values.get("latency_ms")
        if latency is None:
            continue
        first = 0.0 if row.id == "torch" else ways.first_s[row.id]
        row.values["ms_per_image"] = latency / ways.n  # (2)
        row.values["compile_s"] = max(first - latency / 1000, 0.0)  # (3)


def judged(c: Comparison, ways: Any) -> Any:
    """The declared comparison measured by the harness, each timed row's serving values
    added."""
    from reference.harness.compare import measure as measure_comparison

    m = measure_comparison(c)
    serving_values(m.rows, ways)
    return m


def _measured(cfg: Config) -> tuple[Any, Any]:
    """The ways built and compiled (`reference.tpu_deployment.measure`), then judged."""
    from .measure import measure as build_ways

    ways = build_ways(
        cfg.batch_latency,
        cfg.n_quality,
        cfg.steps,
        cfg.guidance_scale,
        cfg.full_rows,
        cfg.solution_steps,
        cfg.stream,
        cfg.buckets,
    )
    return judged(comparison(cfg, ways), ways), ways


def measure(cfg: Config, staging: Path) -> Outcome:
    """Sample (paired seeds), time and compile every way of running the loop; write the
    figures."""

    from .report import figures, notes

    m, ways = _measured(cfg)
    rows = {r.id: r for r in m.rows}
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, rows, ways, PARITY_TOLERANCE),
        figures=figures(rows, cfg.batch_latency, cfg.steps, staging, SLUG),
        devices=ways.devices,
        backend="cpu",
        jax=str(require_jax().__version__),
    )


def demo(cfg: Config, out: Path) -> None:
    """torch eager vs the compiled JAX loop vs per-step dispatch: a table and a sample grid."""
    import torch

    from reference.harness import save_grid

    m, _ = _measured(cfg)
    print(f"{'row':10s} {'ms':>9s} {'compile s':>9s} {'RMS to x*':>10s} {'max|dx|':>9s}  (CPU)")
    for row in m.rows:
        v = row.values
        rms, dx = v.get("rms_to_solution", float("nan")), v["max_abs_vs_torch"]
        print(f"{row.id:10s} {v['latency_ms']:9.1f} {v['compile_s']:9.2f} {rms:10.2e} {dx:9.2e}")
    grid = torch.cat([m.first[k][:10] for k in SAMPLED if k in m.first])
    path = save_grid(grid, out / f"{SLUG}-demo.png", nrow=10)
    print(f"{path} (rows: {', '.join(k for k in SAMPLED if k in m.first)})")
