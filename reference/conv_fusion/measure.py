"""The variants of the conv-fusion benchmark on the two BatchNorm networks, their fidelity to
the eager network, the rounding tolerance that fidelity is judged by, and the estimated limit.

Fidelity
========
Fusion changes no arithmetic of the function, only where it rounds, so its quality figure is the
deviation of the fused network's output ``y`` from the eager output ``y_e`` on the same input
(the eager call is the exact computation it replaces; a distribution distance such as FDD could
not see a wrong fold of one channel):

    rel_rms_to_eager = ‖y - y_e‖₂ / ‖y_e‖₂,   max_abs_diff = max_i |y_i - y_e,i|        (1)

A float32 dot product of length ``K`` has a relative forward error of at most
``γ_K = K u / (1 - K u) ≈ K u`` with the unit roundoff ``u = 2^-24`` (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., 2002, §3.1). A network of ``L`` convolution or linear
layers with at most ``K`` terms per output computes the eager and the fused output each within
about ``L K u`` of the exact one when its normalised layers do not amplify relative errors, so the
accepted deviation (1) is

    tolerance = L · K · u                                                                 (2)

(the BatchNorm arithmetic that folding removes adds a few ``u`` per layer, far below ``K u``). A
correct fold measures far below (2) (rounding errors of either sign cancel, about ``sqrt(K) u``
per layer); a wrong one (a channel's scale or bias missing) deviates by order 1.

The limit
=========
Folding removes the BatchNorm pass of each block and lets the ReLU run in place; the FLOPs of the
convolutions stay. Both sets of elementwise passes are timed alone on the activations the eager
network produces, in the same interleaved rounds as the networks (``T_unfused``: BatchNorm plus
out-of-place ReLU; ``T_fused``: in-place ReLU), and the speedup of a network taking ``T`` is
estimated to be at most

    limit = T / (T - (T_unfused - T_fused))                                               (3)

an estimate from isolated timings, not a bound: inside the network the removed passes also cost
cache misses of the next convolution, so a measured speedup may exceed it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from reference.harness import sizes
from reference.harness.compare import Variant

from .denoiser import batchnorm_pass, make_toy_denoiser, noisy_digits, relu_passes
from .denoiser import traffic_estimate as _traffic
from .fold import fuse_conv_bn_relu

NETWORKS = ("classifier", "denoiser")
FIDELITY = "rel_rms_to_eager"
UNIT_ROUNDOFF = 2.0**-24
"""``u`` of IEEE float32 (round to nearest), (2)."""
COMPILED = (
    ("compile", "control", False),
    ("compile-fused", "technique", False),
    ("compile-freezing", "control", True),
)

Run = Callable[[], Any]


def rounding_tolerance(model: nn.Module) -> float:
    """(2): layers times the longest dot product times ``u``."""
    layers = [m for m in model.modules() if isinstance(m, nn.Conv1d | nn.Conv2d | nn.Linear)]
    k = max(m.weight[0].numel() for m in layers)  # in_channels / groups * kernel, or in_features
    return len(layers) * k * UNIT_ROUNDOFF  # (2)


def deviation(y: torch.Tensor, eager: torch.Tensor) -> dict[str, float]:
    """(1): relative RMS and max-abs deviation of ``y`` from the eager output."""
    diff = (y.double() - eager.double()).flatten()
    scale = eager.double().norm().clamp_min(1e-300)
    return {FIDELITY: float(diff.norm() / scale), "max_abs_diff": float(diff.abs().max())}  # (1)


def fidelity_to(eager_id: str) -> Callable[[torch.Tensor, Any], dict[str, float]]:
    """A variant's ``score``: (1) against the eager variant's output of the same seed."""
    return lambda y, same_seed: deviation(y, same_seed[eager_id])


def with_fidelity(variants: list[Variant]) -> list[Variant]:
    """Every sampled variant scored by (1) against the eager variant it is timed against."""

    def scored(v: Variant) -> Variant:
        if v.sample is None or v.against is None:
            return v  # timed only: nothing to score
        return dataclasses.replace(v, score=fidelity_to(v.against))

    return [scored(v) for v in variants]


def inputs(network: str, batch: int, seed: int) -> torch.Tensor:
    """``batch`` inputs drawn with ``seed``: held-out test digits for the classifier, noisy
    training digits for the denoiser."""
    if network == "classifier":
        from reference.data import load_digits_tensors

        x = load_digits_tensors("test")[0]
        gen = torch.Generator().manual_seed(seed)
        return x[torch.randint(len(x), (batch,), generator=gen)]
    return noisy_digits(batch, seed=seed)


def networks(cfg: Any) -> dict[str, nn.Module]:
    """The zoo classifier and the toy BN denoiser, eval mode."""
    from reference import zoo

    return {
        "classifier": zoo.load_classifier().eval(),
        "denoiser": make_toy_denoiser(cfg.width, cfg.depth),
    }


def _timed(fn: Callable[[torch.Tensor], Any], x: torch.Tensor) -> Run:
    return lambda: fn(x)


def _sampled(fn: Callable[[torch.Tensor], Any], network: str, batch: int) -> Any:
    def sample(seed: int) -> torch.Tensor:
        with torch.inference_mode():
            return fn(inputs(network, batch, seed))

    return sample


def _elementwise(model: nn.Module, x: torch.Tensor) -> tuple[Run, Run]:
    """``(T_unfused, T_fused)`` of (3): BatchNorm + out-of-place ReLU, and in-place ReLU, on
    the activations of ``model(x)``."""
    bn = batchnorm_pass(model, x)
    relu_out, relu_in = relu_passes(model, x)

    def unfused() -> None:
        bn()
        relu_out()

    return unfused, relu_in


def sweep_variants(network: str, model: nn.Module, batch: int) -> list[Variant]:
    """Eager (the batch's baseline), BN folded with the ReLU left alone, fx-fused, and the two
    elementwise passes of (3), all timed against the eager network of this batch."""
    from reference.harness import count_flops

    key, x = f"{network}-b{batch}", inputs(network, batch, sizes.LATENCY_SEED)
    eager = f"{key}-eager"
    with torch.inference_mode():
        gflops = count_flops(model, x) / batch / 1e9
    traffic = _traffic(model, x)
    before = {"gflops": gflops, "elementwise_mb": traffic.before_bytes / 1e6}
    after = {"gflops": gflops, "elementwise_mb": traffic.after_bytes / 1e6}
    unfused, kept = _elementwise(model, x)

    def variant(part: str, role: str, timed: Run, net: nn.Module | None = None) -> Variant:
        sample = None if net is None else _sampled(net, network, batch)
        facts = {} if net is None else before if part == "eager" else after
        config = {"method": f"{network}-{part}", "batch": batch}
        return Variant(f"{key}-{part}", config, role, sample, timed, facts, eager)  # type: ignore[arg-type]

    fold = fuse_conv_bn_relu(model, fuse_relu=False)[0]
    fused = fuse_conv_bn_relu(model)[0]
    return [
        variant("eager", "baseline", _timed(model, x), model),
        variant("fold", "technique", _timed(fold, x), fold),
        variant("fused", "technique", _timed(fused, x), fused),
        variant("elementwise", "reference", unfused),
        variant("elementwise-fused", "reference", kept),
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


def compiled_variants(network: str, model: nn.Module, batch: int) -> tuple[list[Variant], str]:
    """torch.compile of the unfused network, of the fused one, and of the unfused one with
    Inductor freezing (on its own copy, so that it shares no compiled code with the first), at
    ``batch``, timed against the eager network; and ``"ok"`` or why a compilation failed (the
    variants compiled before it are kept)."""
    key, x = f"{network}-b{batch}", inputs(network, batch, sizes.LATENCY_SEED)
    nets = (model, fuse_conv_bn_relu(model)[0], copy.deepcopy(model))
    out: list[Variant] = []
    for (part, role, freezing), net in zip(COMPILED, nets, strict=True):
        compiled, status = try_compile(net, x, freezing=freezing)
        if compiled is None:
            return out, status
        config = {"method": f"{network}-{part}", "batch": batch}
        sample, timed = _sampled(compiled, network, batch), _timed(compiled, x)
        out.append(Variant(f"{key}-{part}", config, role, sample, timed, {}, f"{key}-eager"))  # type: ignore[arg-type]
    return out, "ok"


def limit(lat: Any, key: str) -> float:
    """(3) for the network and batch ``key`` (``"denoiser-b32"``) from the rounds' medians."""
    t = lat.median_ms(f"{key}-eager")
    removed = lat.median_ms(f"{key}-elementwise") - lat.median_ms(f"{key}-elementwise-fused")
    return t / max(t - removed, 1e-9)  # (3)


@torch.no_grad()
def library_agreement(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    """Max-abs differences of our fold vs ``fuse_conv_bn_eval`` (weights, biases) and of our
    rewritten model vs ``torch.ao.quantization.fuse_modules`` and vs the original (outputs)."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    from .fold import conv_bn_relu_groups, fold_conv_bn, fuse_with_torch_ao, max_abs_diff

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
