"""The measurements of the conv-fusion benchmark on the two BatchNorm networks: the batch sweep
(eager, BN folded, fx-fused, the BN and ReLU passes alone), the torch.compile variants, and the
agreement with PyTorch's own fusion APIs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

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

NETWORKS = ("classifier", "denoiser")


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
    lat: Any = None
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
        """Estimated limit ``T / (T - T_removed)`` from isolated timings of the removed work:
        an estimate, not a bound (inside the network the removed passes also cost cache misses
        of the next convolution, so a measured speedup can exceed it)."""
        return self.eager_ms / max(self.eager_ms - self.removed_ms, 1e-9)


def _inputs(network: str, batch: int) -> torch.Tensor:
    if network == "classifier":
        from reference.data import load_digits_tensors

        return load_digits_tensors("test")[0][:batch].repeat(-(-batch // 300), 1, 1, 1)[:batch]
    return noisy_digits(batch, seed=1)


def measure_network(
    network: str,
    model: nn.Module,
    fused: nn.Module,
    batch: int,
    cfg: Any,
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
        lat,
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
    lat: Any


def measure_compiled(network: str, model: nn.Module, fused: nn.Module, cfg: Any) -> CompiledRun:
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
    )
    stats = {k: (lat.median_ms(k), lat.iqr_ms(k)) for k in candidates}
    return CompiledRun(network, cfg.headline_batch, stats, diffs, status, lat)


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


def _networks(cfg: Any) -> dict[str, nn.Module]:
    from reference import zoo

    return {
        "classifier": zoo.load_classifier(),
        "denoiser": make_toy_denoiser(cfg.width, cfg.depth),
    }


def run_all(cfg: Any) -> tuple[list[NetworkRun], list[CompiledRun], dict[str, dict[str, float]]]:
    """The batch sweep, the compiled variants (``cfg.compile``) and the library oracles."""
    from tqdm.auto import tqdm

    nets = _networks(cfg)
    fused = {k: fuse_conv_bn_relu(m)[0] for k, m in nets.items()}
    fold_only = {k: fuse_conv_bn_relu(m, fuse_relu=False)[0] for k, m in nets.items()}
    oracle = {k: library_agreement(m, _inputs(k, 8)) for k, m in nets.items()}
    jobs = [(k, b) for k in nets for b in cfg.batches]
    sweep = [
        measure_network(k, nets[k], fused[k], b, cfg, fold_only[k])
        for k, b in tqdm(jobs, desc="conv-fusion: batch sweep", leave=False)
    ]
    compiled = [measure_compiled(k, nets[k], fused[k], cfg) for k in nets] if cfg.compile else []
    return sweep, compiled, oracle
