"""Benchmark and command line of :mod:`reference.tpu_deployment` (harness protocol).

Everything measured here runs on JAX's **CPU** backend; no figure is a TPU figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import JAX_MISSING, configure_host_devices, require_jax

SLUG = "tpu-deployment"
MODULE = "reference.tpu_deployment"
SOURCES = [
    Path(__file__).with_name(n) for n in ("__init__.py", "unet.py", "sampler.py", "bench.py")
]
PARITY_TOLERANCE = 1e-4


@dataclass(frozen=True)
class BenchConfig:
    """What to measure: ``n`` images, ``steps`` DDIM steps, guidance, timing repeats, and the
    stream of request sizes served with and without batch buckets."""

    n: int = 64
    steps: int = 20
    guidance_scale: float = 1.0
    repeats: int = 5
    warmup: int = 1
    threads: int = 2
    stream: tuple[int, ...] = (3, 5, 6, 7, 12)
    buckets: tuple[int, ...] = (8, 16)
    full_rows: bool = True

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"--n must be >= 1, got {self.n}")
        if self.steps < 1:
            raise ValueError(f"--steps must be >= 1, got {self.steps}")
        if self.guidance_scale < 0:
            raise ValueError(f"--guidance must be >= 0, got {self.guidance_scale}")
        if self.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {self.repeats}")
        if any(s < 1 for s in self.stream):
            raise ValueError("--stream sizes must be >= 1")


QUICK = BenchConfig(n=8, steps=2, repeats=1, warmup=1, stream=(3, 5), buckets=(8,), full_rows=False)


def load_teacher_params(dtype: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(params, cfg)`` of the zoo teacher, read from its verified safetensors file."""
    require_jax()
    import jax.numpy as jnp
    from safetensors.numpy import load_file

    from reference.zoo.store import verified_weights

    from .unet import check_config, convert_state_dict

    entry, path = verified_weights("teacher")
    params = convert_state_dict(load_file(str(path)), dtype or jnp.float32)
    return params, check_config(entry["config"])


@dataclass
class Measurement:
    """Raw outcome of :func:`measure` (latencies in ms, compile times in s)."""

    n: int
    steps: int
    latency: Any
    samples: dict[str, Any]
    compile_s: dict[str, float]
    max_abs: dict[str, float]
    stream: dict[str, dict[str, float]] = field(default_factory=dict)
    devices: int = 1


def _first_call(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _serve_stream(
    sampler_factory: Callable[[], Any], params: Any, sizes: Sequence[int], buckets: Sequence[int]
) -> dict[str, float]:
    """Serve requests of ``sizes`` with a fresh sampler; pad to ``buckets`` unless empty."""
    import numpy as np

    from .sampler import bucket_size, pad_batch

    sampler = sampler_factory()
    start = time.perf_counter()
    for k, n in enumerate(sizes):
        rng = np.random.default_rng(k)
        noise = rng.standard_normal((n, 16, 16, 1)).astype(np.float32)
        labels = np.arange(n, dtype=np.int32) % 10
        size = bucket_size(n, buckets) if buckets else n
        x, y = pad_batch(noise, labels, size)
        out = sampler.compiled(*sampler.place(params, x, y))
        assert out.shape[0] == size
    return {"seconds": time.perf_counter() - start, "compilations": sampler.compilations()}


def measure(cfg: BenchConfig, *, progress: bool = True) -> Measurement:
    """Run torch eager, the compiled JAX loop, per-step dispatch (and sharded/bf16 rows)."""
    configure_host_devices()
    jax = require_jax()
    import jax.numpy as jnp
    import numpy as np
    import torch
    from tqdm import tqdm

    from reference import zoo
    from reference.harness import class_labels, compare_latency, make_noise, model_eps_fn, sample

    from .sampler import Sampler, data_mesh, ddim_tables
    from .unet import cast_params, nchw_to_nhwc, nhwc_to_nchw

    torch.set_num_threads(cfg.threads)
    params, ucfg = load_teacher_params()
    unet = zoo.load_teacher()
    noise_t, labels_t = make_noise(cfg.n, seed=0), class_labels(cfg.n)
    noise, labels = nchw_to_nhwc(noise_t.numpy()), labels_t.numpy()
    tables = ddim_tables(zoo.teacher_scheduler(), cfg.steps)
    g = cfg.guidance_scale

    def torch_run() -> Any:
        return sample(
            model_eps_fn(unet),
            zoo.teacher_scheduler(),
            noise_t,
            steps=cfg.steps,
            labels=labels_t,
            guidance_scale=g,
        )

    plain = Sampler(ucfg, tables, guidance_scale=g)
    placed = plain.place(params, noise, labels)
    runs: dict[str, Callable[[], Any]] = {
        "torch": torch_run,
        "compiled": lambda: plain.compiled(*placed),
        "per_step": lambda: plain.per_step(*placed),
    }
    devices = 1
    if cfg.full_rows:
        mesh = data_mesh()
        devices = mesh.size
        if cfg.n % devices:
            raise ValueError(f"--n must be a multiple of the {devices} devices for the mesh")
        sharded = Sampler(ucfg, tables, guidance_scale=g, mesh=mesh)
        placed_sh = sharded.place(params, noise, labels)
        bf16 = Sampler(ucfg, tables, guidance_scale=g, compute_dtype=jnp.bfloat16)
        placed_bf = bf16.place(cast_params(params, jnp.bfloat16), noise, labels)
        runs["sharded"] = lambda: sharded.compiled(*placed_sh)
        runs["bf16"] = lambda: bf16.compiled(*placed_bf)

    samples: dict[str, Any] = {}
    first: dict[str, float] = {}
    for name in tqdm(runs, desc="compile + first run", disable=not progress):
        with torch.inference_mode():
            out, first[name] = _first_call(runs[name])
        samples[name] = (
            out if name == "torch" else torch.from_numpy(np.asarray(nhwc_to_nchw(np.asarray(out))))
        )
    with torch.inference_mode():
        lat = compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup, threads=cfg.threads)
    compile_s = {k: max(first[k] - lat.median_ms(k) / 1000, 0.0) for k in runs if k != "torch"}
    ref = samples["torch"]
    max_abs = {k: float((v - ref).abs().max()) for k, v in samples.items()}
    stream: dict[str, dict[str, float]] = {}
    if cfg.full_rows and cfg.stream:

        def factory() -> Any:
            return Sampler(ucfg, tables, guidance_scale=g)

        for policy, buckets in tqdm(
            [("exact", ()), ("buckets", cfg.buckets)], desc="request stream", disable=not progress
        ):
            stream[policy] = _serve_stream(factory, params, cfg.stream, buckets)
    del jax
    return Measurement(cfg.n, cfg.steps, lat, samples, compile_s, max_abs, stream, devices)


LABELS = {
    "torch": "PyTorch eager (diffusers UNet2DModel)",
    "compiled": "JAX: whole DDIM loop in one program (jit + fori_loop)",
    "per_step": "JAX: jit of one step, dispatched per step from Python",
    "sharded": "JAX: whole loop, batch sharded over {d} host-CPU devices",
    "bf16": "JAX: whole loop, bfloat16 weights/activations",
}
ROLES = {
    "torch": "baseline",
    "compiled": "technique",
    "per_step": "control",
    "sharded": "technique",
    "bf16": "technique",
}


def break_even_images(compile_s: float, per_image_other_ms: float, per_image_ms: float) -> float:
    """Images after which ``compile_s`` is repaid by a lower per-image time (inf if never)."""
    if compile_s <= 0:
        return 0.0
    gain_s = (per_image_other_ms - per_image_ms) / 1000.0
    return compile_s / gain_s if gain_s > 0 else float("inf")


def payoff_text(extra_compile_s: float, per_image_other_ms: float, per_image_ms: float) -> str:
    """In words: from when an option that costs ``extra_compile_s`` more to compile is ahead."""
    gain_ms = per_image_other_ms - per_image_ms
    if gain_ms > 0:
        if extra_compile_s <= 0:
            return "from the first image (cheaper to compile and faster per image)"
        images = break_even_images(extra_compile_s, per_image_other_ms, per_image_ms)
        return f"after {images:,.0f} images"
    if extra_compile_s < 0:
        lead = -extra_compile_s * 1000.0 / max(-gain_ms, 1e-9)
        return (
            f"never in the long run: it compiles faster but is slower per image, ahead only for "
            f"the first {lead:,.0f} images"
        )
    return "never (it is slower per image)"


def benchmark(quick: bool = False, cfg: BenchConfig | None = None) -> Any:
    """Measure and return the harness ``BenchmarkResult`` (``quick``: seconds, tests only)."""
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
    m = measure(cfg, progress=not quick)
    lat = m.latency
    fdd = {k: frechet_digits_distance(v) for k, v in m.samples.items()}
    rows = []
    for key in m.samples:
        values = {
            "latency_ms": lat.median_ms(key),
            "ms_per_image": lat.median_ms(key) / m.n,
            "fd_digits": fdd[key],
            "compile_s": m.compile_s.get(key, 0.0),
            "max_abs_vs_torch": m.max_abs[key],
        }
        rows.append(
            Row(
                LABELS[key].format(d=m.devices), ROLES[key], values, {"latency_ms": lat.iqr_ms(key)}
            )
        )
    per_image = {k: lat.median_ms(k) / m.n for k in m.samples}
    be_torch = payoff_text(m.compile_s["compiled"], per_image["torch"], per_image["compiled"])
    be_step = payoff_text(
        m.compile_s["compiled"] - m.compile_s["per_step"],
        per_image["per_step"],
        per_image["compiled"],
    )
    notes = [
        "All figures are CPU figures (JAX CPU backend, torch CPU, "
        f"{cfg.threads} threads); none is a TPU measurement.",
        f"Parity of the compiled JAX sampler with torch (fp32, same noise and weights): max |dx| = "
        f"{m.max_abs['compiled']:.2e} over {m.n} images x {m.steps} DDIM steps "
        f"(tolerance {PARITY_TOLERANCE:g}).",
        f"Compile time of the whole-loop program: {m.compile_s['compiled']:.1f} s; of the "
        f"single-step program: {m.compile_s['per_step']:.1f} s. The whole-loop program pays off "
        f"against torch eager {be_torch}; against per-step dispatch {be_step}.",
        f"FDD floor (real digits) at n = {m.n}: {fdd_floor(m.n):.2f}.",
        "Published TPU figures, quoted not measured: a TPU v4 chip peaks at 275 TFLOP/s bf16 with "
        "32 GiB HBM at ~1.2 TB/s (Jouppi et al. 2023, arXiv:2304.01433).",
    ]
    if m.stream:
        ex, bu = m.stream["exact"], m.stream["buckets"]
        notes.append(
            f"Request stream of sizes {list(cfg.stream)}: exact shapes compiled "
            f"{ex['compilations']} programs in {ex['seconds']:.1f} s in total; padding to buckets "
            f"{list(cfg.buckets)} compiled {bu['compilations']} in {bu['seconds']:.1f} s."
        )
    if "sharded" in m.samples:
        notes.append(
            f"Sharded over {m.devices} host devices vs unsharded: max |dx| = "
            f"{float((m.samples['sharded'] - m.samples['compiled']).abs().max()):.1e}; time "
            f"{lat.median_ms('sharded'):.0f} ms vs {lat.median_ms('compiled'):.0f} ms unsharded. "
            f"The {m.devices} host devices share this machine's {os.cpu_count()} cores: a "
            "difference here comes from how XLA:CPU splits the work into per-device programs "
            "and threads, not from added hardware, and says nothing about scaling on TPUs."
        )
    if "bf16" in m.samples:
        notes.append(
            f"bfloat16 vs float32 samples: max |dx| = "
            f"{float((m.samples['bf16'] - m.samples['compiled']).abs().max()):.3f}; XLA:CPU has no "
            "bf16 matrix units, so bf16 is a TPU/GPU speed option, not a CPU one."
        )
    speedup = lat.speedup["compiled"]
    loop_vs_step = lat.median_ms("per_step") / lat.median_ms("compiled")
    aims = [
        aim(
            "JAX port matches torch (fp32 samples, max |dx|)",
            m.max_abs["compiled"],
            PARITY_TOLERANCE,
            "<=",
        ),
        aim("one compiled loop at least as fast as per-step dispatch", loop_vs_step, 1.0, ">="),
    ]
    if m.stream:
        aims.append(
            aim(
                "bucketing compiles no more programs than there are buckets",
                m.stream["buckets"]["compilations"],
                len(cfg.buckets),
                "<=",
            )
        )
    figures = _figures(m, output_dir(quick))
    custom = {
        "ms_per_image": MetricSpec("Latency per image", "ms", "lower"),
        "compile_s": MetricSpec("Compile time (first call)", "s", "lower"),
        "max_abs_vs_torch": MetricSpec("Max |x - x_torch| (same noise)", "", "lower"),
    }
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="The zoo U-Net's DDIM loop as one XLA program in JAX (CPU backend)",
        quick=quick,
        settings={
            "n": m.n,
            "steps": m.steps,
            "guidance_scale": cfg.guidance_scale,
            "threads": cfg.threads,
            "repeats": cfg.repeats,
            "devices": m.devices,
            "backend": "cpu",
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (active spin)"),
            "jax": _jax_version(),
            "stream": list(cfg.stream),
            "buckets": list(cfg.buckets),
        },
        metrics=metrics("latency_ms", **{"ms_per_image": custom["ms_per_image"]})
        | metrics("fd_digits", **{k: custom[k] for k in ("compile_s", "max_abs_vs_torch")}),
        rows=rows,
        headline=Headline(
            speedup=speedup,
            speedup_limit=None,
            quality_ratio=fdd["compiled"] / fdd["torch"],
            quality_metric="fd_digits",
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance(SOURCES),
    )


def _jax_version() -> str:
    return str(require_jax().__version__)


def _figures(m: Measurement, out: Path) -> list[str]:
    from reference.harness import bar_chart, curve_plot

    out.mkdir(parents=True, exist_ok=True)
    keys = list(m.samples)
    bar_chart(
        [LABELS[k].format(d=m.devices) for k in keys],
        [m.latency.median_ms(k) for k in keys],
        out / f"{SLUG}.png",
        roles=[ROLES[k] for k in keys],
        errors=[m.latency.iqr_ms(k) for k in keys],
        ylabel=f"ms for {m.n} images x {m.steps} DDIM steps (CPU)",
        title="Same sampler, three ways to drive it (CPU backend, not a TPU)",
    )
    images = [0, m.n, 4 * m.n, 16 * m.n, 64 * m.n]
    series = {}
    for k in ("torch", "per_step", "compiled"):
        per = m.latency.median_ms(k) / m.n / 1000
        series[LABELS[k]] = [m.compile_s.get(k, 0.0) + i * per for i in images]
    curve_plot(
        images,
        series,
        out / f"{SLUG}-compile-payoff.png",
        xlabel="images served",
        ylabel="seconds incl. compilation",
        title="When does compiling pay off? (CPU)",
    )
    return [f"{SLUG}.png", f"{SLUG}-compile-payoff.png"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.tpu_deployment",
        description="Zoo U-Net DDIM sampling as one XLA program in JAX (CPU backend with 8 "
        "logical devices; the same code runs on a TPU).",
    )
    p.add_argument("--n", type=int, default=16, help="images per batch (demo; default 16)")
    p.add_argument("--steps", type=int, default=10, help="DDIM steps (demo; default 10)")
    p.add_argument("--guidance", type=float, default=1.0, help="classifier-free guidance scale")
    p.add_argument("--repeats", type=int, default=3, help="timing rounds (demo)")
    p.add_argument("--bench", action="store_true", help="full benchmark -> reference/results/")
    p.add_argument("--quick", action="store_true", help="with --bench: small run to artifacts/")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="demo output dir")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    args = _parser().parse_args(argv)
    configure_host_devices()
    try:
        require_jax()
        from reference.zoo.store import ZooError
    except ImportError:
        sys.exit(f"error: {JAX_MISSING}")
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
            n=args.n,
            steps=args.steps,
            guidance_scale=args.guidance,
            repeats=args.repeats,
            full_rows=False,
        )
        m = measure(cfg)
        _print_table(m)
        from reference.harness import save_grid

        args.out.mkdir(parents=True, exist_ok=True)
        grid = save_grid(m.samples["compiled"], args.out / "samples-jax.png")
        print(f"samples: {grid}")
        for name in _figures(m, args.out):
            print(f"figure: {args.out / name}")
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


def _print_table(m: Measurement) -> None:
    print(f"{'configuration':58s} {'ms':>9s} {'compile s':>9s} {'max|dx|':>9s}")
    for k in m.samples:
        print(
            f"{LABELS[k].format(d=m.devices):58s} {m.latency.median_ms(k):9.1f} "
            f"{m.compile_s.get(k, 0.0):9.2f} {m.max_abs[k]:9.2e}"
        )
