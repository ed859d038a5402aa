"""Benchmark and demo of [`reference.mixture_of_experts`][reference.mixture_of_experts] (the
technique contract of `reference.harness.cli`).

Rows: four tiny DiTs of the zoo with the same width, depth, heads and training budget, sampled
with the same DDIM loop (on the clipped ODE, `reference.harness.ode`) from the same noise on every
seed:

* a dense feed-forward network with the MoE's **active** FLOPs per token (baseline),
* a dense network with the MoE's **total** parameters, one FFN as wide as all experts (control),
* a sparse top-1 mixture of 8 experts and two timestep experts (techniques).

The MoE's claim has two sides, each an aim judged on paired-seed intervals: better than the
dense model of equal compute, and about as good as (FDD within 10%) but clearly faster than the
dense model of equal size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reference.harness.cli import Option, at_least, check_seeds, int_tuple
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
from reference.harness.seeds import N_QUALITY, SEEDS, SeedTable

from .accounting import RoutingRecorder, active_parameters, flops_per_token
from .figures import utilisation_figure
from .layers import MoEFeedForward
from .zoo_specs import ALPHA, CONFIGS, load_moe_model

SLUG = "mixture-of-experts"
MODELS = ("moe_dense", "moe_dense_wide", "moe_sparse", "moe_timestep")
ROLES = {
    "moe_dense": "baseline",
    "moe_dense_wide": "control",
    "moe_sparse": "technique",
    "moe_timestep": "technique",
}
AS_GOOD = 1.1
""""About as good": the MoE's FDD at most this multiple of the same-parameters dense model's."""


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    steps: int = 50
    n_quality: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    batch_latency: int = 16
    repeats: int = 15
    warmup: int = 1

    def validate(self) -> None:
        at_least(self, steps=1, n_quality=10, batch_latency=1, repeats=1, warmup=0)
        check_seeds(self.seeds)


FULL = Config()
QUICK = Config(steps=4, n_quality=20, seeds=(0, 1), batch_latency=4, repeats=2, warmup=0)
DEMO = Config(steps=25, n_quality=20, seeds=(0, 1), batch_latency=8, repeats=3, warmup=1)
OPTIONS = (
    Option("steps"),
    Option("n_quality"),
    Option("seeds", int_tuple, "S,S,..."),
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
    if c["mlp_hidden"] != CONFIGS["moe_dense"]["mlp_hidden"]:
        return {"method": "dense-ffn-wide", "hidden": c["mlp_hidden"]}
    return {"method": "dense-ffn"}


def _load(name: str) -> nn.Module:
    model = frozen(load_moe_model(name))
    for m in model.modules():
        if isinstance(m, MoEFeedForward):
            m.capacity_factor = None  # inference: no token dropping
    return model


def _runner(model: nn.Module, cfg: Config, n: int, seed: int) -> Callable[[], torch.Tensor]:
    """DDIM on the clipped ODE every sampler of the harness solves (`reference.harness.ode`)."""
    from reference.harness import class_labels, make_noise, model_eps_fn
    from reference.harness.ode import solve

    eps, noise, labels = model_eps_fn(model), make_noise(n, seed=seed), class_labels(n)
    return lambda: solve(eps, noise, steps=cfg.steps, labels=labels)


LATENCY_SEED = 1000
"""Noise seed of the latency batch (apart from the quality seeds)."""


def _measure(cfg: Config) -> tuple[dict[str, nn.Module], SeedTable, dict, Any, list]:
    """The models, their per-seed quality, seed 0's samples, the latency comparison and the
    MoE's expert utilisation while sampling."""
    from reference.harness import class_labels, compare_latency, over_seeds, quality_report

    models = {name: _load(name) for name in MODELS}
    labels = class_labels(cfg.n_quality)
    first: dict[str, torch.Tensor] = {}

    def measure(name: str, x: torch.Tensor, same_seed: dict) -> dict[str, float]:
        first.setdefault(name, x)
        return quality_report(x, labels)

    recorder = RoutingRecorder(models["moe_sparse"])
    samplers = {
        n: (lambda seed, m=m: _runner(m, cfg, cfg.n_quality, seed)()) for n, m in models.items()
    }
    table = over_seeds(samplers, measure, cfg.seeds)
    recorder.close()
    runs = {name: _runner(m, cfg, cfg.batch_latency, LATENCY_SEED) for name, m in models.items()}
    with torch.inference_mode():
        lat = compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup)
    return models, table, first, lat, recorder.fractions()


def _rows(models: dict[str, nn.Module], q: SeedTable, lat: Any) -> tuple[list[Row], dict]:
    """One row per model (quality over seeds, latency, size) and the size facts by model."""
    rows, size = [], {}
    for name, m in models.items():
        values, intervals, seeds = q.row_fields(name)
        size[name] = {
            "params_m": sum(p.numel() for p in m.parameters()) / 1e6,
            "active_params_m": active_parameters(m) / 1e6,
            "mflops_per_token": flops_per_token(m) / 1e6,
        }
        values = {"latency_ms": lat.median_ms(name), "speedup": lat.speedup[name], **values}
        if name != "moe_dense":
            intervals = {"speedup": lat.speedup_interval(name), **intervals}
        rows.append(
            Row(
                name.removeprefix("moe_"),
                row_config(name),
                ROLES[name],  # type: ignore[arg-type]
                {**values, **size[name]},
                intervals=intervals,
                spread={"latency_ms": lat.iqr_ms(name)},
                seeds=seeds,
            )
        )
    return rows, size


def _aims(q: SeedTable, lat: Any) -> list:
    """Both sides of the MoE's claim, on paired-seed FDD ratios and bootstrap speedups."""
    vs_dense = q.ratio("moe_sparse", "moe_dense", "fd_digits")
    vs_wide = q.ratio("moe_sparse", "moe_dense_wide", "fd_digits")
    return [
        aim(
            "quality-vs-dense",
            vs_dense.value,
            1.0,
            "<",
            interval=vs_dense.interval,
            row="sparse",
            against="dense",
        ),
        aim(
            "quality-vs-wide",
            vs_wide.value,
            AS_GOOD,
            "<=",
            interval=vs_wide.interval,
            row="sparse",
            against="dense_wide",
        ),
        aim(
            "speedup-vs-wide",
            lat.speedup_over("moe_sparse", "moe_dense_wide"),
            1.0,
            ">",
            interval=lat.speedup_interval("moe_sparse", against="moe_dense_wide"),
            row="sparse",
            against="dense_wide",
        ),
        aim(
            "speedup",
            lat.speedup["moe_sparse"],
            1 / 1.15,
            ">=",
            interval=lat.speedup_interval("moe_sparse"),
            row="sparse",
            against="dense",
        ),
    ]


def _notes(cfg: Config, size: dict, lat: Any, fractions: list[list[float]]) -> list:
    from reference.harness import quality_note

    d, w, s, ts = (size[n] for n in MODELS)
    sparse = CONFIGS["moe_sparse"]
    return [
        note(
            "parameters",
            dense_total=d["params_m"],
            dense_active=d["active_params_m"],
            wide_total=w["params_m"],
            moe_total=s["params_m"],
            moe_active=s["active_params_m"],
            ts_total=ts["params_m"],
            ts_active=ts["active_params_m"],
            param_ratio=s["params_m"] / d["params_m"],
            flop_ratio=s["mflops_per_token"] / d["mflops_per_token"],
            wide_flop_ratio=w["mflops_per_token"] / s["mflops_per_token"],
            experts=sparse["num_experts"],
        ),
        note(
            "routing-overhead",
            batch=cfg.batch_latency,
            steps=cfg.steps,
            ratio=1 / lat.speedup["moe_sparse"],
        ),
        note("timestep-experts", ratio=lat.speedup["moe_timestep"]),
        note(
            "utilisation",
            capacity_factor=sparse["capacity_factor"],
            alpha=ALPHA,
            max_share=100 * max(max(f) for f in fractions),
            uniform=100 / len(fractions[0]),
        ),
        note("same-budget"),
        quality_note(cfg.n_quality, cfg.seeds),
        latency_note(cfg.repeats, cfg.batch_latency),
    ]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Sample (paired seeds), time and count the four zoo models; write the figures."""
    from reference.harness import real_reference_row, save_grid

    models, q, first, lat, fractions = _measure(cfg)
    rows, size = _rows(models, q, lat)
    figures = [Figure(f"{SLUG}.png", "utilisation"), Figure(f"{SLUG}-samples.png", "samples")]
    utilisation_figure(out / figures[0].file, fractions)
    show = min(20, cfg.n_quality)
    save_grid(torch.cat([first[n][:show] for n in MODELS]), out / figures[1].file, nrow=10)
    ratio = q.ratio("moe_sparse", "moe_dense", "fd_digits")
    flop_ratio = size["moe_sparse"]["mflops_per_token"] / size["moe_dense"]["mflops_per_token"]
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            ode="clipped",
            dim=CONFIGS["moe_dense"]["dim"],
            depth=CONFIGS["moe_dense"]["depth"],
            mlp_hidden=CONFIGS["moe_dense"]["mlp_hidden"],
        ),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "fd_digits",
            "kid_digits",
            "accuracy",
            "diversity",
            "params_m",
            active_params_m=Metric("M", "lower"),
            mflops_per_token=Metric("", "lower"),
        ),
        rows=[*rows, real_reference_row(cfg.n_quality)],
        headline=speedup_headline(
            "sparse",
            lat,
            "moe_sparse",
            # Equal FLOPs per token predict equal speed; FLOPs do not bound latency (gather,
            # scatter and the loop over experts are not counted), so this is an estimate.
            limit=1.0 / flop_ratio,
            limit_kind="estimate",
            memory_ratio=size["moe_sparse"]["params_m"] / size["moe_dense"]["params_m"],
            quality_ratio=ratio.value,
            quality_interval=ratio.interval,
        ),
        aims=_aims(q, lat),
        notes=_notes(cfg, size, lat, fractions),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Dense vs sparse MoE vs timestep experts: a small table and a sample grid."""
    from reference.harness import save_grid

    models, q, samples, lat, fractions = _measure(cfg)
    print(f"{'model':14s} {'params':>8s} {'active':>8s} {'MFLOP/tok':>10s} {'ms':>8s} {'FDD':>7s}")
    for name, m in models.items():
        print(
            f"{name:14s} {sum(p.numel() for p in m.parameters()):8d} {active_parameters(m):8d} "
            f"{flops_per_token(m) / 1e6:10.3f} {lat.median_ms(name):8.1f} "
            f"{q.summary(name, 'fd_digits').value:7.3f}"
        )
    print(f"busiest expert: {max(max(f) for f in fractions):.1%} of a layer's tokens")
    grid = torch.cat([samples[n][:10] for n in MODELS])
    path = save_grid(grid, out / f"{SLUG}-demo.png", nrow=10)
    print(f"{path} (rows: {', '.join(MODELS)})")
