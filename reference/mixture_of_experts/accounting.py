"""What a token costs in a mixture-of-experts model: active parameters, FLOPs, expert usage."""

from __future__ import annotations

import torch
from torch import nn

from .layers import MoEFeedForward, TimestepExpertFeedForward


def active_parameters(model: nn.Module) -> int:
    """Parameters one token uses: all, minus the experts a token does not run."""
    total = sum(p.numel() for p in model.parameters())
    for m in model.modules():
        if isinstance(m, MoEFeedForward):
            per_expert = sum(p.numel() for p in m.experts[0].parameters())
            total -= (len(m.experts) - m.k) * per_expert
        elif isinstance(m, TimestepExpertFeedForward):
            per_expert = sum(p.numel() for p in m.experts[0].parameters())
            total -= (len(m.experts) - 1) * per_expert
    return total


def flops_per_token(model: nn.Module, t: int = 500) -> float:
    """Harness-counted FLOPs of one forward divided by the number of tokens."""
    from reference.harness import count_flops

    x = torch.randn(4, 1, 16, 16)
    y = torch.zeros(4, dtype=torch.long)
    with torch.no_grad():
        flops = count_flops(lambda: model(x, torch.full((4,), t), class_labels=y))
    return flops / (4 * (16 // model.patch) ** 2)


class RoutingRecorder:
    """Counts first-choice expert assignments per MoE layer during sampling."""

    def __init__(self, model: nn.Module) -> None:
        self.layers = [m for m in model.modules() if isinstance(m, MoEFeedForward)]
        self.counts = [torch.zeros(len(m.experts)) for m in self.layers]
        self.handles = [
            m.register_forward_hook(lambda mod, inp, out, i=i: self._record(i, mod))
            for i, m in enumerate(self.layers)
        ]

    def _record(self, i: int, module: MoEFeedForward) -> None:
        r = module.last_routing
        assert r is not None
        self.counts[i] += torch.bincount(r.experts[:, 0], minlength=len(module.experts))

    def fractions(self) -> list[list[float]]:
        return [(c / c.sum()).tolist() for c in self.counts]

    def close(self) -> None:
        for h in self.handles:
            h.remove()
