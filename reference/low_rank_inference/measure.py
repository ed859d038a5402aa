"""The models and the seed-independent measurements of the low-rank benchmark.

The benchmark (`reference.low_rank_inference.bench`) declares three comparisons; this module
builds what they compare and counts what does not vary with the seed:

* the dense zoo DiT, its factorisations at each (method, budget), and the fewer-steps control
  at the headline's sampling FLOPs (`Model`, `models`, `add_control`);
* per model, one forward's FLOPs and parameters, the kept share of the factorised layers'
  multiply-adds and the relative error of the predicted noise (`fill_facts`);
* the inputs the factorised layers see in a dense forward, for timing them alone
  (`layer_inputs`, `layers_call`);
* the error-against-rank curves of two example layers (`error_curves`), the full-rank check
  (`full_rank_error`) and the LoRA contrast (`lora_contrast`).

Every sampler solves the clipped ODE of `reference.harness.ode` (DDIM on the trailing grid), from
`make_noise(n, seed)` with the balanced labels `class_labels(n)`: every model starts from the
same noise on every seed (paired seeds).

Math
====
The fewer-steps control spends the headline's sampling FLOPs on the dense model:

    k = max(1, round(S · F_low-rank / F_dense))                                      (1)

for ``S`` steps of a model with ``F_low-rank`` FLOPs per forward. The relative error of the
predicted noise on a fixed batch of noised test digits (seed-independent, a fact of the row):

    e = ‖ε_low-rank − ε_dense‖ / ‖ε_dense‖                                           (2)

and a layer's relative output error on the calibration inputs at rank ``r``
(`reference.low_rank_inference.factorize.output_error_curve`), with ``C = E[x xᵀ]``:

    err(r) = sqrt(tr(D C Dᵀ) / tr(W C Wᵀ)),  D = W − W_r                             (3)

Pitfalls
========
* Calibration draws its own noise (`CALIBRATION_SEED`), apart from the quality seeds: noise
  sets nest (`make_noise(k, s)` is the start of `make_noise(n, s)`), so calibrating on a
  quality seed's noise would fit activation-aware SVD to the very trajectories it is scored on.
* (3) is 0 at full rank; the curves stop one rank short of it so that a log axis can show them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .factorize import factorize_layer, max_rank, output_error_curve, spectrum
from .lora import train_lora_demo
from .plan import LowRankConfig, apply_low_rank, record_inputs

CURVE_LAYERS = ("transformer_blocks.1.attn1.to_q", "transformer_blocks.1.ff.net.0.proj")
"""The two example layers of the error-against-rank curves (a 96 -> 96 and a 96 -> 384 one)."""
CURVE_NAMES = ("q", "ff")
"""Their short names in the ``break-even-error`` note."""
LORA_LAYER = "transformer_blocks.0.ff.net.0.proj"
CALIBRATION_SEED = 2000
"""Noise of the calibration samples (no quality seed, no latency batch)."""
EPS_SEED, INPUT_SEED, FULL_RANK_SEED, LORA_SEED = 7, 11, 3, 5
"""Noised test digits of (2), of the recorded layer inputs, of the full-rank check; the LoRA
target's perturbation."""


def sampler(model: nn.Module, n: int, steps: int, seed: int) -> Callable[[], torch.Tensor]:
    """``run()``: ``n`` class-conditional samples of ``model``, DDIM in ``steps`` steps on the
    clipped ODE, from ``make_noise(n, seed)``."""
    from reference.harness import class_labels, make_noise, model_eps_fn
    from reference.harness.ode import solve

    eps, noise, labels = model_eps_fn(model), make_noise(n, seed), class_labels(n)
    return lambda: solve(eps, noise, steps=steps, labels=labels)


def calibration(n: int, steps: int) -> Callable[[nn.Module], torch.Tensor]:
    """``run(model)``: the calibration sampling whose layer inputs activation-aware SVD sees."""
    return lambda model: sampler(model, n, steps, CALIBRATION_SEED)()


def eval_batch(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x_t, t, labels)``: ``n`` test digits noised at random timesteps."""
    from reference.data import load_digits_tensors
    from reference.zoo.specs import noise_scheduler

    x0, y = load_digits_tensors("test")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(x0), (n,), generator=gen)
    t = torch.randint(0, 1000, (n,), generator=gen)
    x_t = noise_scheduler().add_noise(x0[idx], torch.randn(x0[idx].shape, generator=gen), t)
    return x_t, t, y[idx]


def forward(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> Callable[[], torch.Tensor]:
    """One denoiser forward on ``batch``."""
    x, t, y = batch

    def run() -> torch.Tensor:
        with torch.inference_mode():
            return model(x, t, class_labels=y, return_dict=False)[0]

    return run


@dataclass
class Model:
    """One model under comparison: the dense DiT, a factorisation, or the control."""

    key: str
    config: dict[str, Any]
    role: str
    model: nn.Module
    steps: int
    kept: float = 1.0
    ranks: dict[str, int] = field(default_factory=dict)
    facts: dict[str, float] = field(default_factory=dict)


def models(
    dit: nn.Module, names: list[str], moments: dict[str, torch.Tensor], cfg: Any
) -> list[Model]:
    """The dense DiT and one factorised copy per (method, budget) of ``cfg``."""
    out = [Model("dense", {"method": "dit-dense", "steps": cfg.steps}, "baseline", dit, cfg.steps)]
    for method in cfg.methods:
        for budget in cfg.budgets:
            lr = LowRankConfig(tuple(names), budget=budget, method=method)
            model, plan = apply_low_rank(dit, lr, moments)
            config = {"method": method, "budget": budget, "steps": cfg.steps}
            key = f"{method}-{budget}"
            kept = plan.params_kept(dit)
            out.append(Model(key, config, "technique", model, cfg.steps, kept, dict(plan.ranks)))
    return out


def control_steps(steps: int, flops_ratio: float) -> int:
    """(1): dense DDIM steps that cost ``steps`` steps at ``flops_ratio`` of its FLOPs."""
    return max(1, round(steps * flops_ratio))  # (1)


def add_control(all_models: list[Model], head: Model) -> Model:
    """Append the matched-cost control: the dense DiT with (1) steps, ``head``'s sampling
    FLOPs spent the plain way."""
    dense = all_models[0]
    k = control_steps(head.steps, head.facts["gflops"] / dense.facts["gflops"])
    control = Model("control", {"method": "dit-fewer-steps", "steps": k}, "control", dense.model, k)
    control.facts = {**dense.facts, "nfe": k}
    all_models.append(control)
    return control


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """(2): ``‖a − b‖ / ‖b‖``."""
    return float((a - b).norm() / b.norm().clamp_min(1e-30))  # (2)


def fill_facts(all_models: Sequence[Model], n: int) -> None:
    """FLOPs and parameters of one forward, the kept share of multiply-adds, NFE and (2) on
    ``n`` noised test digits, for every model."""
    from reference.harness import count_flops, count_parameters

    batch = eval_batch(n, EPS_SEED)
    ref_eps = forward(all_models[0].model, batch)()
    one = tuple(t[:1] for t in batch)
    for m in all_models:
        m.facts = {
            "gflops": count_flops(forward(m.model, one)) / 1e9,
            "params_m": count_parameters(m.model) / 1e6,
            "kept": m.kept,
            "nfe": m.steps,
            "eps_rel_error": relative_error(forward(m.model, batch)(), ref_eps),
        }


def layer_inputs(dit: nn.Module, names: Sequence[str], batch: int) -> dict[str, torch.Tensor]:
    """The inputs of the named layers in one dense forward on ``batch`` noised test digits."""
    return record_inputs(dit, names, lambda m: forward(m, eval_batch(batch, INPUT_SEED))())


def layers_call(
    model: nn.Module, inputs: dict[str, torch.Tensor], names: Sequence[str]
) -> Callable[[], None]:
    """Run only the named layers (dense or factorised) of ``model`` on recorded inputs."""
    layers = [(model.get_submodule(n), inputs[n]) for n in names]

    def run() -> None:
        for layer, x in layers:
            layer(x)

    return run


@torch.no_grad()
def full_rank_error(dit: nn.Module, names: list[str], moments: dict[str, torch.Tensor]) -> float:
    """Max abs difference between every layer and its full-rank factorisation (plain and
    activation-aware) on recorded DiT inputs."""
    inputs = record_inputs(dit, names, lambda m: forward(m, eval_batch(8, FULL_RANK_SEED))())
    worst = 0.0
    for n in names:
        layer = dit.get_submodule(n)
        for c in (None, moments[n]):
            f = factorize_layer(layer, max_rank(layer), spectrum(layer, c))
            worst = max(worst, float((f(inputs[n]) - layer(inputs[n])).abs().max()))
    return worst


def error_curves(dit: nn.Module, moments: dict[str, torch.Tensor]) -> dict[str, Any]:
    """(3) for ranks ``1 .. max − 1`` of the two example layers, plain and activation-aware:
    ``{"ranks", "series": ["q-svd", "q-asvd", "ff-svd", "ff-asvd"], "errors"}`` (fractions)."""
    series, errors = [], []
    top = min(max_rank(dit.get_submodule(n)) for n in CURVE_LAYERS) - 1
    for short, n in zip(CURVE_NAMES, CURVE_LAYERS, strict=True):
        layer = dit.get_submodule(n)
        for method, c in (("svd", None), ("asvd", moments[n])):
            series.append(f"{short}-{method}")
            errors.append(output_error_curve(layer, moments[n], spectrum(layer, c))[:top])  # (3)
    return {"ranks": list(range(1, top + 1)), "series": series, "errors": errors}


@dataclass
class LoRAContrast:
    """LoRA on one DiT layer: the dense layer, the unmerged adapter and the merged layer, their
    FLOPs per call on ``x``, and the largest difference of merged against adapter outputs."""

    rank: int
    layers: dict[str, nn.Module]
    x: torch.Tensor
    gflops: dict[str, float]
    max_diff: float


def lora_contrast(dit: nn.Module, rank: int, steps: int, batch: int) -> LoRAContrast:
    """Train a rank-``rank`` adapter towards a perturbed copy of a DiT layer (a stand-in for a
    fine-tuned target: a low-rank change of its weights), then merge it."""
    from reference.harness import count_flops

    base = dit.get_submodule(LORA_LAYER)
    target = copy.deepcopy(base)
    gen = torch.Generator().manual_seed(LORA_SEED)
    with torch.no_grad():
        u = torch.randn(base.out_features, 4, generator=gen)
        v = torch.randn(4, base.in_features, generator=gen)
        target.weight.add_(0.02 * u @ v)
    with torch.inference_mode(False), torch.enable_grad():
        lora = train_lora_demo(base, target, rank, steps=steps)
    merged = lora.merged()
    x = layer_inputs(dit, [LORA_LAYER], batch)[LORA_LAYER]
    with torch.no_grad():
        diff = float((merged(x) - lora(x)).abs().max())
    layers = {"lora-dense": base, "lora-adapter": lora, "lora-merged": merged}
    flops = {k: count_flops(lambda m=m: m(x)) / 1e9 for k, m in layers.items()}
    return LoRAContrast(rank, layers, x, flops, diff)
