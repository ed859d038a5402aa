"""Real shapes: how close each technique gets to its own estimate when compute decides latency.

Idea
----
The zoo's models are so small that Python and operator overhead decide their latency: several
zoo speedups sit far below their FLOP estimates. Here every inference-time technique is applied,
through its public ``apply_x(model, config)`` shape, to a diffusers production class built at
its published shape with random weights (`reference.zoo.shapes.real`), and a short denoising loop
is timed at batch 1 against the same loop on the untouched model:

    speedup    = median(baseline loop) / median(technique loop)            (1)
    estimate   = FLOPs(baseline loop) / FLOPs(technique loop)              (2)
    efficiency = speedup / estimate                                        (3)

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one loop (a skipped network
call counts nothing). Each technique is timed in a comparison of its own against a baseline in
the same interleaved rounds (`reference.harness.cost.compare_latency`), so its interval is over
rounds of one machine state; only two models are in memory at a time.

What this measures, and what not
--------------------------------
* Cost only: random weights make every quality figure meaningless; the zoo benchmarks measure
  quality. A caching schedule here is fixed (interval), never decided by the weights.
* Techniques that only change the number of steps (scheduler choice, grid search's choice, the
  distilled and consistency students) do not change a step's cost, so at a shape where the
  network dominates their speedup is their NFE ratio; they are not timed here.
* One CPU machine: the hardware is recorded in the result's provenance.

Sources: Rombach et al. 2022 (arXiv:2112.10752) for the SD U-Net; Peebles and Xie 2023
(arXiv:2212.09748) for DiT-XL/2.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reference.harness.cli import Option, name_tuple
from reference.harness.results import Measurement, Metric, Row, metrics, settings_of

SLUG = "realshape"
MODELS = {"sd15": "unet2d-condition", "dit-xl-2": "dit"}
"""Study model id -> `reference.zoo.shapes` kind."""


@dataclass(frozen=True)
class Config:
    """``models``: study model ids; ``side``: latent side; ``steps``: loop length; ``repeats``:
    timing rounds; ``real``: published shapes (``False``: tiny, for tests)."""

    models: tuple[str, ...] = ("sd15", "dit-xl-2")
    techniques: tuple[str, ...] = (
        "deepcache",
        "forecasting",
        "low-rank",
        "fusion",
        "compile",
        "pruning",
        "cfg",
    )
    side: int = 32
    steps: int = 6
    repeats: int = 5
    warmup: int = 1
    real: bool = True

    def validate(self) -> None:
        unknown = [m for m in self.models if m not in MODELS]
        if unknown:
            raise ValueError(f"unknown model {unknown[0]!r}; known: {', '.join(MODELS)}")
        bad = [t for t in self.techniques if t not in VARIANTS]
        if bad:
            raise ValueError(f"unknown technique {bad[0]!r}; known: {', '.join(VARIANTS)}")
        if not (1 <= self.side <= 128 and 3 <= self.steps <= 100 and 1 <= self.repeats <= 100):
            raise ValueError("side must be in 1..128, steps in 3..100, repeats in 1..100")


FULL = Config()
QUICK = Config(side=8, steps=6, repeats=2, warmup=0, real=False)
OPTIONS = (
    Option("models", name_tuple, "A,B"),
    Option("techniques", name_tuple, "A,B"),
    Option("side", int),
    Option("steps", int),
    Option("repeats", int),
)


# ----------------------------------------------------------------------------- the variants
Applier = Callable[[nn.Module, dict[str, Any]], nn.Module]
"""``(model copy, the loop's inputs) -> the module the loop calls``."""


def _deepcache(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.feature_caching.production import DeepCacheConfig, apply_deepcache

    return apply_deepcache(model, DeepCacheConfig(interval=3)).model


def _forecasting(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.accelerate_method.production import ForecastConfig, apply_step_forecasting

    return apply_step_forecasting(model, ForecastConfig(interval=3)).model


def _low_rank(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.low_rank_inference.production import LowRankConfig, apply_low_rank

    return apply_low_rank(model, LowRankConfig()).model


def _fusion(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.conv_fusion.production import FusionConfig, apply_fusion

    return apply_fusion(model, FusionConfig()).model


def _compile(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.tpu_deployment.production import RegionalCompileConfig, apply_regional_compile

    return apply_regional_compile(model, RegionalCompileConfig()).model


def _pruning(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.pruning.production import StructuredPruningConfig, apply_structured_pruning

    return apply_structured_pruning(model, StructuredPruningConfig())


def _cfg(model: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    from reference.classifier_guidance.production import CFGConfig, apply_cfg

    # the null prompt's encoding stands in as zeros: with random weights only the cost counts
    text = {k: torch.zeros_like(inputs[k]) for k in ("encoder_hidden_states",) if k in inputs}
    return apply_cfg(model, CFGConfig(guidance_scale=7.5), uncond=text or None).model


VARIANTS: dict[str, tuple[tuple[str, ...], Applier]] = {
    "deepcache": (("unet2d-condition",), _deepcache),
    "forecasting": (("unet2d-condition", "dit"), _forecasting),
    "low-rank": (("unet2d-condition", "dit"), _low_rank),
    "fusion": (("unet2d-condition", "dit"), _fusion),
    "compile": (("unet2d-condition", "dit"), _compile),
    "pruning": (("unet2d-condition",), _pruning),
    "cfg": (("unet2d-condition", "dit"), _cfg),
}
"""Technique id -> (kinds it is timed on, how it is applied)."""


# ----------------------------------------------------------------------------- the loop
def denoising_loop(model: nn.Module, inputs: dict[str, Any], steps: int) -> Callable[[], Any]:
    """``steps`` calls of ``model`` from t = 999 down, each output folded into the sample.

    The update is a fixed contraction, not a real scheduler step: at these shapes a scheduler
    step costs microseconds against seconds for the network, and a fixed update keeps every
    variant's work identical apart from the technique.
    """
    key = "sample" if "sample" in inputs else "hidden_states"
    timesteps = torch.linspace(999, 0, steps)
    base = inputs[key]
    channels = base.shape[1]

    def run() -> torch.Tensor:
        x = base.clone()
        with torch.inference_mode():
            for t in timesteps:
                step_t = inputs["timestep"].new_full(inputs["timestep"].shape, float(t))
                out = model(**{**inputs, key: x, "timestep": step_t})[0]
                x = 0.9 * x + 0.1 * out[:, :channels]
        return x

    return run


def loop_gflops(run: Callable[[], Any]) -> float:
    """GFLOPs of one call of ``run`` (`FlopCounterMode`; skipped network calls count 0)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops() / 1e9


def _row(model_id: str, technique: str, lat: Any, flops: tuple[float, float]) -> Row:
    name = "technique"
    speedup = lat.speedup_over(name, "baseline")  # (1)
    estimate = flops[0] / flops[1] if flops[1] > 0 else None  # (2)
    return Row(
        id=f"{model_id}.{technique}",
        config={"method": technique, "model": model_id},
        role="technique",
        values={
            "latency_ms": lat.median_ms(name),
            "baseline_ms": lat.median_ms("baseline"),
            "speedup": speedup,
            "gflops": flops[1],
            "flop_speedup": estimate,
            "efficiency": speedup / estimate if estimate else None,  # (3)
        },
        intervals={"speedup": lat.speedup_interval(name, against="baseline")},
        spread={"latency_ms": lat.iqr_ms(name), "baseline_ms": lat.iqr_ms("baseline")},
    )


def _baseline_row(model_id: str, medians: list[float], gflops: float) -> Row:
    """The untouched model: the median of its medians over the comparisons it was timed in."""
    import statistics

    values: dict[str, float | None] = {"gflops": gflops}
    values["latency_ms"] = statistics.median(medians) if medians else None
    config = {"method": "baseline", "model": model_id}
    return Row(f"{model_id}.baseline", config, "baseline", values)


def time_technique(cfg: Config, model_id: str, technique: str, base: nn.Module) -> Row:
    """One comparison: the plain model against a copy with ``technique`` applied."""
    from reference.harness.cost import compare_latency
    from reference.zoo import shapes

    inputs = shapes.example_inputs(base, batch=1, side=cfg.side)
    variant = VARIANTS[technique][1](copy.deepcopy(base), inputs)
    runs = {
        "baseline": denoising_loop(base, inputs, cfg.steps),
        "technique": denoising_loop(variant, inputs, cfg.steps),
    }
    flops = (loop_gflops(runs["baseline"]), loop_gflops(runs["technique"]))
    if technique == "compile":
        runs["technique"]()  # compiles outside the clock; counted FLOPs are the eager ones
    lat = compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup, baseline="baseline")
    row = _row(model_id, technique, lat, flops)
    del variant, runs
    gc.collect()
    return row


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Every technique of ``cfg`` on every model of ``cfg`` it applies to."""
    from tqdm.auto import tqdm

    from reference.zoo import shapes

    pairs = [(m, t) for m in cfg.models for t in cfg.techniques if MODELS[m] in VARIANTS[t][0]]
    rows: list[Row] = []
    sizes: dict[str, Any] = {}
    baseline_ms: dict[str, list[float]] = {m: [] for m in cfg.models}
    with tqdm(total=len(pairs), desc="real shapes") as bar:
        for model_id in cfg.models:
            base = shapes.build(MODELS[model_id], real=cfg.real)
            inputs = shapes.example_inputs(base, batch=1, side=cfg.side)
            per_step = loop_gflops(denoising_loop(base, inputs, 1))
            key = model_id.replace("-", "_")
            sizes[f"{key}_params_m"] = sum(p.numel() for p in base.parameters()) / 1e6
            sizes[f"{key}_gflops_per_step"] = per_step
            for m, technique in pairs:
                if m == model_id:
                    bar.set_postfix_str(f"{model_id} {technique}")
                    row = time_technique(cfg, model_id, technique, base)
                    baseline_ms[model_id].append(row.values["baseline_ms"])
                    rows.append(row)
                    bar.update()
            rows.append(_baseline_row(model_id, baseline_ms[model_id], per_step * cfg.steps))
            del base
            gc.collect()
    return Measurement(
        settings=settings_of(cfg, batch=1, **sizes),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "gflops",
            baseline_ms=Metric("ms", "lower"),
            flop_speedup=Metric("x", "higher"),
            efficiency=Metric("", "higher"),
        ),
        rows=rows,
        headline=None,
        aims=[],
        notes=[],
        figures=[],
    )


def demo(cfg: Config, out: Path) -> None:
    """The quick configuration's table, printed."""
    m = benchmark(dataclasses.replace(cfg, repeats=1), out)
    for row in m.rows:
        v = row.values
        print(f"{row.id:28} {v['speedup']:.2f}x of estimate {v['flop_speedup'] or 0:.2f}x")
