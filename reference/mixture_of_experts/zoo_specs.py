"""Zoo models of the MoE technique: dense, sparse-MoE and timestep-expert
[`TinyDiT`][reference.mixture_of_experts.zoo_specs.TinyDiT].

The first three share width, depth, heads and the expert width, so the dense model and the top-1 MoE
spend the same FLOPs per token (plus the router's ``d x E``), and the timestep-expert model exactly
the same; the MoE holds ``num_experts`` FFNs per block, the timestep model two. The fourth,
``moe_dense_wide``, is dense with the MoE's total parameters (one FFN as wide as all experts
together): the MoE claims to be about as good as it at a fraction of its FLOPs. Trained with the
zoo's epsilon objective (`reference.zoo.specs._diffusion_batch_loss`: label dropout, cosine
schedule), EMA weights saved; the MoE adds ``ALPHA`` times the load-balancing loss. The registry
(`reference.registry`) names this module as a zoo plugin, so the zoo merges
[`ZOO_SPECS`][reference.mixture_of_experts.zoo_specs.ZOO_SPECS] into `reference.zoo.specs.SPECS`:
train them with ``python scripts/train_zoo.py --only moe_dense,moe_sparse,moe_timestep`` and load
them with ``reference.zoo.load(name)``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from reference.zoo.specs import ZooSpec
from reference.zoo.training import TrainContext, TrainOutcome, fit

from .denoiser import TinyDiT

ALPHA = 0.01
"""Weight of the load-balancing loss (Switch Transformer's value)."""
STEPS, BATCH, LR = 3000, 64, 1e-3
"""800 steps left all three models producing noise (eps-MSE 0.43 at t=50 against 0.14 for the
zoo DiT), which made the quality comparison meaningless."""
BASE: dict[str, Any] = {"dim": 48, "depth": 4, "heads": 3, "mlp_hidden": 192}
CONFIGS: dict[str, dict[str, Any]] = {
    "moe_dense": {**BASE, "ffn": "dense"},
    "moe_sparse": {
        **BASE,
        "ffn": "moe",
        "num_experts": 8,
        "top_k": 1,
        "capacity_factor": 1.25,
    },
    "moe_timestep": {**BASE, "ffn": "timestep", "boundaries": [500]},
    # The other side of the MoE's claim: a dense model with (within 0.5%) the sparse model's
    # total parameters, its FFN as wide as all 8 experts together, trained on the same budget.
    "moe_dense_wide": {**BASE, "mlp_hidden": 8 * BASE["mlp_hidden"], "ffn": "dense"},
}


def build(config: dict[str, Any]) -> nn.Module:
    """A [`TinyDiT`][reference.mixture_of_experts.zoo_specs.TinyDiT] from a zoo configuration."""
    return TinyDiT(**config)


def train(ctx: TrainContext) -> TrainOutcome:
    """Epsilon prediction on the digits (+ ``ALPHA`` x load balancing for MoE layers)."""
    from reference.data import load_digits_tensors
    from reference.zoo.specs import EMA_DECAY, _diffusion_batch_loss, _diffusion_extra

    x, y = load_digits_tensors("train")
    model = build(ctx.config)
    base = _diffusion_batch_loss(lambda idx: x[idx], y, ctx.batch)

    def batch_loss(m: nn.Module, step: int) -> torch.Tensor:
        return base(m, step) + ALPHA * m.aux_loss()  # type: ignore[operator]

    ema, loss = fit(ctx, model, batch_loss, ema_decay=EMA_DECAY)
    return TrainOutcome(ema, loss, extra={**_diffusion_extra(), "aux_loss_weight": ALPHA})


ZOO_SPECS: dict[str, ZooSpec] = {
    name: ZooSpec(
        name=name,
        description=f"tiny DiT, {config['ffn']} feed-forward layers (mixture-of-experts study)",
        architecture="reference.mixture_of_experts.denoiser.TinyDiT",
        config=config,
        build="reference.mixture_of_experts.zoo_specs:build",
        train="reference.mixture_of_experts.zoo_specs:train",
        steps=STEPS,
        batch=BATCH,
        lr=LR,
        storage_dtype="float16",
    )
    for name, config in CONFIGS.items()
}
"""Zoo entries of this technique (merged into `reference.zoo.specs.SPECS` by the zoo)."""


def load_moe_model(name: str) -> nn.Module:
    """Load a trained model of [`ZOO_SPECS`][reference.mixture_of_experts.zoo_specs.ZOO_SPECS] from
    the zoo (sha-verified and recorded for the result's provenance by
    `reference.zoo.store.verified_weights`).

    Equivalent to ``reference.zoo.load(name)``, without merging every other zoo plugin first.
    """
    from reference.zoo.store import ZooError, load_state_dict, verified_weights

    if name not in ZOO_SPECS:
        raise ZooError(f"unknown MoE zoo model {name!r}; known: {', '.join(ZOO_SPECS)}")
    entry, path = verified_weights(name)
    model = ZOO_SPECS[name].build_model(entry["config"])
    model.load_state_dict(load_state_dict(path))
    return model.eval()
