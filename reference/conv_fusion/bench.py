"""Benchmark and command line of :mod:`reference.conv_fusion` (harness protocol)."""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reference.zoo.store import ZooError

from .denoiser import (
    TrafficEstimate,
    batchnorm_pass,
    make_toy_denoiser,
    noisy_digits,
    relu_passes,
    traffic_estimate,
)
from .fold import (
    conv_bn_relu_groups,
    fold_conv_bn,
    fuse_conv_bn_relu,
    fuse_with_torch_ao,
    max_abs_diff,
)
from .groupnorm import GroupNormFoldError, freeze_groupnorms, fuse_unet_attention

SLUG = "conv-fusion"
MODULE = "reference.conv_fusion"
SOURCES = [
    Path(__file__).with_name(n)
    for n in ("__init__.py", "fold.py", "denoiser.py", "groupnorm.py", "bench.py", "__main__.py")
]


def try_compile(
    model: nn.Module, example: torch.Tensor, *, freezing: bool = False
) -> tuple[Callable[[torch.Tensor], torch.Tensor] | None, str]:
    """``torch.compile(model)`` compiled on ``example`` now; ``(None, reason)`` if it fails.

    ``freezing=True`` turns on Inductor's freezing pass (constant-folds weights, which includes
    folding BatchNorm into convolutions) for this compilation.
    """
    try:
        import torch._inductor.config as inductor_config

        compiled = torch.compile(model, dynamic=False)
        with inductor_config.patch(freezing=freezing), torch.inference_mode():
            compiled(example)
        return compiled, "ok"
    except Exception as exc:  # compiler failures come in many types
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return None, f"torch.compile failed: {first[:200]}"


def _inference(fn: Callable[[torch.Tensor], Any], x: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        with torch.inference_mode():
            fn(x)

    return run


# --------------------------------------------------------------------------- benchmark


@dataclass
class BenchConfig:
    """Sizes of a benchmark or demonstration run."""

    batches: tuple[int, ...] = (1, 8, 32, 128)
    headline_batch: int = 32
    width: int = 32
    depth: int = 12
    repeats: int = 50
    warmup: int = 5
    compile: bool = True
    threads: int = 2

    def validate(self) -> None:
        if not self.batches or min(self.batches) < 1:
            raise ValueError(f"batch sizes must be >= 1, got {list(self.batches)}")
        if self.headline_batch not in self.batches:
            raise ValueError(
                f"headline batch {self.headline_batch} is not one of {list(self.batches)}"
            )
        if self.width < 1 or self.depth < 3:
            raise ValueError(f"need width >= 1 and depth >= 3, got {self.width}, {self.depth}")
        if self.repeats < 1 or self.warmup < 0 or self.threads < 1:
            raise ValueError("repeats and threads must be >= 1, warmup >= 0")


QUICK = BenchConfig(batches=(1, 8), headline_batch=8, repeats=3, warmup=1, compile=False)


@dataclass
class NetworkRun:
    """Measurements of one BN network at one batch size."""

    network: str
    batch: int
    eager_ms: float
    fused_ms: float
    eager_iqr: float
    fused_iqr: float
    bn_ms: float
    max_diff: float
    traffic: TrafficEstimate
    gflops: float
    fold_ms: float = float("nan")
    fold_iqr: float = float("nan")
    relu_saving_ms: float = 0.0

    @property
    def speedup(self) -> float:
        return self.eager_ms / self.fused_ms

    @property
    def removed_ms(self) -> float:
        """Measured time of the work fusion removes: BN passes + fresh ReLU outputs."""
        return self.bn_ms + max(self.relu_saving_ms, 0.0)

    @property
    def limit(self) -> float:
        return self.eager_ms / max(self.eager_ms - self.removed_ms, 1e-9)


def _inputs(network: str, batch: int) -> torch.Tensor:
    if network == "classifier":
        from reference.harness import load_digits_tensors

        return load_digits_tensors("test")[0][:batch].repeat(-(-batch // 300), 1, 1, 1)[:batch]
    return noisy_digits(batch, seed=1)


def measure_network(
    network: str,
    model: nn.Module,
    fused: nn.Module,
    batch: int,
    cfg: BenchConfig,
    fold_only: nn.Module | None = None,
) -> NetworkRun:
    """Interleaved latency of eager vs fused (vs BN folded with the ReLU left alone) vs the BN
    passes alone, plus exactness and bytes."""
    from reference.harness import compare_latency, count_flops

    x = _inputs(network, batch)
    with torch.inference_mode():
        diff = max_abs_diff(model(x), fused(x))
    relu_out, relu_in = relu_passes(model, x)
    funcs = {
        "eager": _inference(model, x),
        "fused": _inference(fused, x),
        "bn": batchnorm_pass(model, x),
        "relu_out": relu_out,
        "relu_in": relu_in,
    }
    if fold_only is not None:
        funcs["fold"] = _inference(fold_only, x)
    lat = compare_latency(
        funcs,
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        threads=cfg.threads,
    )
    with torch.inference_mode():
        flops = count_flops(model, x)
    run = NetworkRun(
        network,
        batch,
        lat.median_ms("eager"),
        lat.median_ms("fused"),
        lat.iqr_ms("eager"),
        lat.iqr_ms("fused"),
        lat.median_ms("bn"),
        diff,
        traffic_estimate(model, x),
        flops / batch / 1e9,
    )
    if fold_only is not None:
        run.fold_ms, run.fold_iqr = lat.median_ms("fold"), lat.iqr_ms("fold")
    run.relu_saving_ms = lat.median_ms("relu_out") - lat.median_ms("relu_in")
    return run


@dataclass
class CompiledRun:
    """Eager, fused and compiled variants of one network at the headline batch."""

    network: str
    batch: int
    stats: dict[str, tuple[float, float]]
    diffs: dict[str, float]
    status: str


def measure_compiled(
    network: str, model: nn.Module, fused: nn.Module, cfg: BenchConfig
) -> CompiledRun:
    """torch.compile of the unfused model (with and without freezing) and of the fused one."""
    from reference.harness import compare_latency

    x = _inputs(network, cfg.headline_batch)
    candidates: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "eager": model,
        "fused": fused,
    }
    status = "ok"
    for name, net, freezing in [
        ("compile", model, False),
        ("compile_fused", fused, False),
        ("compile_freezing", model, True),
    ]:
        compiled, why = try_compile(net, x, freezing=freezing)
        if compiled is None:
            status = why
            break
        candidates[name] = compiled
    with torch.inference_mode():
        ref = model(x)
        diffs = {k: max_abs_diff(ref, f(x)) for k, f in candidates.items()}
    lat = compare_latency(
        {k: _inference(f, x) for k, f in candidates.items()},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        threads=cfg.threads,
    )
    stats = {k: (lat.median_ms(k), lat.iqr_ms(k)) for k in candidates}
    return CompiledRun(network, cfg.headline_batch, stats, diffs, status)


@dataclass
class UNetRun:
    """QKV (+ GroupNorm affine) fusion on the zoo teacher U-Net."""

    blocks: int
    eager_ms: float
    fused_ms: float
    eager_iqr: float
    fused_iqr: float
    max_diff: float
    groupnorm: GroupNormFoldError


@torch.no_grad()
def unet_groupnorm_freeze_error(unet: nn.Module) -> GroupNormFoldError:
    """Relative error of the whole U-Net's predicted noise when every GroupNorm is frozen to
    its statistics on input 1 (a test digit at t = 50): on input 1 and on input 2 (another
    digit at t = 900)."""
    from reference.harness import load_digits_tensors
    from reference.zoo.specs import noise_scheduler

    x0, y = load_digits_tensors("test")
    gen = torch.Generator().manual_seed(0)
    sched = noise_scheduler()

    def point(i: int, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tt = torch.tensor([t])
        x = sched.add_noise(x0[i : i + 1], torch.randn(1, 1, 16, 16, generator=gen), tt)
        return x, tt, y[i : i + 1]

    first, second = point(0, 50), point(1, 900)
    frozen = freeze_groupnorms(unet, lambda m: m(*first[:2], class_labels=first[2]))

    def rel(p: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> float:
        ref = unet(p[0], p[1], class_labels=p[2]).sample
        out = frozen(p[0], p[1], class_labels=p[2]).sample
        return float((out - ref).norm() / ref.norm().clamp_min(1e-30))

    return GroupNormFoldError(rel(first), rel(second))


def measure_unet(batch: int, cfg: BenchConfig) -> UNetRun:
    """Eager teacher vs teacher with fused attention projections (one denoiser call)."""
    from reference import zoo
    from reference.harness import compare_latency

    unet = zoo.load_teacher()
    fused = copy.deepcopy(unet)
    blocks = fuse_unet_attention(fused)
    x = noisy_digits(batch, seed=2)
    t = torch.randint(0, 1000, (batch,), generator=torch.Generator().manual_seed(0))
    y = torch.arange(batch) % 11

    def call(net: nn.Module) -> Callable[[], None]:
        def run() -> None:
            with torch.inference_mode():
                net(x, t, class_labels=y)

        return run

    with torch.inference_mode():
        diff = max_abs_diff(unet(x, t, class_labels=y).sample, fused(x, t, class_labels=y).sample)
    lat = compare_latency(
        {"eager": call(unet), "fused": call(fused)},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        threads=cfg.threads,
    )
    return UNetRun(
        blocks,
        lat.median_ms("eager"),
        lat.median_ms("fused"),
        lat.iqr_ms("eager"),
        lat.iqr_ms("fused"),
        diff,
        unet_groupnorm_freeze_error(unet),
    )


@torch.no_grad()
def library_agreement(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    """Max-abs differences of our fold vs ``fuse_conv_bn_eval`` (weights, biases) and of our
    rewritten model vs ``torch.ao.quantization.fuse_modules`` and vs the original (outputs)."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    fused, _ = fuse_conv_bn_relu(model)
    weight_diff = 0.0
    for conv_name, bn_name, *_ in conv_bn_relu_groups(model):
        conv, bn = model.get_submodule(conv_name), model.get_submodule(bn_name)
        ours, theirs = fold_conv_bn(conv, bn), fuse_conv_bn_eval(conv, bn)
        weight_diff = max(
            weight_diff,
            max_abs_diff(ours.weight, theirs.weight),
            max_abs_diff(ours.bias, theirs.bias),
        )
    out = fused(x)
    return {
        "weights_vs_fuse_conv_bn_eval": weight_diff,
        "outputs_vs_fuse_modules": max_abs_diff(out, fuse_with_torch_ao(model)(x)),
        "outputs_vs_original": max_abs_diff(out, model(x)),
    }


def _networks(cfg: BenchConfig) -> dict[str, nn.Module]:
    from reference import zoo

    return {
        "classifier": zoo.load_classifier(),
        "denoiser": make_toy_denoiser(cfg.width, cfg.depth),
    }


LABELS = {"classifier": "zoo classifier", "denoiser": "toy BN denoiser"}


def run_all(
    cfg: BenchConfig, progress: bool = True
) -> tuple[list[NetworkRun], list[CompiledRun], UNetRun, dict[str, dict[str, float]]]:
    """Every measurement of the benchmark (the sweep, compiled variants, U-Net, oracles)."""
    from tqdm.auto import tqdm

    cfg.validate()
    nets = _networks(cfg)
    fused = {k: fuse_conv_bn_relu(m)[0] for k, m in nets.items()}
    fold_only = {k: fuse_conv_bn_relu(m, fuse_relu=False)[0] for k, m in nets.items()}
    oracle = {k: library_agreement(m, _inputs(k, 8)) for k, m in nets.items()}
    jobs = [(k, b) for k in nets for b in cfg.batches]
    n_extra = (len(nets) if cfg.compile else 0) + 1
    bar = tqdm(total=len(jobs) + n_extra, desc="conv-fusion", disable=not progress)
    sweep = []
    for k, b in jobs:
        sweep.append(measure_network(k, nets[k], fused[k], b, cfg, fold_only[k]))
        bar.update()
    compiled = []
    if cfg.compile:
        for k in nets:
            compiled.append(measure_compiled(k, nets[k], fused[k], cfg))
            bar.update()
    unet = measure_unet(cfg.headline_batch, cfg)
    bar.update()
    bar.close()
    return sweep, compiled, unet, oracle


COMPILED_NAMES = {
    "eager": "eager, unfused",
    "fused": "eager, fx-fused",
    "compile": "torch.compile(unfused)",
    "compile_fused": "torch.compile(fx-fused)",
    "compile_freezing": "torch.compile(unfused), Inductor freezing",
}


def _rows(sweep: Sequence[NetworkRun], compiled: Sequence[CompiledRun], unet: UNetRun) -> list[Any]:
    from reference.harness import Row

    rows = []
    for r in sweep:
        label = f"{LABELS[r.network]}, batch {r.batch}"
        common = {"gflops": r.gflops, "speedup_limit": r.limit}
        rows.append(
            Row(
                f"{label}: Conv-BN-ReLU (eager)",
                "baseline",
                {
                    "latency_ms": r.eager_ms,
                    "speedup": 1.0,
                    "max_abs_diff": 0.0,
                    "elementwise_mb": r.traffic.before_bytes / 1e6,
                    **common,
                },
                {"latency_ms": r.eager_iqr},
            )
        )
        rows.append(
            Row(
                f"{label}: BN folded, ReLU left as it was",
                "technique",
                {
                    "latency_ms": r.fold_ms,
                    "speedup": r.eager_ms / r.fold_ms,
                    "elementwise_mb": r.traffic.after_bytes / 1e6,
                    **common,
                },
                {"latency_ms": r.fold_iqr},
            )
        )
        rows.append(
            Row(
                f"{label}: fx-fused Conv+ReLU (BN folded, ReLU in place)",
                "technique",
                {
                    "latency_ms": r.fused_ms,
                    "speedup": r.speedup,
                    "max_abs_diff": r.max_diff,
                    "elementwise_mb": r.traffic.after_bytes / 1e6,
                    **common,
                },
                {"latency_ms": r.fused_iqr},
            )
        )
    for c in compiled:
        base = c.stats["eager"][0]
        for key, (ms, iqr) in c.stats.items():
            if key in ("eager", "fused"):
                continue
            role = "technique" if key == "compile_fused" else "control"
            rows.append(
                Row(
                    f"{LABELS[c.network]}, batch {c.batch}: {COMPILED_NAMES[key]}",
                    role,
                    {"latency_ms": ms, "speedup": base / ms, "max_abs_diff": c.diffs[key]},
                    {"latency_ms": iqr},
                )
            )
    rows.append(
        Row(
            "teacher U-Net (GroupNorm): eager",
            "baseline",
            {"latency_ms": unet.eager_ms, "speedup": 1.0, "max_abs_diff": 0.0},
            {"latency_ms": unet.eager_iqr},
        )
    )
    rows.append(
        Row(
            f"teacher U-Net: QKV + GroupNorm-affine fused ({unet.blocks} attention blocks)",
            "technique",
            {
                "latency_ms": unet.fused_ms,
                "speedup": unet.eager_ms / unet.fused_ms,
                "max_abs_diff": unet.max_diff,
            },
            {"latency_ms": unet.fused_iqr},
        )
    )
    rows.append(
        Row(
            "teacher U-Net, every GroupNorm frozen on input 1 (t=50), evaluated on input 1",
            "reference",
            {"groupnorm_rel_error": unet.groupnorm.on_calibration_input},
        )
    )
    rows.append(
        Row(
            "teacher U-Net, every GroupNorm frozen on input 1, evaluated on input 2 (t=900)",
            "reference",
            {"groupnorm_rel_error": unet.groupnorm.on_other_input},
        )
    )
    return rows


def _metric_specs() -> dict[str, Any]:
    from reference.harness import MetricSpec, metrics

    return metrics(
        "latency_ms",
        "gflops",
        speedup=MetricSpec("Speedup over eager unfused", "x", "higher"),
        max_abs_diff=MetricSpec("Max abs difference vs unfused", "", "lower"),
        elementwise_mb=MetricSpec("BN + ReLU memory traffic", "MB", "lower"),
        speedup_limit=MetricSpec("Limit: T / (T - T_removed)", "x", "higher"),
        groupnorm_rel_error=MetricSpec(
            "Relative error of the predicted noise with frozen GroupNorms", "", "lower"
        ),
    )


def _figures(sweep: Sequence[NetworkRun], cfg: BenchConfig, out: Path) -> list[str]:
    from reference.harness import curve_plot

    series = {}
    for net in LABELS:
        runs = [r for r in sweep if r.network == net]
        series[f"{LABELS[net]}: measured"] = [r.speedup for r in runs]
        series[f"{LABELS[net]}: limit T/(T-T_removed)"] = [r.limit for r in runs]
    name = f"{SLUG}.png"
    curve_plot(
        list(cfg.batches),
        series,
        out / name,
        xlabel="batch size",
        ylabel="speedup of fused over eager (x)",
        title="Conv-BN-ReLU fusion, 2-core CPU",
        logx=True,
        hlines={"no gain": 1.0},
    )
    return [name]


def benchmark(quick: bool = False, cfg: BenchConfig | None = None) -> Any:
    """Measure the fusion (harness protocol); returns a ``BenchmarkResult``."""
    from reference.harness import BenchmarkResult, Headline, aim, output_dir, provenance

    cfg = cfg or (QUICK if quick else BenchConfig())
    load_at_start = round(os.getloadavg()[0], 2)
    sweep, compiled, unet, oracle = run_all(cfg)
    head = next(r for r in sweep if r.network == "denoiser" and r.batch == cfg.headline_batch)
    figures = _figures(sweep, cfg, output_dir(quick))
    exact = max(r.max_diff for r in sweep)
    lib = max(max(v.values()) for v in oracle.values())
    notes = [
        f"Measured on a shared 2-core CPU with {cfg.threads} torch threads; latencies are "
        f"medians of {cfg.repeats} interleaved rounds after {cfg.warmup} warm-up calls.",
        f"The toy BN denoiser (width {cfg.width}, depth {cfg.depth}) is defined in this module, "
        "not a zoo model; its weights are random and its BatchNorm statistics are calibrated on "
        "noisy digits: the fold's exactness and speed do not depend on trained weights.",
        "FLOPs are identical before and after folding (FLOP counters ignore BatchNorm): the gain "
        "is the removed BatchNorm pass (one read + one write of each activation, one operator "
        "dispatch per block) and the ReLU running in place on the convolution's output instead "
        "of allocating and writing a new tensor. The limit T / (T - T_removed) uses the "
        "measured time of exactly that work: the BatchNorm layers run alone on their recorded "
        "inputs, plus out-of-place minus in-place ReLU on the same tensors. It is an estimate "
        "from isolated timings: inside the network the removed passes also cost cache misses "
        "for the next convolution, so the measured speedup can slightly exceed it. Folding "
        "alone (ReLU left out of place) is shown separately.",
        "Library oracles (max abs difference): "
        + "; ".join(
            f"{LABELS[k]}: " + ", ".join(f"{n} {v:.1e}" for n, v in d.items())
            for k, d in oracle.items()
        ),
        "GroupNorm cannot be folded: with every GroupNorm of the teacher frozen to the "
        "statistics of one input (what folding would need), the predicted noise matches on "
        f"that input ({unet.groupnorm.on_calibration_input:.1e} relative error) and is wrong "
        f"on another ({unet.groupnorm.on_other_input:.2f} relative L2 error).",
        "The U-Net rows fuse what can be fused in a GroupNorm network: the attention "
        "GroupNorm's affine folded into Q/K/V and the three projections merged into one "
        "(diffusers' Attention.fuse_projections + FusedAttnProcessor2_0; UNet2DModel has no "
        "fuse_qkv_projections method). Attention runs only at 4x4 resolution in the zoo "
        "teacher, so the whole-model gain is small.",
    ]
    if cfg.compile:
        status = {c.network: c.status for c in compiled}
        notes.append(
            "torch.compile (Inductor, C++ backend via gcc): "
            + "; ".join(f"{LABELS[k]}: {v}" for k, v in status.items())
            + ". Compare the compiled rows: if torch.compile(unfused) is as fast as "
            "torch.compile(fx-fused), the compiler already captures the gain (Inductor fuses "
            "BN + ReLU into one elementwise kernel; with freezing it folds BN into the weights)."
        )
    else:
        notes.append("Quick run: torch.compile variants skipped.")
    aims = [
        aim("fx-fused outputs equal the unfused model (max abs diff <= 1e-5)", exact, 1e-5, "<="),
        aim(
            "agreement with fuse_conv_bn_eval and torch.ao fuse_modules (<= 1e-5)", lib, 1e-5, "<="
        ),
        aim(
            "U-Net QKV + GroupNorm-affine fusion equals the original (<= 1e-5)",
            unet.max_diff,
            1e-5,
            "<=",
        ),
        aim(
            f">= 1.2x measured speedup on the BN denoiser at batch {cfg.headline_batch}",
            head.speedup,
            1.2,
            ">=",
        ),
    ]
    den = [r for r in sweep if r.network == "denoiser"]
    notes.append(
        "BN denoiser speedup over the batch sweep: "
        + ", ".join(f"batch {r.batch}: {r.speedup:.2f}x (limit {r.limit:.2f}x)" for r in den)
        + "."
    )
    if head.speedup < 1.2:
        notes.append(
            f"Speedup aim not met at the headline batch {cfg.headline_batch} (chosen before "
            f"measuring): {head.speedup:.2f}x against a limit of {head.limit:.2f}x; the removed "
            f"work is only {head.removed_ms / head.eager_ms:.0%} of the eager time at this size, "
            "the 3x3 convolutions dominate."
        )
    for c in compiled:
        if all(k in c.stats for k in ("compile", "compile_fused", "compile_freezing")):
            gain = c.stats["compile"][0] / c.stats["compile_fused"][0]
            notes.append(
                f"{LABELS[c.network]}, batch {c.batch}: torch.compile(fx-fused) is {gain:.2f}x "
                "the speed of torch.compile(unfused); with Inductor freezing "
                f"{c.stats['compile'][0] / c.stats['compile_freezing'][0]:.2f}x "
                "of torch.compile(unfused)."
            )
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Conv-BatchNorm(-ReLU) folding with a torch.fx rewrite, and what a GroupNorm U-Net "
        "can fuse instead",
        quick=quick,
        settings={
            "batches": list(cfg.batches),
            "headline_batch": cfg.headline_batch,
            "denoiser_width": cfg.width,
            "denoiser_depth": cfg.depth,
            "repeats": cfg.repeats,
            "warmup": cfg.warmup,
            "torch_compile": cfg.compile,
            "threads": cfg.threads,
            "load_average_1min_at_start": load_at_start,
        },
        metrics=_metric_specs(),
        rows=_rows(sweep, compiled, unet),
        headline=Headline(
            speedup=head.speedup,
            speedup_limit=head.limit,
            memory_ratio=head.traffic.after_bytes / head.traffic.before_bytes,
            quality_ratio=None,
            quality_metric=None,
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance(SOURCES),
    )


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.conv_fusion",
        description="Fold BatchNorm (and fuse ReLU) into convolutions with a torch.fx rewrite; "
        "measure it on the zoo classifier and a toy BN denoiser; show why GroupNorm cannot be "
        "folded and what a U-Net can fuse instead.",
    )
    p.add_argument(
        "--batch",
        type=int,
        nargs="+",
        default=None,
        help="batch sizes to time (default: 1 8 32 128; demo: 8 32)",
    )
    p.add_argument("--width", type=int, default=32, help="toy denoiser width (default 32)")
    p.add_argument("--depth", type=int, default=12, help="toy denoiser depth (default 12)")
    p.add_argument("--repeats", type=int, default=None, help="timing rounds per configuration")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile variants")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="demo output dir")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write the result")
    p.add_argument("--quick", action="store_true", help="with --bench: the small test setup")
    return p


def _config(args: argparse.Namespace) -> BenchConfig:
    if args.bench and args.quick:
        base = QUICK
    elif args.bench:
        base = BenchConfig()
    else:
        base = BenchConfig(batches=(8, 32), headline_batch=32, repeats=10, compile=False)
    batches = tuple(args.batch) if args.batch else base.batches
    headline = base.headline_batch if base.headline_batch in batches else batches[-1]
    cfg = BenchConfig(
        batches=batches,
        headline_batch=headline,
        width=args.width,
        depth=args.depth,
        repeats=args.repeats if args.repeats is not None else base.repeats,
        warmup=base.warmup,
        compile=base.compile and not args.no_compile,
        threads=args.threads,
    )
    cfg.validate()
    return cfg


def _print_table(sweep: Sequence[NetworkRun], unet: UNetRun) -> None:
    print(
        f"{'network':18} {'batch':>5} {'eager ms':>9} {'fold ms':>9} {'fused ms':>9} "
        f"{'speedup':>8} {'limit':>6} {'max|diff|':>9}"
    )
    for r in sweep:
        print(
            f"{LABELS[r.network]:18} {r.batch:5d} {r.eager_ms:9.2f} {r.fold_ms:9.2f} "
            f"{r.fused_ms:9.2f} {r.speedup:7.2f}x {r.limit:5.2f}x {r.max_diff:9.1e}"
        )
    print(
        f"{'teacher U-Net QKV':18} {'':5} {unet.eager_ms:9.2f} {'':9} {unet.fused_ms:9.2f} "
        f"{unet.eager_ms / unet.fused_ms:7.2f}x {'':6} {unet.max_diff:9.1e}"
    )
    g = unet.groupnorm
    print(
        f"GroupNorm frozen on input 1: relative error {g.on_calibration_input:.1e} on input 1, "
        f"{g.on_other_input:.2f} on input 2 (cannot be folded)"
    )


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    args = _parser().parse_args(argv)
    try:
        cfg = _config(args)
        torch.set_num_threads(cfg.threads)
        if args.bench:
            from reference.harness import write_result

            result = benchmark(quick=args.quick, cfg=cfg)
            path = write_result(result)
            for a in result.aims:
                print(f"[{'met' if a.met else 'NOT met'}] {a.text}: {a.measured:.3g}")
            print(f"wrote {path}")
            return 0
        sweep, _, unet, oracle = run_all(cfg)
        _print_table(sweep, unet)
        for k, d in oracle.items():
            print(f"{LABELS[k]} vs libraries: " + ", ".join(f"{n}={v:.1e}" for n, v in d.items()))
        args.out.mkdir(parents=True, exist_ok=True)
        for name in _figures(sweep, cfg, args.out):
            print(f"figure: {args.out / name}")
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
