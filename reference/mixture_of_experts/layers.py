"""Sparse mixture-of-experts feed-forward layers: router, top-k gating, capacity, balancing loss.

[`MoEFeedForward`][reference.mixture_of_experts.layers.MoEFeedForward] replaces a transformer's
feed-forward network (FFN) by ``E`` expert FFNs and a linear router. For tokens ``x`` ``[T, d]``:

1. router probabilities ``p = softmax(x W_r)`` ``[T, E]``;
2. each token picks its ``k`` most probable experts; gates ``g`` are those probabilities,
   renormalised to sum to 1 over the chosen experts when ``k > 1`` (GShard, Lepikhin et al. 2020,
   arXiv:2006.16668) and left as ``p`` for ``k = 1`` (Switch Transformer, Fedus et al. 2021,
   arXiv:2101.03961);
3. every expert accepts at most ``C = ceil(capacity_factor * T * k / E)`` tokens. Slots are
   filled choice by choice (all first choices in token order, then all second choices, ...);
   assignments past ``C`` are **dropped** - the expert's term is missing for that token, whose
   residual connection still carries it;
4. ``y_t = sum_{e in chosen(t), kept} g_{t,e} FFN_e(x_t)``.

The load-balancing auxiliary loss of Switch (eq. 4) is ``E * sum_i f_i P_i`` with ``f_i`` the
fraction of tokens whose first choice is expert ``i`` and ``P_i`` the mean router probability of
``i``; it is 1 under perfectly uniform routing and grows as routing collapses onto few experts.
Training adds ``alpha`` (0.01 in Switch) times it to the task loss.

[`TimestepExpertFeedForward`][reference.mixture_of_experts.layers.TimestepExpertFeedForward] is the
routing-free alternative of diffusion models (eDiff-I, Balaji et al. 2022, arXiv:2211.01324; Wan
2.2's high-/low-noise experts): the expert is chosen by the timestep, so no router, no capacity and
no load balancing are needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


class ExpertFFN(nn.Module):
    """One expert: ``Linear(d, h) -> GELU(tanh) -> Linear(h, d)``, the DiT feed-forward shape."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


@dataclass
class Routing:
    """The routing decision for ``T`` tokens and ``k`` choices each.

    ``experts`` ``[T, k]`` chosen expert ids, ``gates`` ``[T, k]`` their weights, ``kept``
    ``[T, k]`` bool (False = dropped by capacity), ``probs`` ``[T, E]`` router probabilities,
    ``capacity`` slots per expert.
    """

    experts: torch.Tensor
    gates: torch.Tensor
    kept: torch.Tensor
    probs: torch.Tensor
    capacity: int


def expert_capacity(tokens: int, num_experts: int, k: int, capacity_factor: float | None) -> int:
    """``ceil(capacity_factor * tokens * k / num_experts)``; ``None`` = unlimited (``tokens``)."""
    if capacity_factor is None:
        return tokens
    if capacity_factor <= 0:
        raise ValueError(f"capacity_factor must be > 0, got {capacity_factor}")
    return math.ceil(capacity_factor * tokens * k / num_experts)  # Switch Eq. (3), x k choices


def capacity_mask(experts: torch.Tensor, num_experts: int, capacity: int) -> torch.Tensor:
    """Which assignments ``experts`` ``[T, k]`` fit: first choices in token order, then second...

    Returns a bool ``[T, k]``; an assignment is kept iff fewer than ``capacity`` earlier
    assignments (earlier choice rank, or same rank and earlier token) went to the same expert.
    """
    t, k = experts.shape
    order = experts.t().reshape(-1)  # rank-major: all first choices, then all second choices
    one_hot = F.one_hot(order, num_experts)  # [k*T, E]
    position = (one_hot.cumsum(0) - 1).gather(1, order[:, None]).squeeze(1)
    return (position < capacity).reshape(k, t).t()


def route(
    x: torch.Tensor,
    router: nn.Linear,
    k: int,
    capacity_factor: float | None,
) -> Routing:
    """Top-``k`` routing of tokens ``x`` ``[T, d]`` with capacity (see the module docstring)."""
    num_experts = router.out_features
    if not 1 <= k <= num_experts:
        raise ValueError(f"top-k must be in 1..{num_experts}, got {k}")
    probs = F.softmax(router(x), dim=-1)  # Switch Eq. (1): p_i(x) = softmax(x W_r)_i
    gates, experts = probs.topk(k, dim=-1)
    if k > 1:
        gates = gates / gates.sum(-1, keepdim=True)  # GShard: top-2 gates renormalised
    capacity = expert_capacity(x.shape[0], num_experts, k, capacity_factor)
    kept = capacity_mask(experts, num_experts, capacity)
    return Routing(experts, gates, kept, probs, capacity)


def load_balancing_loss(probs: torch.Tensor, first_choice: torch.Tensor) -> torch.Tensor:
    """Switch Transformer's auxiliary loss ``E * sum_i f_i P_i`` (unscaled by ``alpha``).

    ``probs`` ``[T, E]`` router probabilities; ``first_choice`` ``[T]`` each token's top-1
    expert. ``f_i`` (fraction of tokens whose first choice is ``i``) is not differentiable; the
    gradient flows through ``P_i`` (mean probability of ``i``).
    """
    num_experts = probs.shape[-1]
    f = F.one_hot(first_choice, num_experts).float().mean(0)  # Switch Eq. (5): f_i
    p = probs.mean(0)  # Switch Eq. (6): P_i
    return num_experts * (f * p).sum()  # Switch Eq. (4), without alpha


class MoEFeedForward(nn.Module):
    """A sparse MoE feed-forward layer (drop-in for an FFN on ``[..., d]`` tokens).

    After each forward, ``last_routing`` holds the
    [`Routing`][reference.mixture_of_experts.layers.Routing] and ``aux_loss`` the load-balancing
    loss (a tensor that carries gradients in training).
    """

    def __init__(
        self,
        dim: int,
        hidden: int,
        num_experts: int,
        k: int = 1,
        capacity_factor: float | None = 1.25,
    ) -> None:
        super().__init__()
        if not 1 <= k <= num_experts:
            raise ValueError(f"top-k must be in 1..{num_experts}, got {k}")
        self.k, self.capacity_factor = k, capacity_factor
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(ExpertFFN(dim, hidden) for _ in range(num_experts))
        self.last_routing: Routing | None = None
        self.aux_loss: torch.Tensor = torch.zeros(())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])
        r = route(tokens, self.router, self.k, self.capacity_factor)
        self.last_routing = r
        self.aux_loss = load_balancing_loss(r.probs, r.experts[:, 0])
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token_idx, choice = torch.nonzero((r.experts == e) & r.kept, as_tuple=True)
            if token_idx.numel() == 0:
                continue
            # Switch Eq. (2): y = sum over chosen, kept experts of g_e FFN_e(x)
            y = expert(tokens[token_idx]) * r.gates[token_idx, choice, None]
            out = out.index_add(0, token_idx, y)
        return out.reshape(shape)


class TimestepExpertFeedForward(nn.Module):
    """Experts chosen by noise level: expert ``i`` serves ``boundaries[i-1] <= t < boundaries[i]``.

    With ``boundaries = (500,)``: expert 0 for ``t < 500`` (low noise, detail), expert 1 for
    ``t >= 500`` (high noise, layout). ``forward(x, t)`` takes ``x`` ``[B, N, d]`` and ``t``
    ``[B]``; rows of one timestep run one expert, so a sampling step (one ``t`` for the whole
    batch) costs exactly one dense FFN.
    """

    def __init__(self, dim: int, hidden: int, boundaries: tuple[int, ...] = (500,)) -> None:
        super().__init__()
        self.register_buffer("boundaries", torch.tensor(boundaries), persistent=False)
        self.experts = nn.ModuleList(ExpertFFN(dim, hidden) for _ in range(len(boundaries) + 1))

    def expert_index(self, t: torch.Tensor) -> torch.Tensor:
        return torch.bucketize(t.contiguous(), self.boundaries, right=True)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        idx = self.expert_index(t)
        if bool((idx == idx[0]).all()):
            return self.experts[int(idx[0])](x)
        out = torch.empty_like(x)
        for e, expert in enumerate(self.experts):
            rows = torch.nonzero(idx == e).squeeze(1)
            if rows.numel():
                out[rows] = expert(x[rows])
        return out
