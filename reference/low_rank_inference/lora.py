"""LoRA, the training-time use of low rank: adapters ``W + (alpha / r) B A`` merge for free.

LoRA (Hu et al. 2021, arXiv:2106.09685) freezes a pretrained weight ``W`` and trains a low-rank
update ``Delta W = (alpha / r) B A`` (``A: [r, in]``, ``B: [out, r]``, ``B`` initialised to zero,
so training starts from the pretrained function). The low rank saves *training* memory and
storage (only ``r (in + out)`` numbers per layer are trained and shipped), not inference
compute: before deployment the update is merged, ``W' = W + (alpha / r) B A``, and the merged
layer is an ordinary dense layer of the original size and cost. Unmerged, the adapter path adds
``r (in + out)`` multiply-adds per row. Production: ``peft`` (``LoraConfig``,
``merge_and_unload``) and diffusers' ``load_lora_weights`` / ``fuse_lora``.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


class LoRALinear(nn.Module):
    """``y = W x + b + (alpha / r) B (A x)`` around a frozen ``nn.Linear`` (Hu et al. 2021,
    Eq. (3): ``h = W0 x + Delta W x = W0 x + B A x``, scaled by ``alpha / r``)."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float | None = None) -> None:
        super().__init__()
        if not 1 <= rank <= min(base.in_features, base.out_features):
            raise ValueError(
                f"LoRA rank must be in 1..{min(base.in_features, base.out_features)}, got {rank}"
            )
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.rank = rank
        self.scaling = (alpha if alpha is not None else rank) / rank
        self.lora_a = nn.Parameter(torch.randn(rank, base.in_features) / base.in_features**0.5)
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.scaling * (x @ self.lora_a.T) @ self.lora_b.T  # Eq. (3)

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        """A plain ``nn.Linear`` with ``W + (alpha / r) B A``: same output, no adapter cost."""
        out = copy.deepcopy(self.base)
        out.weight.add_(self.scaling * self.lora_b @ self.lora_a)  # W' = W0 + (alpha / r) B A
        return out


def train_lora_demo(
    base: nn.Linear, target: nn.Linear, rank: int, steps: int = 200, seed: int = 0
) -> LoRALinear:
    """Fit a LoRA adapter on ``base`` so that it imitates ``target`` on random inputs.

    A toy stand-in for fine-tuning: only ``A`` and ``B`` are trained.
    """
    torch.manual_seed(seed)
    lora = LoRALinear(copy.deepcopy(base), rank)
    opt = torch.optim.Adam([lora.lora_a, lora.lora_b], lr=1e-2)
    for _ in range(steps):
        x = torch.randn(64, base.in_features)
        loss = (lora(x) - target(x).detach()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return lora.eval()
