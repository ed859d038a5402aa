"""The measured models of the low-rank benchmark: the dense zoo DiT, its factorisations at each
(method, budget), the fewer-steps control at the headline's sampling FLOPs, the full-rank check
and the LoRA contrast. Quality over paired noise seeds; latency of whole DDIM samplings and of
the factorised layers alone."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .factorize import break_even_rank, factorize_layer, max_rank, output_error_curve, spectrum
from .lora import train_lora_demo
from .plan import LowRankConfig, apply_low_rank, record_inputs

CURVE_LAYERS = ("transformer_blocks.1.attn1.to_q", "transformer_blocks.1.ff.net.0.proj")
"""The two example layers of the error-against-rank figure (a 96 -> 96 and a 96 -> 384 one)."""
LORA_LAYER = "transformer_blocks.0.ff.net.0.proj"


def sampler(n: int, steps: int, seed: int) -> Callable[[nn.Module], torch.Tensor]:
    """``run(model)``: ``n`` class-conditional DDIM samples from fixed noise (calibration)."""

    def run(model: nn.Module) -> torch.Tensor:
        return seeded_sampler(model, n, steps)(seed)

    return run


def seeded_sampler(model: nn.Module, n: int, steps: int) -> Callable[[int], torch.Tensor]:
    """``run(seed)``: ``n`` class-conditional DDIM samples of ``model`` in ``steps`` steps from
    ``make_noise(n, seed)`` (the same noise and labels for every model: paired seeds)."""
    from reference import zoo
    from reference.harness import class_labels, make_noise, model_eps_fn, sample

    labels = class_labels(n)

    def run(seed: int) -> torch.Tensor:
        return sample(
            model_eps_fn(model),
            zoo.teacher_scheduler(),
            make_noise(n, seed),
            steps=steps,
            labels=labels,
        )

    return run


def eval_batch(n: int, seed: int = 7) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x_t, t, labels)``: test digits noised at random timesteps (for output deviation)."""
    from reference.data import load_digits_tensors
    from reference.zoo.specs import noise_scheduler

    x0, y = load_digits_tensors("test")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(x0), (n,), generator=gen)
    t = torch.randint(0, 1000, (n,), generator=gen)
    x_t = noise_scheduler().add_noise(x0[idx], torch.randn(x0[idx].shape, generator=gen), t)
    return x_t, t, y[idx]


def forward(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> Callable[[], torch.Tensor]:
    """One denoiser forward on ``batch`` (the timed unit of the whole-model latency)."""
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


@dataclass
class Variant:
    """One measured model: dense, or a factorisation (method, budget)."""

    key: str
    config: dict[str, Any]
    role: str
    model: nn.Module
    steps: int
    kept: float = 1.0
    ranks: dict[str, int] = field(default_factory=dict)
    values: dict[str, float | None] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)


def build_variants(
    dit: nn.Module, names: list[str], moments: dict[str, torch.Tensor], cfg: Any
) -> list[Variant]:
    """The dense DiT and one factorised copy per (method, budget) of ``cfg``."""
    out = [
        Variant("dense", {"method": "dit-dense", "steps": cfg.steps}, "baseline", dit, cfg.steps)
    ]
    for method in cfg.methods:
        for budget in cfg.budgets:
            lr = LowRankConfig(tuple(names), budget=budget, method=method)
            model, plan = apply_low_rank(dit, lr, moments)
            config = {"method": method, "budget": budget, "steps": cfg.steps}
            out.append(
                Variant(
                    f"{method}-{budget}",
                    config,
                    "technique",
                    model,
                    cfg.steps,
                    plan.params_kept(dit),
                    dict(plan.ranks),
                )
            )
    return out


def control_steps(steps: int, flops_ratio: float) -> int:
    """DDIM steps of the dense DiT that cost the FLOPs of ``steps`` steps of a model with
    ``flops_ratio`` of its FLOPs per forward:

        k = max(1, round(steps · F_low-rank / F_dense))                            (1)
    """
    return max(1, round(steps * flops_ratio))  # (1)


def add_control(variants: list[Variant], head: Variant) -> Variant:
    """Append the matched-cost control: the dense DiT with (1) DDIM steps, so that it spends
    ``head``'s sampling FLOPs the plain way (fewer steps of the dense model)."""
    dense = variants[0]
    k = control_steps(head.steps, float(head.values["gflops"]) / float(dense.values["gflops"]))
    control = Variant(
        "control", {"method": "dit-fewer-steps", "steps": k}, "control", dense.model, k
    )
    control.values.update(gflops=dense.values["gflops"], params_m=dense.values["params_m"], nfe=k)
    variants.append(control)
    return control


def fill_costs(variants: list[Variant], cfg: Any) -> None:
    """FLOPs and parameters of one forward, the kept share of multiply-adds, NFE and the
    relative error of the predicted noise on noised test digits (one fixed batch)."""
    from reference.harness import count_flops, count_parameters

    dev_batch = eval_batch(min(cfg.n_eval, 256), seed=7)
    ref_eps = forward(variants[0].model, dev_batch)()
    one = tuple(t[:1] for t in dev_batch)
    for v in variants:
        v.values["gflops"] = count_flops(forward(v.model, one)) / 1e9
        v.values["params_m"] = count_parameters(v.model) / 1e6
        v.values["kept"] = v.kept
        v.values["nfe"] = v.steps
        v.values["eps_rel_error"] = relative_error(forward(v.model, dev_batch)(), ref_eps)


QUALITY = ("fd_digits", "kid_digits", "accuracy")


def measure_quality(variants: list[Variant], cfg: Any) -> Any:
    """FDD, KID, accuracy and MSE against the dense DiT's samples of the same seed, for every
    variant over ``cfg.seeds`` (paired); the means also go into ``values`` (for the figures).
    Returns the ``SeedTable``."""
    from reference.harness import class_labels, over_seeds, quality_report, trajectory_deviation

    labels = class_labels(cfg.n_eval)

    def report(key: str, x: torch.Tensor, same: Any) -> dict[str, float]:
        q = quality_report(x, labels)
        mse = trajectory_deviation(x, same["dense"])["mse"]
        return {**{m: q[m] for m in QUALITY}, "mse_vs_baseline": mse}

    samplers = {v.key: seeded_sampler(v.model, cfg.n_eval, v.steps) for v in variants}
    table = over_seeds(samplers, report, cfg.seeds, desc="low-rank: quality seeds")
    for v in variants:
        v.values.update(table.row_fields(v.key)[0])
    return table


def _timed(lat: Any, variants: Sequence[Variant], prefix: str) -> None:
    ms = "layers_ms" if prefix else "latency_ms"
    for i, v in enumerate(variants):
        v.values[ms] = lat.median_ms(v.key)
        v.spread[ms] = lat.iqr_ms(v.key)
        v.values[prefix + "speedup"] = lat.speedup[v.key]
        if i:
            v.intervals[prefix + "speedup"] = lat.speedup_interval(v.key)


def _sampling(v: Variant, batch: int) -> Callable[[], torch.Tensor]:
    """One whole DDIM sampling of ``batch`` digits by ``v`` (the timed unit; seed 99 is no
    quality seed)."""
    run = seeded_sampler(v.model, batch, v.steps)
    return lambda: run(99)


def measure_latency(variants: list[Variant], names: list[str], cfg: Any) -> tuple[Any, Any]:
    """Two interleaved comparisons: one whole DDIM sampling of ``cfg.latency_batch`` digits per
    variant (the control included), and the factorised layers alone on inputs recorded from a
    dense forward (the control has the dense layers and is left out)."""
    from reference.harness import compare_latency

    dense = variants[0].model
    lat_batch = eval_batch(cfg.latency_batch, seed=11)
    layer_inputs = record_inputs(dense, names, lambda m: forward(m, lat_batch)())
    whole = compare_latency(
        {v.key: _sampling(v, cfg.latency_batch) for v in variants},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
    )
    _timed(whole, variants, "")
    models = [v for v in variants if v.role != "control"]
    layers = compare_latency(
        {v.key: _layers_call(v.model, layer_inputs, names) for v in models},
        repeats=cfg.repeats,
        warmup=cfg.warmup,
    )
    _timed(layers, models, "layers_")
    return whole, layers


def full_rank_error(dit: nn.Module, names: list[str], moments: dict[str, torch.Tensor]) -> float:
    """Max abs difference between every layer and its full-rank factorisation (plain and
    activation-aware) on recorded DiT inputs."""
    inputs = record_inputs(dit, names, lambda m: forward(m, eval_batch(8, seed=3))())
    worst = 0.0
    with torch.no_grad():
        for n in names:
            layer = dit.get_submodule(n)
            for c in (None, moments[n]):
                f = factorize_layer(layer, max_rank(layer), spectrum(layer, c))
                worst = max(worst, float((f(inputs[n]) - layer(inputs[n])).abs().max()))
    return worst


def error_at_break_even(dit: nn.Module, moments: dict[str, torch.Tensor]) -> dict[str, float]:
    """Relative output error at the break-even rank of the two example layers, per method:
    ``{"q_rank", "q_svd", "q_asvd", "ff_rank", "ff_svd", "ff_asvd"}`` (errors in percent)."""
    out: dict[str, float] = {}
    for short, n in zip(("q", "ff"), CURVE_LAYERS, strict=True):
        layer = dit.get_submodule(n)
        r = break_even_rank(layer)
        out[f"{short}_rank"] = r
        for method, c in (("svd", None), ("asvd", moments[n])):
            out[f"{short}_{method}"] = (
                100 * output_error_curve(layer, moments[n], spectrum(layer, c))[r - 1]
            )
    return out


@dataclass
class LoRARun:
    """LoRA on one DiT layer: dense, unmerged adapter and merged layer."""

    rank: int
    gflops: dict[str, float]
    latency: Any
    max_diff: float


def lora_demo(dit: nn.Module, cfg: Any) -> LoRARun:
    """Train a rank-``cfg.lora_rank`` adapter towards a perturbed copy of a DiT layer, then
    show that merging it gives the same outputs at the dense layer's cost."""
    from reference.harness import compare_latency, count_flops

    base = dit.get_submodule(LORA_LAYER)
    target = copy.deepcopy(base)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():  # a "fine-tuned" target: a low-rank change of the weights
        u = torch.randn(base.out_features, 4, generator=gen)
        v = torch.randn(4, base.in_features, generator=gen)
        target.weight.add_(0.02 * u @ v)
    lora = train_lora_demo(base, target, cfg.lora_rank, steps=cfg.lora_steps)
    merged = lora.merged()
    x = record_inputs(dit, [LORA_LAYER], lambda m: forward(m, eval_batch(cfg.latency_batch, 11))())
    x = x[LORA_LAYER]
    with torch.no_grad():
        diff = float((merged(x) - lora(x)).abs().max())
    mods = {"lora-dense": base, "lora-adapter": lora, "lora-merged": merged}
    flops = {k: count_flops(lambda m=m: m(x)) / 1e9 for k, m in mods.items()}

    def call(m: nn.Module) -> Callable[[], None]:
        def run() -> None:
            with torch.inference_mode():
                m(x)

        return run

    lat = compare_latency(
        {k: call(m) for k, m in mods.items()}, repeats=max(cfg.repeats, 5) * 5, warmup=cfg.warmup
    )
    return LoRARun(cfg.lora_rank, flops, lat, diff)
