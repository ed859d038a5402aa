"""A tiny DiT-style denoiser whose feed-forward layers are dense, sparse MoE or timestep experts.

Same task and conventions as the zoo DiT (16x16x1 digits, patch 2 -> 64 tokens, epsilon prediction,
labels 0-9 plus the null class 10, cosine schedule), written out small so that the feed-forward
layer can be swapped: ``ffn="dense"`` (one FFN), ``"moe"``
([`MoEFeedForward`][reference.mixture_of_experts.denoiser.MoEFeedForward], ``num_experts`` experts,
top-``k``) or ``"timestep"``
([`TimestepExpertFeedForward`][reference.mixture_of_experts.denoiser.TimestepExpertFeedForward]).
Conditioning is adaLN-Zero as in DiT (Peebles & Xie 2023, arXiv:2212.09748): the time + class
embedding ``c`` produces per-block shift/scale/gate vectors, the gates initialised to zero.

``forward(x, t, class_labels=y, return_dict=False)`` returns ``(eps,)`` like the diffusers
models, so the harness's ``model_eps_fn`` and the zoo trainer use it unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from .layers import ExpertFFN, MoEFeedForward, TimestepExpertFeedForward


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10_000.0) -> torch.Tensor:
    """Sinusoidal embedding ``[cos(t w_i), sin(t w_i)]`` with ``w_i = max_period^(-i / half)``."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale[:, None]) + shift[:, None]


class Block(nn.Module):
    """Pre-norm transformer block with adaLN-Zero; ``ffn`` is any token-wise layer."""

    def __init__(self, dim: int, heads: int, ffn: nn.Module) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ffn = ffn
        self.ada = nn.Linear(dim, 6 * dim)
        nn.init.zeros_(self.ada.weight)
        nn.init.zeros_(self.ada.bias)

    def forward(self, x: torch.Tensor, c: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        s1, g1, a1, s2, g2, a2 = self.ada(F.silu(c)).chunk(6, dim=-1)
        h = modulate(self.norm1(x), s1, g1)
        x = x + a1[:, None] * self.attn(h, h, h, need_weights=False)[0]
        h = modulate(self.norm2(x), s2, g2)
        y = self.ffn(h, t) if isinstance(self.ffn, TimestepExpertFeedForward) else self.ffn(h)
        return x + a2[:, None] * y


def make_ffn(kind: str, dim: int, hidden: int, config: dict[str, Any]) -> nn.Module:
    """The feed-forward layer of one block: ``dense``, ``moe`` or ``timestep``."""
    if kind == "dense":
        return ExpertFFN(dim, hidden)
    if kind == "moe":
        return MoEFeedForward(
            dim,
            hidden,
            num_experts=config["num_experts"],
            k=config["top_k"],
            capacity_factor=config.get("capacity_factor"),
        )
    if kind == "timestep":
        return TimestepExpertFeedForward(dim, hidden, tuple(config["boundaries"]))
    raise ValueError(f"unknown ffn kind {kind!r}; expected dense, moe or timestep")


class TinyDiT(nn.Module):
    """Patchify -> ``depth`` blocks -> adaLN final layer -> unpatchify (epsilon prediction)."""

    def __init__(
        self,
        ffn: str = "dense",
        sample_size: int = 16,
        patch_size: int = 2,
        in_channels: int = 1,
        dim: int = 48,
        depth: int = 4,
        heads: int = 3,
        mlp_hidden: int = 192,
        num_labels: int = 11,
        **ffn_config: Any,
    ) -> None:
        super().__init__()
        self.patch, self.channels, self.size = patch_size, in_channels, sample_size
        tokens = (sample_size // patch_size) ** 2
        self.embed = nn.Conv2d(in_channels, dim, patch_size, stride=patch_size)
        self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.t_mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.label = nn.Embedding(num_labels, dim)
        self.blocks = nn.ModuleList(
            Block(dim, heads, make_ffn(ffn, dim, mlp_hidden, ffn_config)) for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ada_out = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, patch_size * patch_size * in_channels)
        for layer in (self.ada_out, self.out):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def moe_layers(self) -> list[MoEFeedForward]:
        return [m for m in self.modules() if isinstance(m, MoEFeedForward)]

    def aux_loss(self) -> torch.Tensor:
        """Mean load-balancing loss of the last forward over all MoE layers (0 if none)."""
        layers = self.moe_layers()
        if not layers:
            return torch.zeros(())
        return torch.stack([m.aux_loss for m in layers]).mean()

    def forward(
        self,
        sample: torch.Tensor,
        timestep: torch.Tensor,
        class_labels: torch.Tensor,
        return_dict: bool = False,
    ) -> tuple[torch.Tensor]:
        b = sample.shape[0]
        t = timestep.reshape(-1).expand(b) if timestep.numel() == 1 else timestep
        x = self.embed(sample).flatten(2).transpose(1, 2) + self.pos
        c = self.t_mlp(timestep_embedding(t, x.shape[-1])) + self.label(class_labels)
        for block in self.blocks:
            x = block(x, c, t)
        shift, scale = self.ada_out(F.silu(c)).chunk(2, dim=-1)
        x = self.out(modulate(self.norm(x), shift, scale))
        return (self.unpatchify(x),)

    def unpatchify(self, x: torch.Tensor) -> torch.Tensor:
        b, p, n = x.shape[0], self.patch, self.size // self.patch
        x = x.reshape(b, n, n, p, p, self.channels).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, self.channels, n * p, n * p)
