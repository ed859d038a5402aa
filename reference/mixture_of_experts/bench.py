"""Benchmark and demo of :mod:`reference.mixture_of_experts` (the technique contract of
:mod:`reference.harness.cli`).

Rows: three tiny DiTs of the zoo with the same width, depth, heads and training budget - a dense
feed-forward network (baseline), a sparse top-1 mixture of 8 experts and two timestep experts
(techniques) - sampled with the same DDIM loop from the same noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reference.harness.cli import Option, at_least
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
from reference.harness.sampling import frozen

from .accounting import RoutingRecorder, active_parameters, flops_per_token
from .layers import MoEFeedForward
from .zoo_specs import ALPHA, CONFIGS, load_moe_model

SLUG = "mixture-of-experts"
MODELS = ("moe_dense", "moe_sparse", "moe_timestep")
ROLES = {"moe_dense": "baseline", "moe_sparse": "technique", "moe_timestep": "technique"}


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    steps: int = 50
    n_quality: int = 256
    batch_latency: int = 16
    repeats: int = 15
    warmup: int = 1

    def validate(self) -> None:
        at_least(self, steps=1, n_quality=2, batch_latency=1, repeats=1, warmup=0)


FULL = Config()
QUICK = Config(steps=4, n_quality=20, batch_latency=4, repeats=2, warmup=0)
DEMO = Config(steps=25, n_quality=20, batch_latency=8, repeats=3, warmup=1)
OPTIONS = (
    Option("steps"),
    Option("n_quality"),
    Option("batch_latency"),
    Option("repeats"),
    Option("warmup"),
)


def row_config(name: str) -> dict[str, Any]:
    """The language-neutral configuration of a zoo model's row."""
    c = CONFIGS[name]
    if c["ffn"] == "moe":
        return {"method": "sparse-moe", "experts": c["num_experts"], "top_k": c["top_k"]}
    if c["ffn"] == "timestep":
        return {"method": "timestep-experts", "boundary": c["boundaries"][0]}
    return {"method": "dense-ffn"}


def _utilisation_figure(path: Path, fractions: list[list[float]]) -> Path:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(7.0, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    layers, experts = len(fractions), len(fractions[0])
    width = 0.8 / layers
    for i, frac in enumerate(fractions):
        ax.bar(np.arange(experts) + i * width, frac, width, label=f"block {i}")
    ax.axhline(1 / experts, linestyle="--", color="#8c8c8c", linewidth=1)
    ax.annotate("uniform", (experts - 1, 1 / experts), fontsize=8, va="bottom")
    ax.set_xticks(np.arange(experts) + 0.4 - width / 2, [f"E{e}" for e in range(experts)])
    ax.set_ylabel("share of tokens (first choice)")
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def _load(name: str) -> nn.Module:
    model = frozen(load_moe_model(name))
    for m in model.modules():
        if isinstance(m, MoEFeedForward):
            m.capacity_factor = None  # inference: no token dropping
    return model


def _runner(model: nn.Module, cfg: Config, n: int, seed: int) -> Callable[[], torch.Tensor]:
    from reference import zoo
    from reference.harness import class_labels, make_noise, model_eps_fn, sample

    eps, noise, labels = model_eps_fn(model), make_noise(n, seed=seed), class_labels(n)
    return lambda: sample(eps, zoo.teacher_scheduler(), noise, steps=cfg.steps, labels=labels)


def _measure(cfg: Config) -> tuple[dict[str, nn.Module], dict[str, torch.Tensor], Any, list]:
    """The models, their quality samples, the latency comparison and the MoE's utilisation."""
    from reference.harness import compare_latency

    models = {name: _load(name) for name in MODELS}
    recorder = RoutingRecorder(models["moe_sparse"])
    samples = {name: _runner(m, cfg, cfg.n_quality, seed=0)() for name, m in models.items()}
    recorder.close()
    runs = {name: _runner(m, cfg, cfg.batch_latency, seed=2) for name, m in models.items()}
    with torch.inference_mode():
        lat = compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup)
    return models, samples, lat, recorder.fractions()


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Sample, time and count the three zoo models; write the figures into ``out``."""
    from reference.harness import (
        class_accuracy,
        class_labels,
        fdd_floor,
        frechet_digits_distance,
        save_grid,
    )

    models, samples, lat, fractions = _measure(cfg)
    labels = class_labels(cfg.n_quality)
    stats: dict[str, dict[str, float | None]] = {}
    rows = []
    for name, m in models.items():
        stats[name] = {
            "latency_ms": lat.median_ms(name),
            "speedup": lat.speedup[name],
            "fd_digits": frechet_digits_distance(samples[name]),
            "accuracy": class_accuracy(samples[name], labels),
            "params_m": sum(p.numel() for p in m.parameters()) / 1e6,
            "active_params_m": active_parameters(m) / 1e6,
            "mflops_per_token": flops_per_token(m) / 1e6,
        }
        rows.append(
            Row(
                name.removeprefix("moe_"),
                row_config(name),
                ROLES[name],  # type: ignore[arg-type]
                stats[name],
                intervals={"speedup": lat.speedup_interval(name)} if name != "moe_dense" else {},
                spread={"latency_ms": lat.iqr_ms(name)},
            )
        )

    figures = [Figure(f"{SLUG}.png", "utilisation"), Figure(f"{SLUG}-samples.png", "samples")]
    _utilisation_figure(out / figures[0].file, fractions)
    show = min(20, cfg.n_quality)
    save_grid(torch.cat([samples[n][:show] for n in MODELS]), out / figures[1].file, nrow=10)

    d, s, ts = stats["moe_dense"], stats["moe_sparse"], stats["moe_timestep"]
    param_ratio = s["params_m"] / d["params_m"]  # type: ignore[operator]
    flop_ratio = s["mflops_per_token"] / d["mflops_per_token"]  # type: ignore[operator]
    quality_ratio = s["fd_digits"] / d["fd_digits"]  # type: ignore[operator]
    speed, speed_ci = lat.speedup["moe_sparse"], lat.speedup_interval("moe_sparse")
    sparse = CONFIGS["moe_sparse"]
    notes = [
        note(
            "parameters",
            dense_total=d["params_m"],
            dense_active=d["active_params_m"],
            moe_total=s["params_m"],
            moe_active=s["active_params_m"],
            ts_total=ts["params_m"],
            ts_active=ts["active_params_m"],
            param_ratio=param_ratio,
            flop_ratio=flop_ratio,
            experts=sparse["num_experts"],
        ),
        note("routing-overhead", batch=cfg.batch_latency, steps=cfg.steps, ratio=1 / speed),
        note("timestep-experts", ratio=d["latency_ms"] / ts["latency_ms"]),  # type: ignore[operator]
        note(
            "utilisation",
            capacity_factor=sparse["capacity_factor"],
            alpha=ALPHA,
            max_share=100 * max(max(f) for f in fractions),
            uniform=100 / len(fractions[0]),
        ),
        note("same-budget"),
        note("fdd-at-n", n=cfg.n_quality, floor=fdd_floor(cfg.n_quality)),
        latency_note(cfg.repeats, cfg.batch_latency),
    ]
    aims = [
        aim("quality", quality_ratio, 1.0, "<="),
        aim("speedup", speed, 1 / 1.15, ">=", interval=speed_ci),
    ]
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            dim=CONFIGS["moe_dense"]["dim"],
            depth=CONFIGS["moe_dense"]["depth"],
            mlp_hidden=CONFIGS["moe_dense"]["mlp_hidden"],
        ),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "fd_digits",
            "accuracy",
            "params_m",
            active_params_m=Metric("M", "lower"),
            mflops_per_token=Metric("", "lower"),
        ),
        rows=rows,
        headline=speedup_headline(
            "sparse",
            lat,
            "moe_sparse",
            limit=1.0 / flop_ratio,
            limit_kind="bound",
            memory_ratio=param_ratio,
            quality_ratio=quality_ratio,
        ),
        aims=aims,
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Dense vs sparse MoE vs timestep experts: a small table and a sample grid."""
    from reference.harness import frechet_digits_distance, save_grid

    models, samples, lat, fractions = _measure(cfg)
    print(f"{'model':14s} {'params':>8s} {'active':>8s} {'MFLOP/tok':>10s} {'ms':>8s} {'FDD':>7s}")
    for name, m in models.items():
        print(
            f"{name:14s} {sum(p.numel() for p in m.parameters()):8d} {active_parameters(m):8d} "
            f"{flops_per_token(m) / 1e6:10.3f} {lat.median_ms(name):8.1f} "
            f"{frechet_digits_distance(samples[name]):7.3f}"
        )
    print(f"busiest expert: {max(max(f) for f in fractions):.1%} of a layer's tokens")
    grid = torch.cat([samples[n][:10] for n in MODELS])
    path = save_grid(grid, out / f"{SLUG}-demo.png", nrow=10)
    print(f"{path} (rows: {', '.join(MODELS)})")
