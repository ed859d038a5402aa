"""Mixture of experts (MoE): many expert networks, only a few of them active for each token.

Idea
====
A transformer spends most of its parameters in the feed-forward networks (FFNs). A sparse MoE
layer keeps ``E`` expert FFNs and a small *router* that sends every token to its top-``k``
experts (``k`` = 1 or 2). Parameters grow ``E``-fold while the compute per token stays that of
``k`` FFNs: capacity without cost, in FLOPs.

Math ([`layers`][reference.mixture_of_experts.layers])
======================================================
``p = softmax(x W_r)``; the token's output is ``sum_{e in topk(p)} g_e FFN_e(x)`` with ``g = p``
(Switch Transformer, Fedus et al. 2021, arXiv:2101.03961, ``k = 1``) or ``p`` renormalised over
the chosen experts (GShard, Lepikhin et al. 2020, arXiv:2006.16668, ``k = 2``). Each expert takes
at most ``C = ceil(capacity_factor * T * k / E)`` of the ``T`` tokens; the rest are *dropped*
(the residual connection carries them). Training adds ``alpha * E * sum_i f_i P_i`` (Switch's
load-balancing loss: ``f_i`` share of tokens routed to ``i``, ``P_i`` mean router probability)
so that the router does not collapse onto a few experts.

Diffusion models use MoE in two ways: token-routed MoE inside DiT blocks (DiT-MoE, Fei et al. 2024,
arXiv:2407.11633) and *timestep experts* - separate denoisers (or FFNs) for high and low noise,
chosen by ``t`` with no router at all (eDiff-I, Balaji et al. 2022, arXiv:2211.01324; Wan 2.2's
high-/low-noise experts). Both are here, in the tiny DiT of
[`denoiser`][reference.mixture_of_experts.denoiser], trained as zoo models
([`zoo_specs`][reference.mixture_of_experts.zoo_specs]) on one budget next to two dense twins, one
for each side of the MoE's claim: the twin with the same FLOPs per token (the MoE should be better
than it) and the twin with the same total parameters (the MoE should be about as good and clearly
cheaper).

Pitfalls
========
* Equal FLOPs are not equal latency: routing is a gather, a per-expert loop and a scatter. On a
  CPU with tiny experts this overhead dominates; MoE pays off with large experts sharded over
  devices (expert parallelism), where memory, not FLOPs, is the price.
* Capacity too low drops tokens (quality); too high wastes padded compute on accelerators.
  Inference often runs without dropping (done here).
* Without the balancing loss routers collapse; with a too-large weight they route uniformly and
  the experts stop specialising.

Package
=======
* [`reference.mixture_of_experts.layers`][reference.mixture_of_experts.layers] - router, top-k
  gates, capacity, Switch's load-balancing loss,
  [`MoEFeedForward`][reference.mixture_of_experts.MoEFeedForward] and
  [`TimestepExpertFeedForward`][reference.mixture_of_experts.TimestepExpertFeedForward];
* [`reference.mixture_of_experts.denoiser`][reference.mixture_of_experts.denoiser] -
  [`TinyDiT`][reference.mixture_of_experts.TinyDiT], whose feed-forward layers are dense, sparse MoE
  or timestep experts;
* [`reference.mixture_of_experts.accounting`][reference.mixture_of_experts.accounting] - active
  parameters and FLOPs per token, and a recorder of the experts' share of tokens;
* [`reference.mixture_of_experts.zoo_specs`][reference.mixture_of_experts.zoo_specs] - the four zoo
  models (a zoo plugin named in `reference.registry`; weights in the zoo, trained by
  ``scripts/train_zoo.py``);
* [`reference.mixture_of_experts.bench`][reference.mixture_of_experts.bench] - the benchmark and
  demo (``python -m reference.mixture_of_experts``, see ``--help``).

Production: ``torch`` has no MoE layer; DeepSpeed-MoE (``deepspeed.moe.layer.MoE``), Megatron-Core
``MoELayer``, Tutel and ``transformers``' Mixtral/Switch models implement it; diffusers ships
Wan 2.2 pipelines with two timestep-expert transformers (``transformer`` / ``transformer_2`` with
a ``boundary_ratio``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .accounting import RoutingRecorder, active_parameters, flops_per_token
    from .denoiser import TinyDiT
    from .layers import (
        ExpertFFN,
        MoEFeedForward,
        Routing,
        TimestepExpertFeedForward,
        capacity_mask,
        expert_capacity,
        load_balancing_loss,
        route,
    )
    from .zoo_specs import ZOO_SPECS, load_moe_model

__all__ = [
    "ZOO_SPECS",
    "ExpertFFN",
    "MoEFeedForward",
    "Routing",
    "RoutingRecorder",
    "TimestepExpertFeedForward",
    "TinyDiT",
    "active_parameters",
    "capacity_mask",
    "expert_capacity",
    "flops_per_token",
    "load_balancing_loss",
    "load_moe_model",
    "route",
]

__getattr__ = attributes(__name__)
