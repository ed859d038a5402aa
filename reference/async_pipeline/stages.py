"""The zoo U-Net as a chain of units, split into K = 2 pipeline stages that compose exactly.

Units, in execution order: ``in`` (embedding + ``conv_in``), ``down.0`` ... ``down.{D-1}``, ``mid``,
``up.0`` ... ``up.{U-1}``, ``out`` (norm, SiLU, ``conv_out``). A split index ``k`` puts units ``[0,
k)`` in stage 1 and ``[k, end)`` in stage 2. The hand-off is a
[`Handoff`][reference.async_pipeline.stages.Handoff]: the current feature map ``h`` and the skip
tensors the remaining up blocks will concatenate. Every stage recomputes the (tiny, replicated) time
+ class embedding for *its own* timestep, so under staleness (AsyncDiff) only image features are
old, never the noise level a stage sees.

The up blocks of a U-Net are the expensive half (they run on concatenated channels at the highest
resolution), so the middle of the *unit list* is not the middle of the *compute*:
[`balanced_split`][reference.async_pipeline.stages.balanced_split] chooses ``k`` from measured unit
times.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Handoff:
    """Stage-to-stage message: feature map ``h`` and the skips still to be consumed (NCHW)."""

    h: torch.Tensor
    skips: list[torch.Tensor]

    def tensors(self) -> list[torch.Tensor]:
        return [self.h, *self.skips]

    @classmethod
    def from_tensors(cls, tensors: Sequence[torch.Tensor]) -> Handoff:
        return cls(tensors[0], list(tensors[1:]))

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors())


def unit_names(unet: nn.Module) -> list[str]:
    """``["in", "down.0", ..., "mid", "up.0", ..., "out"]`` for a diffusers ``UNet2DModel``."""
    downs = [f"down.{i}" for i in range(len(unet.down_blocks))]
    ups = [f"up.{i}" for i in range(len(unet.up_blocks))]
    return ["in", *downs, "mid", *ups, "out"]


def embedding(
    unet: nn.Module, x: torch.Tensor, t: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """``UNet2DModel``'s time + class embedding for a batch (``t`` scalar or ``[N]``)."""
    t = t.reshape(-1).expand(x.shape[0]) if t.numel() == 1 else t
    emb = unet.time_embedding(unet.time_proj(t).to(x.dtype))
    if unet.class_embedding is not None:
        emb = emb + unet.class_embedding(labels).to(x.dtype)
    return emb


def run_units(
    unet: nn.Module,
    state: Handoff | torch.Tensor,
    t: torch.Tensor,
    labels: torch.Tensor,
    start: int,
    stop: int,
) -> Handoff:
    """Run units ``[start, stop)``; ``state`` is the input image when ``start == 0``.

    Returns a [`Handoff`][reference.async_pipeline.stages.Handoff]; after the last unit its ``h`` is
    the predicted noise.
    """
    names = unit_names(unet)
    if not 0 <= start < stop <= len(names):
        raise ValueError(f"unit range [{start}, {stop}) is outside 0..{len(names)}")
    x = state if isinstance(state, torch.Tensor) else state.h
    emb = embedding(unet, x, t, labels)
    if isinstance(state, torch.Tensor):
        h, skips = state, []
    else:
        h, skips = state.h, list(state.skips)
    for name in names[start:stop]:
        kind, _, idx = name.partition(".")
        if kind == "in":
            h = unet.conv_in(h)
            skips = [h]
        elif kind == "down":
            h, res = unet.down_blocks[int(idx)](hidden_states=h, temb=emb)
            skips.extend(res)
        elif kind == "mid":
            h = unet.mid_block(h, emb)
        elif kind == "up":
            block = unet.up_blocks[int(idx)]
            n = len(block.resnets)
            res, skips = tuple(skips[-n:]), skips[:-n]
            h = block(h, res, emb)
        else:
            h = unet.conv_out(unet.conv_act(unet.conv_norm_out(h)))
    return Handoff(h, skips)


def split_forward(
    unet: nn.Module, x: torch.Tensor, t: torch.Tensor, labels: torch.Tensor, split: int
) -> torch.Tensor:
    """Stage 2 after stage 1 at split ``split``: equals ``unet(x, t, class_labels=labels)``."""
    n = len(unit_names(unet))
    return run_units(unet, run_units(unet, x, t, labels, 0, split), t, labels, split, n).h


@torch.inference_mode()
def unit_times_ms(
    unet: nn.Module, batch: int, repeats: int = 3, threads: int = 1
) -> dict[str, float]:
    """Median wall time of every unit on a batch of ``batch`` noisy inputs (``threads`` threads)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        names = unit_names(unet)
        x = torch.randn(
            batch, unet.config.in_channels, unet.config.sample_size, unet.config.sample_size
        )
        t, labels = torch.tensor(500), torch.arange(batch) % 10
        states: list[Handoff | torch.Tensor] = [x]
        for i in range(len(names)):  # the input of every unit
            states.append(run_units(unet, states[-1], t, labels, i, i + 1))
        out: dict[str, float] = {}
        for i, name in enumerate(names):
            samples = []
            for _ in range(repeats + 1):
                start = time.perf_counter()
                run_units(unet, states[i], t, labels, i, i + 1)
                samples.append((time.perf_counter() - start) * 1000)
            out[name] = sorted(samples[1:])[len(samples[1:]) // 2]
        return out
    finally:
        torch.set_num_threads(previous)


def balanced_split(times: dict[str, float]) -> int:
    """The split ``k`` minimising the slower stage, ``max(sum(t[:k]), sum(t[k:]))``."""
    values = list(times.values())
    total = sum(values)
    costs = [max(sum(values[:k]), total - sum(values[:k])) for k in range(1, len(values))]
    return 1 + min(range(len(costs)), key=costs.__getitem__)
