"""The zoo's own small networks (the diffusion models and the VAE are stock diffusers classes).

* `DigitsClassifier` - a Conv-BN-ReLU CNN on clean 16x16 digits. Its penultimate 64-d
  features define the Fréchet digits distance (`reference.harness.quality`), and its
  Conv-BN pairs are the material of convolution/BatchNorm fusion.
* `NoisyDigitsClassifier` - a time-conditioned classifier ``p(y | x_t, t)`` trained on
  digits noised with the teacher's schedule, for classifier guidance (Dhariwal & Nichol 2021,
  arXiv:2105.05233).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


class ConvBNReLU(nn.Sequential):
    """``Conv2d(3x3, bias=False) -> BatchNorm2d -> ReLU``: the block that BN folding fuses."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=False),
        )


class DigitsClassifier(nn.Module):
    """Two stages of two Conv-BN-ReLU blocks with 2x2 max pooling, then a 64-d feature layer.

    16x16 -> (conv, conv, pool) 8x8 -> (conv, conv, pool) 4x4 -> flatten -> Linear -> ReLU
    (``features``) -> Linear (``forward`` logits).
    """

    def __init__(
        self,
        channels: tuple[int, int] = (32, 64),
        feature_dim: int = 64,
        num_classes: int = 10,
        image_size: int = 16,
    ) -> None:
        super().__init__()
        c1, c2 = channels
        self.body = nn.Sequential(
            ConvBNReLU(1, c1),
            ConvBNReLU(c1, c1),
            nn.MaxPool2d(2),
            ConvBNReLU(c1, c2),
            ConvBNReLU(c2, c2),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        self.fc = nn.Linear(c2 * (image_size // 4) ** 2, feature_dim)
        self.head = nn.Linear(feature_dim, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``[N, feature_dim]`` (post-ReLU) of images in [-1, 1]."""
        return F.relu(self.fc(self.body(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits ``[N, num_classes]``."""
        return self.head(self.features(x))


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal embedding of (integer or real) timesteps, as in the Transformer/DDPM."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=1)


class TimeConvBlock(nn.Module):
    """``Conv -> + time bias -> GroupNorm -> SiLU``."""

    def __init__(self, c_in: int, c_out: int, time_dim: int, groups: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1)
        self.time = nn.Linear(time_dim, c_out)
        self.norm = nn.GroupNorm(groups, c_out)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.conv(x) + self.time(temb)[:, :, None, None]
        return F.silu(self.norm(h))


class NoisyDigitsClassifier(nn.Module):
    """``logits = f(x_t, t)``: the classifier of classifier guidance.

    Same layout as `DigitsClassifier`, with GroupNorm instead of BatchNorm (no batch
    statistics, so gradients w.r.t. ``x_t`` of one sample do not depend on the others) and a
    sinusoidal timestep embedding added as a per-channel bias in every block.
    """

    def __init__(
        self,
        channels: tuple[int, int] = (32, 64),
        feature_dim: int = 64,
        num_classes: int = 10,
        image_size: int = 16,
        time_dim: int = 64,
    ) -> None:
        super().__init__()
        c1, c2 = channels
        self.time_dim = time_dim
        self.time_mlp = nn.Sequential(
            nn.Linear(time_dim, time_dim), nn.SiLU(), nn.Linear(time_dim, time_dim)
        )
        self.blocks = nn.ModuleList(
            [
                TimeConvBlock(1, c1, time_dim),
                TimeConvBlock(c1, c1, time_dim),
                TimeConvBlock(c1, c2, time_dim),
                TimeConvBlock(c2, c2, time_dim),
            ]
        )
        self.fc = nn.Linear(c2 * (image_size // 4) ** 2, feature_dim)
        self.head = nn.Linear(feature_dim, num_classes)

    def forward(self, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if t.dim() == 0:
            t = t.expand(x_t.shape[0])
        temb = self.time_mlp(timestep_embedding(t, self.time_dim))
        h = x_t
        for i, block in enumerate(self.blocks):
            h = block(h, temb)
            if i in (1, 3):
                h = F.max_pool2d(h, 2)
        return self.head(F.silu(self.fc(h.flatten(1))))
