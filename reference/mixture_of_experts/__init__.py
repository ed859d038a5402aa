"""Mixture of experts: many expert networks, few active per token (work in progress).

Implemented so far: the sparse MoE feed-forward layer (:mod:`.layers`): router, top-k gating,
expert capacity with token dropping and the Switch load-balancing loss (Fedus et al. 2021,
arXiv:2101.03961; GShard, Lepikhin et al. 2020, arXiv:2006.16668; in diffusion transformers:
DiT-MoE, Fei et al. 2024, arXiv:2407.11633), and routing-free timestep experts (eDiff-I, Balaji
et al. 2022, arXiv:2211.01324). Still to come: the small DiT-style denoiser, its zoo models
(dense vs MoE at equal active FLOPs), the benchmark and the command line.
"""

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

__all__ = [
    "ExpertFFN",
    "MoEFeedForward",
    "Routing",
    "TimestepExpertFeedForward",
    "capacity_mask",
    "expert_capacity",
    "load_balancing_loss",
    "route",
]
