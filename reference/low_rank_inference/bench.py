"""Benchmark and command line of :mod:`reference.low_rank_inference` (harness protocol)."""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reference.zoo.store import ZooError

from .factorize import (
    Spectrum,
    apply_plan,
    break_even_rank,
    calibrate_second_moments,
    factorize_layer,
    max_rank,
    plan_factorization,
    record_inputs,
    spectrum,
    weight_matrix,
)
from .lora import train_lora_demo

SLUG = "low-rank-inference"
MODULE = "reference.low_rank_inference"
SOURCES = [
    Path(__file__).with_name(n)
    for n in ("__init__.py", "factorize.py", "lora.py", "bench.py", "__main__.py")
]
TARGETS = ("attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0", "ff.net.0.proj", "ff.net.2")
"""The token-wise Linear layers of a diffusers DiT block (the conditioning MLPs run once per
sample and are left dense)."""
METHODS = {"svd": "plain SVD", "asvd": "activation-aware SVD"}


def dit_target_layers(dit: nn.Module) -> list[str]:
    """Qualified names of the token-wise Linear layers of every DiT block."""
    return [
        f"transformer_blocks.{i}.{t}" for i in range(len(dit.transformer_blocks)) for t in TARGETS
    ]


@dataclass
class BenchConfig:
    """Sizes of a benchmark or demonstration run."""

    budgets: tuple[float, ...] = (0.75, 0.5, 0.35)
    methods: tuple[str, ...] = ("svd", "asvd")
    headline: tuple[str, float] = ("asvd", 0.5)
    n_eval: int = 256
    steps: int = 20
    calib_n: int = 64
    calib_steps: int = 10
    latency_batch: int = 64
    repeats: int = 30
    warmup: int = 3
    threads: int = 2
    lora_rank: int = 8

    def validate(self) -> None:
        if not self.budgets or not all(0.0 < b <= 1.0 for b in self.budgets):
            raise ValueError(f"budgets must be in (0, 1], got {list(self.budgets)}")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown method {unknown[0]!r}; choose from {', '.join(METHODS)}")
        if self.headline not in [(m, b) for m in self.methods for b in self.budgets]:
            raise ValueError(f"headline {self.headline} is not among the measured configurations")
        for name in ("n_eval", "steps", "calib_n", "calib_steps", "latency_batch", "repeats"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_eval < 2:
            raise ValueError("n_eval must be >= 2 (the Frechet distance needs a covariance)")


QUICK = BenchConfig(
    budgets=(0.5,),
    n_eval=24,
    steps=3,
    calib_n=16,
    calib_steps=3,
    latency_batch=16,
    repeats=3,
    warmup=1,
)


# --------------------------------------------------------------------------- measurement pieces


def _sampler(n: int, steps: int, seed: int) -> Callable[[nn.Module], torch.Tensor]:
    from reference import zoo
    from reference.harness import class_labels, make_noise, model_eps_fn, sample

    noise, labels = make_noise(n, seed), class_labels(n)

    def run(model: nn.Module) -> torch.Tensor:
        return sample(
            model_eps_fn(model), zoo.teacher_scheduler(), noise, steps=steps, labels=labels
        )

    return run


def eval_batch(n: int, seed: int = 7) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x_t, t, labels)``: test digits noised at random timesteps (for output deviation)."""
    from reference.harness import load_digits_tensors
    from reference.zoo.specs import noise_scheduler

    x0, y = load_digits_tensors("test")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(x0), (n,), generator=gen)
    t = torch.randint(0, 1000, (n,), generator=gen)
    x_t = noise_scheduler().add_noise(x0[idx], torch.randn(x0[idx].shape, generator=gen), t)
    return x_t, t, y[idx]


def _forward(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> Callable[[], torch.Tensor]:
    x, t, y = batch

    def run() -> torch.Tensor:
        with torch.inference_mode():
            return model(x, t, class_labels=y, return_dict=False)[0]

    return run


def _layers_call(
    model: nn.Module, inputs: dict[str, torch.Tensor], names: Sequence[str]
) -> Callable[[], None]:
    """Run only the named layers (dense or factorised) of ``model`` on recorded inputs."""
    layers = [(model.get_submodule(n), inputs[n]) for n in names]

    def run() -> None:
        with torch.inference_mode():
            for layer, x in layers:
                layer(x)

    return run


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``||a - b|| / ||b||``."""
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


@torch.no_grad()
def output_error_curve(
    layer: nn.Module, second_moment: torch.Tensor, spec: Spectrum
) -> list[float]:
    """Relative output error ``sqrt(tr(D C D^T) / tr(W C W^T))``, ``D = W - W_r``, for every
    rank ``r = 1..max`` in closed form.

    ``W M = sum_i s_i u_i v_i^T`` gives ``D = sum_{i>r} s_i u_i v_i^T M^{-1}`` and, the ``u_i``
    being orthonormal, ``tr(D C D^T) = sum_{i>r} s_i^2 q_i`` with
    ``q_i = v_i^T M^{-1} C M^{-T} v_i`` (``q_i = 1`` for activation-aware SVD up to its ridge).
    """
    w = weight_matrix(layer).double()
    c = second_moment.double()
    v = spec.vh if spec.m_inv is None else spec.vh @ spec.m_inv
    q = torch.einsum("ij,jk,ik->i", v, c, v)
    tail = torch.flip(torch.cumsum(torch.flip(spec.s.double() ** 2 * q, [0]), 0), [0])
    denom = torch.trace(w @ c @ w.T)
    tail = torch.cat([tail[1:], tail.new_zeros(1)])  # error after keeping r = 1..len(s)
    return (tail.clamp_min(0) / denom).sqrt().tolist()


# --------------------------------------------------------------------------- the benchmark


@dataclass
class Variant:
    """One measured model: dense, or a factorisation (method, budget)."""

    key: str
    name: str
    method: str | None
    budget: float | None
    model: nn.Module
    kept: float = 1.0
    ranks: dict[str, int] = field(default_factory=dict)
    dense_layers: list[str] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)


def build_variants(
    dit: nn.Module, names: list[str], moments: dict[str, torch.Tensor], cfg: BenchConfig
) -> list[Variant]:
    """The dense DiT and one factorised copy per (method, budget)."""
    variants = [Variant("dense", "DiT, dense (baseline)", None, None, dit)]
    for method in cfg.methods:
        for budget in cfg.budgets:
            plan, specs = plan_factorization(
                dit, names, budget=budget, second_moments=moments if method == "asvd" else None
            )
            model = apply_plan(dit, plan, specs)
            variants.append(
                Variant(
                    f"{method}@{budget}",
                    f"DiT, {METHODS[method]}, {budget:.0%} of the layers' multiply-adds",
                    method,
                    budget,
                    model,
                    plan.params_kept(dit),
                    plan.ranks,
                    plan.dense,
                )
            )
    return variants


def measure(variants: list[Variant], names: list[str], cfg: BenchConfig, progress: bool) -> None:
    """Fill ``values``/``spread`` of every variant: cost, deviation, latency, quality."""
    from tqdm.auto import tqdm

    from reference.harness import (
        compare_latency,
        count_flops,
        count_parameters,
        frechet_digits_distance,
        trajectory_deviation,
    )

    dense = variants[0].model
    lat_batch = eval_batch(cfg.latency_batch, seed=11)
    layer_inputs = record_inputs(dense, names, lambda m: _forward(m, lat_batch)())
    dev_batch = eval_batch(min(cfg.n_eval, 256), seed=7)
    ref_eps = _forward(dense, dev_batch)()
    one = tuple(t[:1] for t in dev_batch)
    sampler = _sampler(cfg.n_eval, cfg.steps, seed=0)
    bar = tqdm(total=len(variants) + 2, desc="low-rank", disable=not progress)
    ref_samples = None
    for v in variants:
        v.values["gflops"] = count_flops(_forward(v.model, one)) / 1e9
        v.values["params_m"] = count_parameters(v.model) / 1e6
        v.values["kept"] = v.kept
        v.values["nfe"] = cfg.steps
        v.values["eps_rel_error"] = relative_error(_forward(v.model, dev_batch)(), ref_eps)
        samples = sampler(v.model)
        ref_samples = samples if ref_samples is None else ref_samples
        v.values["fd_digits"] = frechet_digits_distance(samples)
        v.values["mse_vs_baseline"] = trajectory_deviation(samples, ref_samples)["mse"]
        bar.update()
    whole = compare_latency(
        {v.key: _forward(v.model, lat_batch) for v in variants},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        threads=cfg.threads,
    )
    bar.update()
    layers = compare_latency(
        {v.key: _layers_call(v.model, layer_inputs, names) for v in variants},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
        threads=cfg.threads,
    )
    bar.update()
    bar.close()
    for v in variants:
        v.values["latency_ms"] = whole.median_ms(v.key)
        v.spread["latency_ms"] = whole.iqr_ms(v.key)
        v.values["speedup"] = whole.speedup[v.key]
        v.values["layers_ms"] = layers.median_ms(v.key)
        v.spread["layers_ms"] = layers.iqr_ms(v.key)
        v.values["layers_speedup"] = layers.speedup[v.key]


def full_rank_error(dit: nn.Module, names: list[str], moments: dict[str, torch.Tensor]) -> float:
    """Max abs difference between every layer and its full-rank factorisation (plain and
    activation-aware) on recorded DiT inputs."""
    inputs = record_inputs(dit, names, lambda m: _forward(m, eval_batch(8, seed=3))())
    worst = 0.0
    with torch.no_grad():
        for n in names:
            layer = dit.get_submodule(n)
            for c in (None, moments[n]):
                f = factorize_layer(layer, max_rank(layer), spectrum(layer, c))
                worst = max(worst, float((f(inputs[n]) - layer(inputs[n])).abs().max()))
    return worst


@dataclass
class LoRARun:
    """LoRA on one DiT layer: dense, unmerged adapter and merged layer."""

    layer: str
    rank: int
    mflops: dict[str, float]
    latency: dict[str, tuple[float, float]]
    max_diff: float


def lora_demo(dit: nn.Module, cfg: BenchConfig) -> LoRARun:
    """Train a rank-``cfg.lora_rank`` adapter towards a perturbed copy of a DiT layer, then
    show that merging it gives the same outputs at the dense layer's cost."""
    from reference.harness import compare_latency, count_flops

    name = "transformer_blocks.0.ff.net.0.proj"
    base = dit.get_submodule(name)
    target = copy.deepcopy(base)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():  # a "fine-tuned" target: a low-rank change of the weights
        u = torch.randn(base.out_features, 4, generator=gen)
        v = torch.randn(4, base.in_features, generator=gen)
        target.weight.add_(0.02 * u @ v)
    lora = train_lora_demo(base, target, cfg.lora_rank, steps=30 if cfg is QUICK else 300)
    merged = lora.merged()
    x = record_inputs(dit, [name], lambda m: _forward(m, eval_batch(cfg.latency_batch, 11))())[name]
    with torch.no_grad():
        diff = float((merged(x) - lora(x)).abs().max())
    mods = {"dense": base, "adapter": lora, "merged": merged}
    flops = {k: count_flops(lambda m=m: m(x)) / 1e6 for k, m in mods.items()}

    def call(m: nn.Module) -> Callable[[], None]:
        def run() -> None:
            with torch.inference_mode():
                m(x)

        return run

    lat = compare_latency(
        {k: call(m) for k, m in mods.items()},
        repeats=max(cfg.repeats, 5) * 5,
        warmup=cfg.warmup,
        threads=cfg.threads,
    )
    return LoRARun(
        name,
        cfg.lora_rank,
        flops,
        {k: (lat.median_ms(k), lat.iqr_ms(k)) for k in mods},
        diff,
    )


CURVE_LAYERS = ("transformer_blocks.1.attn1.to_q", "transformer_blocks.1.ff.net.0.proj")


def error_at_break_even(dit: nn.Module, moments: dict[str, torch.Tensor]) -> dict[str, float]:
    """Relative output error at the break-even rank of the two example layers, per method."""
    out = {}
    for n in CURVE_LAYERS:
        layer = dit.get_submodule(n)
        r = break_even_rank(layer)
        for method, c in (("svd", None), ("asvd", moments[n])):
            errs = output_error_curve(layer, moments[n], spectrum(layer, c))
            out[f"{n.split('.', 2)[2]} ({METHODS[method]}, r={r})"] = errs[r - 1]
    return out


def _figures(
    dit: nn.Module,
    moments: dict[str, torch.Tensor],
    variants: list[Variant],
    cfg: BenchConfig,
    out: Path,
) -> list[str]:
    from reference.harness import curve_plot

    names = list(CURVE_LAYERS)
    series: dict[str, list[float]] = {}
    ranks = list(range(1, 97))
    for n in names:
        layer = dit.get_submodule(n)
        short = n.split(".", 2)[2]
        for method, c in (("svd", None), ("asvd", moments[n])):
            errs = output_error_curve(layer, moments[n], spectrum(layer, c))
            series[f"{short}: {METHODS[method]}"] = errs[: len(ranks)]
    files = [f"{SLUG}-error-vs-rank.png", f"{SLUG}-budget.png"]
    curve_plot(
        ranks,
        series,
        out / files[0],
        xlabel="rank r",
        ylabel="relative output error on calibration inputs",
        title="DiT block 1: error against rank (break-even ranks "
        + ", ".join(str(break_even_rank(dit.get_submodule(n))) for n in names)
        + ")",
        logy=True,
    )
    by_budget: dict[str, list[float]] = {}
    budgets = sorted(cfg.budgets)
    for m in cfg.methods:
        rows = {v.budget: v for v in variants if v.method == m}
        by_budget[f"{METHODS[m]}: FDD / dense FDD"] = [
            rows[b].values["fd_digits"] / variants[0].values["fd_digits"] for b in budgets
        ]
        by_budget[f"{METHODS[m]}: layer speedup"] = [
            rows[b].values["layers_speedup"] for b in budgets
        ]
        by_budget[f"{METHODS[m]}: whole-model speedup"] = [
            rows[b].values["speedup"] for b in budgets
        ]
    curve_plot(
        budgets,
        by_budget,
        out / files[1],
        xlabel="budget: fraction of the factorised layers' multiply-adds kept",
        ylabel="ratio",
        title="Low-rank DiT: quality and measured speedup against budget",
        logy=True,
        hlines={"1.0": 1.0},
    )
    return files


def _rows(variants: list[Variant], control: Variant, lora: LoRARun) -> list[Any]:
    from reference.harness import Row

    rows = []
    for v in variants:
        role = "baseline" if v.method is None else "technique"
        rows.append(Row(v.name, role, dict(v.values), dict(v.spread)))
    rows.append(Row(control.name, "control", dict(control.values), dict(control.spread)))
    for key, label in (
        ("dense", f"LoRA demo ({lora.layer.split('.', 2)[2]}, block 0): dense layer"),
        ("adapter", f"LoRA demo: rank-{lora.rank} adapter, unmerged"),
        ("merged", "LoRA demo: adapter merged into W (W + B A)"),
    ):
        ms, iqr = lora.latency[key]
        values = {"lora_mflops": lora.mflops[key], "lora_layer_ms": ms}
        if key == "merged":
            values["max_abs_diff"] = lora.max_diff
        rows.append(Row(label, "reference", values, {"lora_layer_ms": iqr}))
    return rows


def _metric_specs() -> dict[str, Any]:
    from reference.harness import MetricSpec, metrics

    return metrics(
        "fd_digits",
        "gflops",
        "params_m",
        "mse_vs_baseline",
        "nfe",
        latency_ms=MetricSpec(
            "Latency of one forward (the same dense model in the control)", "ms", "lower"
        ),
        speedup=MetricSpec("Whole-model speedup (one forward)", "x", "higher"),
        layers_ms=MetricSpec("Factorised layers only", "ms", "lower"),
        layers_speedup=MetricSpec("Speedup of the factorised layers", "x", "higher"),
        kept=MetricSpec("Multiply-adds kept in the factorised layers", "", "lower"),
        eps_rel_error=MetricSpec("Relative error of the predicted noise", "", "lower"),
        lora_mflops=MetricSpec("LoRA demo: layer compute", "MFLOP", "lower"),
        lora_layer_ms=MetricSpec("LoRA demo: layer latency", "ms", "lower"),
        max_abs_diff=MetricSpec("Max abs difference merged vs adapter", "", "lower"),
    )


def run_control(dense: nn.Module, steps: int, cfg: BenchConfig, baseline: Variant) -> Variant:
    """The dense DiT with fewer DDIM steps: the same wall time spent the plain way."""
    from reference.harness import frechet_digits_distance

    samples = _sampler(cfg.n_eval, steps, seed=0)(dense)
    return Variant(
        "control",
        f"DiT, dense, DDIM {steps} steps (about the technique's sampling time)",
        None,
        None,
        dense,
        values={
            "fd_digits": frechet_digits_distance(samples),
            "nfe": steps,
            "latency_ms": baseline.values["latency_ms"],
            "gflops": baseline.values["gflops"],
            "params_m": baseline.values["params_m"],
        },
    )


def run_all(
    cfg: BenchConfig, progress: bool = True
) -> tuple[list[Variant], Variant, LoRARun, float, dict[str, torch.Tensor], nn.Module]:
    """Every measurement of the benchmark."""
    from reference import zoo

    cfg.validate()
    dit = zoo.load_dit()
    names = dit_target_layers(dit)
    moments = calibrate_second_moments(dit, names, _sampler(cfg.calib_n, cfg.calib_steps, seed=1))
    variants = build_variants(dit, names, moments, cfg)
    measure(variants, names, cfg, progress)
    head = next(v for v in variants if (v.method, v.budget) == cfg.headline)
    control_steps = max(1, round(cfg.steps / max(head.values["speedup"], 1e-9)))
    control = run_control(dit, control_steps, cfg, variants[0])
    return (
        variants,
        control,
        lora_demo(dit, cfg),
        full_rank_error(dit, names, moments),
        moments,
        dit,
    )


def benchmark(quick: bool = False, cfg: BenchConfig | None = None) -> Any:
    """Measure low-rank inference on the zoo DiT (harness protocol); a ``BenchmarkResult``."""
    from reference.harness import BenchmarkResult, Headline, aim, fdd_floor, output_dir, provenance

    cfg = cfg or (QUICK if quick else BenchConfig())
    load_at_start = round(os.getloadavg()[0], 2)
    variants, control, lora, full_err, moments, dit = run_all(cfg)
    dense = variants[0]
    head = next(v for v in variants if (v.method, v.budget) == cfg.headline)
    figures = _figures(dit, moments, variants, cfg, output_dir(quick))
    q_ratio = head.values["fd_digits"] / dense.values["fd_digits"]
    flop_limit = dense.values["gflops"] / head.values["gflops"]
    method, budget = cfg.headline
    notes = [
        f"Measured on a shared 2-core CPU, {cfg.threads} torch threads; latencies are medians of "
        f"{cfg.repeats} interleaved rounds. Whole-model latency: one DiT forward at batch "
        f"{cfg.latency_batch}; 'factorised layers only': the "
        f"{len(dit_target_layers(dit))} token-wise Linear layers run alone on inputs recorded "
        "from that forward.",
        f"Quality: FDD of {cfg.n_eval} class-conditional samples, DDIM {cfg.steps} steps, the "
        f"same noise for every row (FDD floor at this n: {fdd_floor(cfg.n_eval):.2f}). "
        "Activation-aware SVD is calibrated on the inputs seen during "
        f"{cfg.calib_n} other samples x {cfg.calib_steps} DDIM steps.",
        f"Headline: {METHODS[method]} at {budget:.0%} of the factorised layers' multiply-adds; "
        f"whole-model speedup {head.values['speedup']:.2f}x against a FLOP-ratio limit of "
        f"{flop_limit:.2f}x; the factorised layers alone run "
        f"{head.values['layers_speedup']:.2f}x faster (their multiply-add ratio is "
        f"{1 / head.kept:.2f}x). Attention, normalisation, conditioning and Python overhead are "
        "untouched, which is why the whole model gains less (Amdahl).",
        f"Full-rank factorisations reproduce every layer to {full_err:.1e} (max abs difference).",
        f"LoRA (training-time low rank): the merged layer W + (alpha/r) B A equals the adapter's "
        f"output to {lora.max_diff:.1e} and costs exactly the dense layer's "
        f"{lora.mflops['merged']:.2f} MFLOP; unmerged, the adapter adds "
        f"{lora.mflops['adapter'] - lora.mflops['dense']:.2f} MFLOP per call.",
    ]
    layer_speed = head.values["layers_speedup"]
    aims = [
        aim(
            f">= 1.5x measured speedup of the factorised layers ({METHODS[method]}, "
            f"budget {budget:.0%})",
            layer_speed,
            1.5,
            ">=",
        ),
        aim("quality within 1.2x of the dense DiT (FDD ratio)", q_ratio, 1.2, "<="),
        aim("full rank reproduces every layer (max abs diff <= 1e-5)", full_err, 1e-5, "<="),
        aim(
            "merged LoRA equals the adapter forward (max abs diff <= 1e-5)",
            lora.max_diff,
            1e-5,
            "<=",
        ),
    ]
    be = error_at_break_even(dit, moments)
    notes.append(
        "The trained DiT's weights are far from low rank: at the break-even rank (where the "
        "factor pair costs as much as the dense layer) the relative output error is still "
        + ", ".join(f"{v:.1%} for {k}" for k, v in be.items())
        + "."
    )
    notes.append(
        f"Matched-time control: the dense DiT with {control.values['nfe']:.0f} DDIM steps "
        f"reaches FDD {control.values['fd_digits']:.2f}, against "
        f"{head.values['fd_digits']:.2f} for the low-rank DiT at {cfg.steps} steps: on this "
        "model, spending the saved time on fewer denoising steps is "
        + (
            "the better trade."
            if control.values["fd_digits"] < head.values["fd_digits"]
            else "the worse trade."
        )
    )
    if layer_speed < 1.5:
        notes.append(
            f"Layer speedup aim not met: {layer_speed:.2f}x against a multiply-add ratio of "
            f"{1 / head.kept:.2f}x; two thin matrix multiplications per layer on 64-token, "
            "96-wide activations are overhead- and bandwidth-bound on this CPU."
        )
    if q_ratio > 1.2:
        notes.append(f"Quality aim not met: FDD ratio {q_ratio:.2f} at this budget.")
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Truncated-SVD factorisation of the zoo DiT's Linear layers (plain vs "
        "activation-aware), with LoRA merging for contrast",
        quick=quick,
        settings={
            "budgets": list(cfg.budgets),
            "methods": list(cfg.methods),
            "headline": f"{method}@{budget}",
            "n_eval": cfg.n_eval,
            "steps": cfg.steps,
            "calibration": f"{cfg.calib_n} samples x {cfg.calib_steps} steps",
            "latency_batch": cfg.latency_batch,
            "repeats": cfg.repeats,
            "threads": cfg.threads,
            "load_average_1min_at_start": load_at_start,
            "ranks": {v.key: v.ranks for v in variants if v.method},
        },
        metrics=_metric_specs(),
        rows=_rows(variants, control, lora),
        headline=Headline(
            speedup=head.values["speedup"],
            speedup_limit=flop_limit,
            memory_ratio=head.values["params_m"] / dense.values["params_m"],
            quality_ratio=q_ratio,
            quality_metric="fd_digits",
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance(SOURCES),
    )


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.low_rank_inference",
        description="Factorise the zoo DiT's Linear layers by truncated SVD (plain or "
        "activation-aware), measure error, FLOPs, speed and sample quality; contrast with LoRA.",
    )
    p.add_argument(
        "--budget",
        type=float,
        nargs="+",
        default=None,
        help="fractions of the layers' multiply-adds to keep (default demo: 0.5)",
    )
    p.add_argument(
        "--method", choices=sorted(METHODS), nargs="+", default=None, help="svd and/or asvd"
    )
    p.add_argument("--samples", type=int, default=None, help="samples for the FDD")
    p.add_argument("--steps", type=int, default=None, help="DDIM steps")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="demo output dir")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write the result")
    p.add_argument("--quick", action="store_true", help="with --bench: the small test setup")
    return p


def _config(args: argparse.Namespace) -> BenchConfig:
    if args.bench:
        base = QUICK if args.quick else BenchConfig()
    else:
        base = replace(BenchConfig(), budgets=(0.5,), n_eval=100, steps=10, calib_n=32, repeats=5)
    budgets = tuple(args.budget) if args.budget else base.budgets
    methods = tuple(args.method) if args.method else base.methods
    head_budget = base.headline[1] if base.headline[1] in budgets else budgets[0]
    head_method = base.headline[0] if base.headline[0] in methods else methods[0]
    cfg = replace(
        base,
        budgets=budgets,
        methods=methods,
        headline=(head_method, head_budget),
        n_eval=args.samples if args.samples is not None else base.n_eval,
        steps=args.steps if args.steps is not None else base.steps,
        threads=args.threads,
    )
    if args.threads < 1:
        raise ValueError(f"threads must be >= 1, got {args.threads}")
    cfg.validate()
    return cfg


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
        variants, control, lora, full_err, moments, dit = run_all(cfg)
        print(
            f"{'configuration':58} {'kept':>5} {'layers x':>8} {'model x':>7} "
            f"{'eps err':>8} {'FDD':>6}"
        )
        for v in [*variants, control]:
            val = v.values
            print(
                f"{v.name[:58]:58} {val.get('kept', 1.0):5.2f} "
                f"{val.get('layers_speedup', float('nan')):8.2f} "
                f"{val.get('speedup', float('nan')):7.2f} "
                f"{val.get('eps_rel_error', float('nan')):8.4f} {val['fd_digits']:6.2f}"
            )
        print(f"full rank reproduces every layer to {full_err:.1e}")
        print(f"LoRA merged vs adapter: max abs diff {lora.max_diff:.1e}; MFLOP {lora.mflops}")
        args.out.mkdir(parents=True, exist_ok=True)
        for name in _figures(dit, moments, variants, cfg, args.out):
            print(f"figure: {args.out / name}")
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")
