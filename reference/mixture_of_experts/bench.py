"""Benchmark and demo of [`reference.mixture_of_experts`][reference.mixture_of_experts] (the
technique contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows: four tiny DiTs of the zoo with the same width, depth, heads and training budget, sampled
with the same DDIM loop (on the clipped ODE, `reference.harness.ode`) from the same noise on every
seed:

* a dense feed-forward network with the MoE's **active** FLOPs per token (baseline),
* a dense network with the MoE's **total** parameters, one FFN as wide as all experts (control),
* a sparse top-1 mixture of 8 experts and two timestep experts (techniques).

The MoE's claim has two sides, each an aim judged on paired-seed intervals: better than the
dense model of equal compute, and about as good as (FDD within 10%) but clearly faster than the
dense model of equal size.

Quality is scored against the reference half of the held-out digits (the classifier never saw
them) by `reference.harness.scores.held_out_score`: FDD, the class-weighted unbiased KID,
accuracy and within-class diversity, at ``n_quality`` = 140 per seed, so that the held-out real
row (at most 148 digits) is measured at the same size and its FDD is comparable.

The ``utilisation`` note keeps, beside the busiest expert's share, every share the utilisation
figure draws: ``shares[b][e]``, the fraction of block ``b``'s tokens whose first choice was expert
``e`` while the MoE sampled (`RoutingRecorder`), so that the site can draw the figure again in
each reader's language. Each block's shares sum to 1:

    shares[b][e] = c[b][e] / sum_j c[b][j],  c = first-choice counts over every sampling call  (1)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reference.harness import compare, sizes
from reference.harness.builders import held_out_comparison
from reference.harness.compare import HeadlineSpec, QualityAim, SpeedupAim, Variant
from reference.harness.cost import latency_note
from reference.harness.declared import SAMPLED_COLUMNS, lower, sampled_outcome
from reference.harness.entry import integer
from reference.harness.results import Figure, metrics, note
from reference.harness.sampling import frozen

from .accounting import RoutingRecorder, active_parameters, flops_per_token
from .figures import utilisation_figure
from .layers import MoEFeedForward
from .zoo_specs import ALPHA, CONFIGS, load_moe_model

CONTRACT = 2
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
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run: the quality sample and the timing (`sizes`),
    and the DDIM steps."""

    batch_latency: int = 16
    steps: int = 50


FULL = Config()
QUICK = Config(steps=4, n_quality=20, seeds=(0, 1), batch_latency=4, repeats=2, warmup=0)
DEMO = Config(steps=25, n_quality=20, seeds=(0, 1), batch_latency=8, repeats=3, warmup=1)
OPTIONS = (integer("steps", low=1, high=1000), *sizes.SCORED_OPTIONS, *sizes.TIMED_OPTIONS)


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


def _size(m: nn.Module) -> dict[str, float]:
    return {
        "params_m": sum(p.numel() for p in m.parameters()) / 1e6,
        "active_params_m": active_parameters(m) / 1e6,
        "mflops_per_token": flops_per_token(m) / 1e6,
    }


AIMS = (
    QualityAim("quality-vs-dense", "sparse", "dense", "fd_digits", "<", 1.0),
    QualityAim("quality-vs-wide", "sparse", "dense_wide", "fd_digits", "<=", AS_GOOD),
    SpeedupAim("speedup-vs-wide", "sparse", "dense_wide", ">", 1.0),
    SpeedupAim("speedup", "sparse", "dense", ">=", 1 / 1.15),
)
"""Both sides of the MoE's claim, on paired-seed FDD ratios and round-bootstrap speedups."""


def comparison(cfg: Config, models: Mapping[str, nn.Module]) -> compare.Comparison:
    """The four zoo models on the same noise; the sparse MoE is the headline, judged against
    the dense model of equal active FLOPs (baseline) and of equal parameters (control)."""
    size = {name: _size(m) for name, m in models.items()}
    variants = tuple(
        Variant(
            name.removeprefix("moe_"),
            row_config(name),
            ROLES[name],  # type: ignore[arg-type]
            sample=lambda seed, m=m: _runner(m, cfg, cfg.n_quality, seed)(),
            timed=_runner(m, cfg, cfg.batch_latency, sizes.LATENCY_SEED),
            facts=size[name],
        )
        for name, m in models.items()
    )
    sparse, dense = size["moe_sparse"], size["moe_dense"]
    return held_out_comparison(
        cfg,
        variants,
        metrics(
            *SAMPLED_COLUMNS,
            "params_m",
            **lower("active_params_m", unit="M"),
            **lower("mflops_per_token"),
        ),
        AIMS,
        HeadlineSpec(
            "sparse",
            quality="fd_digits",
            # Equal FLOPs per token predict equal speed; FLOPs do not bound latency (gather,
            # scatter and the loop over experts are not counted), so this is an estimate.
            limit=dense["mflops_per_token"] / sparse["mflops_per_token"],
            limit_kind="estimate",
            memory_ratio=sparse["params_m"] / dense["params_m"],
        ),
    )


def _notes(cfg: Config, m: Any, fractions: list[list[float]]) -> list:
    from reference.harness import quality_note

    rows = {r.id: r.values for r in m.rows}
    d, w, s, ts = (rows[n.removeprefix("moe_")] for n in MODELS)
    sparse = CONFIGS["moe_sparse"]
    by_model = {"dense": d, "wide": w, "moe": s, "ts": ts}
    totals = {f"{k}_total": r["params_m"] for k, r in by_model.items()}
    active = {f"{k}_active": r["active_params_m"] for k, r in by_model.items() if k != "wide"}
    return [
        note(
            "parameters",
            **totals,
            **active,
            param_ratio=s["params_m"] / d["params_m"],
            flop_ratio=s["mflops_per_token"] / d["mflops_per_token"],
            wide_flop_ratio=w["mflops_per_token"] / s["mflops_per_token"],
            experts=sparse["num_experts"],
        ),
        note("routing-overhead", batch=cfg.batch_latency, steps=cfg.steps, ratio=1 / s["speedup"]),
        note("timestep-experts", ratio=ts["speedup"]),
        note(
            "utilisation",
            capacity_factor=sparse["capacity_factor"],
            alpha=ALPHA,
            max_share=100 * max(max(f) for f in fractions),
            uniform=100 / len(fractions[0]),
            shares=[list(f) for f in fractions],  # (1), the figure's bars
        ),
        note("same-budget"),
        note("held-out-reference"),
        quality_note(cfg.n_quality, cfg.seeds),
        latency_note(cfg.repeats, cfg.batch_latency),
    ]


def _measured(cfg: Config) -> tuple[Any, list[list[float]]]:
    """The comparison measured, and the MoE's expert utilisation while it sampled."""
    models = {name: _load(name) for name in MODELS}
    recorder = RoutingRecorder(models["moe_sparse"])
    try:
        m = compare.measure(comparison(cfg, models))
    finally:
        recorder.close()
    return m, recorder.fractions()


def measure(cfg: Config, staging: Path) -> compare.Outcome:
    """Sample (paired seeds), time and count the four zoo models; write the figures."""
    from reference.harness import save_grid

    m, fractions = _measured(cfg)
    figures = [Figure(f"{SLUG}.png", "utilisation"), Figure(f"{SLUG}-samples.png", "samples")]
    utilisation_figure(staging / figures[0].file, fractions)
    show = min(20, cfg.n_quality)
    ids = [n.removeprefix("moe_") for n in MODELS]
    save_grid(torch.cat([m.first[i][:show] for i in ids]), staging / figures[1].file, nrow=10)
    dense = CONFIGS["moe_dense"]
    return sampled_outcome(
        m,
        cfg,
        notes=_notes(cfg, m, fractions),
        figures=figures,
        dim=dense["dim"],
        depth=dense["depth"],
        mlp_hidden=dense["mlp_hidden"],
    )


def demo(cfg: Config, out: Path) -> None:
    """Dense vs sparse MoE vs timestep experts: a small table and a sample grid."""
    from reference.harness import save_grid

    m, fractions = _measured(cfg)
    print(f"{'model':14s} {'params':>8s} {'active':>8s} {'MFLOP/tok':>10s} {'ms':>8s} {'FDD':>7s}")
    for row in m.rows:
        v = row.values
        print(
            f"{row.id:14s} {v['params_m']:8.3f} {v['active_params_m']:8.3f} "
            f"{v['mflops_per_token']:10.3f} {v['latency_ms']:8.1f} {v['fd_digits']:7.3f}"
        )
    print(f"busiest expert: {max(max(f) for f in fractions):.1%} of a layer's tokens")
    grid = torch.cat([m.first[r.id][:10] for r in m.rows])
    path = save_grid(grid, out / f"{SLUG}-demo.png", nrow=10)
    print(f"{path} (rows: {', '.join(r.id for r in m.rows)})")
