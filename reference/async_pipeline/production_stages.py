"""The Stable Diffusion U-Net (``UNet2DConditionModel``) as a chain of units, and its split.

Units in execution order: ``in`` (``conv_in``), ``down.0`` ... ``down.{D-1}``, ``mid`` (when the
model has one), ``up.0`` ... ``up.{U-1}``, ``out`` (norm, SiLU, ``conv_out``); a stage runs a
contiguous range of them ([`run_units`][reference.async_pipeline.production_stages.run_units]) and
hands a [`Handoff`][reference.async_pipeline.stages.Handoff] (feature map + the skips the later up
blocks still need) to the next. Each stage recomputes the time (+ class, + added) embedding of its
own timestep and processes the prompt itself, calling the model's own ``get_time_embed``,
``get_class_embed``, ``get_aug_embed`` and ``process_encoder_hidden_states``, so the blocks see
exactly the arguments ``UNet2DConditionModel.forward`` gives them: composed, the stages are the
plain forward bit for bit.

[`split_stages`][reference.async_pipeline.production_stages.split_stages] chooses the boundaries by
(3) of [`production`][reference.async_pipeline.production] from the units' FLOPs
(``torch.utils.flop_counter``, through `reference.harness.cost.count_flops`) or their measured
times, each on the unit's real input, by dynamic programming
([`balanced_stages`][reference.async_pipeline.production_stages.balanced_stages]). FLOPs are the
same on every machine; times follow what the hardware does well (on a CPU, attention at low
resolution and wide convolutions do not run at one rate), which is what the slowest stage costs.

Pitfalls: ``forward`` passes ``upsample_size`` to the up blocks only when the latent's side is not
a multiple of ``2 ** num_upsamplers``; a later stage learns that side from
[`Conditioning`][reference.async_pipeline.production_stages.Conditioning], not from its hand-off.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .stages import Handoff
from .stages import unit_names as _unet_unit_names

TECHNIQUE = "the asynchronous pipeline (stages over a U-Net's down/mid/up blocks and skips)"
"""How refusals name the technique: what it splits, hence which classes it supports."""


@dataclass
class Conditioning:
    """What every stage receives besides its hand-off: the prompt and the extra inputs of
    ``UNet2DConditionModel.forward`` that the blocks read, and the latent's height and width."""

    encoder_hidden_states: torch.Tensor
    sample_hw: tuple[int, int]
    class_labels: torch.Tensor | None = None
    timestep_cond: torch.Tensor | None = None
    attention_mask: torch.Tensor | None = None
    encoder_attention_mask: torch.Tensor | None = None
    cross_attention_kwargs: dict[str, Any] | None = None
    added_cond_kwargs: dict[str, torch.Tensor] | None = None


_NOT_SPLIT = (
    "down_block_additional_residuals",
    "mid_block_additional_residual",
    "down_intrablock_additional_residuals",
)


def conditioning(
    sample: torch.Tensor, encoder_hidden_states: torch.Tensor, **extra: Any
) -> Conditioning:
    """The `Conditioning` of one ``forward`` call (``extra``: its other keywords)."""
    for name in _NOT_SPLIT:
        if extra.pop(name, None) is not None:
            raise ValueError(f"{TECHNIQUE} does not split {name} (ControlNet/adapter residuals)")
    kwargs = extra.get("cross_attention_kwargs") or {}
    if kwargs.get("gligen") is not None:
        raise ValueError(f"{TECHNIQUE} does not split GLIGEN (cross_attention_kwargs['gligen'])")
    hw = (int(sample.shape[-2]), int(sample.shape[-1]))
    return Conditioning(encoder_hidden_states, hw, **extra)


def unit_names(unet: nn.Module) -> list[str]:
    """``["in", "down.0", ..., "mid", "up.0", ..., "out"]`` (no ``mid`` when the model has none)."""
    names = _unet_unit_names(unet)
    return names if unet.mid_block is not None else [n for n in names if n != "mid"]


def _mask_bias(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    return None if mask is None else ((1 - mask.to(dtype)) * -10000.0).unsqueeze(1)


def stage_context(
    unet: nn.Module, like: torch.Tensor, t: Any, cond: Conditioning
) -> dict[str, Any]:
    """Time (+ class, + added) embedding of ``t``, the processed prompt and the attention masks'
    biases, as ``forward`` computes them before ``conv_in``; ``like`` gives batch, dtype and
    device. Every stage computes its own."""
    emb = unet.time_embedding(unet.get_time_embed(sample=like, timestep=t), cond.timestep_cond)
    class_emb = unet.get_class_embed(sample=like, class_labels=cond.class_labels)
    if class_emb is not None:
        concat = unet.config.class_embeddings_concat
        emb = torch.cat([emb, class_emb], dim=-1) if concat else emb + class_emb
    aug = unet.get_aug_embed(
        emb=emb,
        encoder_hidden_states=cond.encoder_hidden_states,
        added_cond_kwargs=cond.added_cond_kwargs,
    )
    emb = emb + aug if aug is not None else emb
    if unet.time_embed_act is not None:
        emb = unet.time_embed_act(emb)
    ehs = unet.process_encoder_hidden_states(
        encoder_hidden_states=cond.encoder_hidden_states, added_cond_kwargs=cond.added_cond_kwargs
    )
    return {
        "temb": emb,
        "encoder_hidden_states": ehs,
        "attention_mask": _mask_bias(cond.attention_mask, like.dtype),
        "encoder_attention_mask": _mask_bias(cond.encoder_attention_mask, like.dtype),
        "cross_attention_kwargs": cond.cross_attention_kwargs,
    }


def _cross(block: nn.Module) -> bool:
    return bool(getattr(block, "has_cross_attention", False))


def run_units(
    unet: nn.Module,
    state: Handoff | torch.Tensor,
    t: Any,
    cond: Conditioning,
    start: int,
    stop: int,
    context: dict[str, Any] | None = None,
) -> Handoff:
    """Units ``[start, stop)`` of ``unet`` at timestep ``t``; ``state`` is the latent when
    ``start == 0``. After the last unit the hand-off's ``h`` is the predicted noise. ``context``:
    `stage_context` of ``t`` when already computed."""
    names = unit_names(unet)
    if not 0 <= start < stop <= len(names):
        raise ValueError(f"unit range [{start}, {stop}) is outside 0..{len(names)}")
    h, skips = (state, []) if isinstance(state, torch.Tensor) else (state.h, list(state.skips))
    ctx = stage_context(unet, h, t, cond) if context is None else context
    for name in names[start:stop]:
        h, skips = _run_unit(unet, name, h, skips, ctx, cond)
    return Handoff(h, skips)


def _run_unit(
    unet: nn.Module,
    name: str,
    h: torch.Tensor,
    skips: list[torch.Tensor],
    ctx: dict[str, Any],
    cond: Conditioning,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One unit, called as ``UNet2DConditionModel.forward`` calls it."""
    kind, _, idx = name.partition(".")
    temb, cross = ctx["temb"], {k: v for k, v in ctx.items() if k != "temb"}
    if kind == "in":
        h = unet.conv_in(2 * h - 1.0 if unet.config.center_input_sample else h)
        return h, [h]
    if kind == "down":
        block = unet.down_blocks[int(idx)]
        h, res = block(hidden_states=h, temb=temb, **(cross if _cross(block) else {}))
        return h, [*skips, *res]
    if kind == "mid":
        return unet.mid_block(h, temb, **(cross if _cross(unet.mid_block) else {})), skips
    if kind == "up":
        block = unet.up_blocks[int(idx)]
        n = len(block.resnets)
        res, skips = tuple(skips[-n:]), skips[:-n]
        final = int(idx) == len(unet.up_blocks) - 1
        sized = any(d % 2**unet.num_upsamplers for d in cond.sample_hw) and not final
        h = block(
            hidden_states=h,
            temb=temb,
            res_hidden_states_tuple=res,
            upsample_size=skips[-1].shape[2:] if sized else None,
            **(cross if _cross(block) else {}),
        )
        return h, skips
    if unet.conv_norm_out is not None:
        h = unet.conv_act(unet.conv_norm_out(h))
    return unet.conv_out(h), skips


def unit_flops(unet: nn.Module, sample: torch.Tensor, t: Any, cond: Conditioning) -> dict[str, int]:
    """FLOPs of every unit (``FlopCounterMode``) on latent ``sample``, each on its real input;
    the stage context (embeddings, prompt projection), which every stage computes once, apart."""
    from reference.harness.cost import count_flops

    names = unit_names(unet)
    out: dict[str, int] = {}
    state: Handoff | torch.Tensor = sample
    with torch.no_grad():
        ctx = stage_context(unet, sample, t, cond)
        for i, name in enumerate(names):
            out[name] = count_flops(run_units, unet, state, t, cond, i, i + 1, ctx)
            state = run_units(unet, state, t, cond, i, i + 1, ctx)
    return out


def balanced_stages(costs: Sequence[float], stages: int) -> tuple[int, ...]:
    """The ``stages - 1`` boundaries of (3): contiguous, non-empty stages whose most expensive
    one is as cheap as possible (the earliest boundaries on ties)."""
    n = len(costs)
    if not 1 <= stages <= n:
        raise ValueError(f"{stages} stages need 1..{n} units, the U-Net has {n}")
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    # best[k][j]: the cheapest slowest stage over units [0, j) cut into k stages; cut[k][j]: its
    # last boundary
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for k in range(1, stages + 1):
        for j in range(k, n + 1):
            for b in range(k - 1, j):
                value = max(best[k - 1][b], prefix[j] - prefix[b])
                if value < best[k][j]:
                    best[k][j], cut[k][j] = value, b
    bounds, j = [], n
    for k in range(stages, 1, -1):
        j = cut[k][j]
        bounds.append(j)
    return tuple(reversed(bounds))


@dataclass(frozen=True)
class StageSplit:
    """Unit names, the stages' ``[lo, hi)`` unit ranges and the units' FLOPs and times (``None``
    when not measured: boundaries given, or balanced by the other cost)."""

    units: tuple[str, ...]
    bounds: tuple[tuple[int, int], ...]
    unit_flops: tuple[int, ...] | None = None
    unit_times_ms: tuple[float, ...] | None = None

    def names(self, stage: int) -> list[str]:
        lo, hi = self.bounds[stage]
        return list(self.units[lo:hi])

    @property
    def flops(self) -> tuple[int, ...] | None:
        """Each stage's FLOPs, the ``C_k`` of (4)."""
        costs = self.unit_flops
        return None if costs is None else tuple(sum(costs[a:b]) for a, b in self.bounds)


BALANCES = ("flops", "time")
"""What (3) balances: counted FLOPs, or the units' measured times on this machine."""


@torch.no_grad()
def unit_times_ms(
    unet: nn.Module, sample: torch.Tensor, t: Any, cond: Conditioning, repeats: int = 3
) -> dict[str, float]:
    """Median wall time of every unit on its real input at this process's thread count (after
    one untimed call), the stage context apart, as the package's ``unit_times_ms`` measures."""
    names = unit_names(unet)
    ctx = stage_context(unet, sample, t, cond)
    states: list[Handoff | torch.Tensor] = [sample]
    for i in range(len(names)):
        states.append(run_units(unet, states[-1], t, cond, i, i + 1, ctx))
    out: dict[str, float] = {}
    for i, name in enumerate(names):
        samples = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            run_units(unet, states[i], t, cond, i, i + 1, ctx)
            samples.append((time.perf_counter() - start) * 1000)
        out[name] = statistics.median(samples[1:])
    return out


def split_stages(
    unet: nn.Module,
    stages: int,
    split: tuple[int, ...] | None = None,
    inputs: dict[str, Any] | None = None,
    balance: str = "flops",
) -> StageSplit:
    """``unet`` cut into ``stages`` stages: at the unit boundaries ``split``, or by (3) on the
    units' FLOPs or measured times (``balance``) on ``inputs`` (``forward`` keywords; default:
    `reference.zoo.shapes.example_inputs`, batch 1)."""
    if balance not in BALANCES:
        raise ValueError(f"unknown balance {balance!r}; known: {', '.join(BALANCES)}")
    names = unit_names(unet)
    if split is not None:
        if len(split) != stages - 1 or (split and not 0 < split[0] <= split[-1] < len(names)):
            raise ValueError(
                f"split {split} needs {stages - 1} boundaries in 1..{len(names) - 1} "
                f"({len(names)} units)"
            )
        return StageSplit(tuple(names), tuple(itertools.pairwise((0, *split, len(names)))))
    from reference.zoo.shapes import example_inputs

    kwargs = dict(inputs if inputs is not None else example_inputs(unet, batch=1))
    kwargs.pop("return_dict", None)
    sample, t = kwargs.pop("sample"), kwargs.pop("timestep")
    cond = conditioning(sample, kwargs.pop("encoder_hidden_states"), **kwargs)
    flops = tuple(unit_flops(unet, sample, t, cond).values())
    times = tuple(unit_times_ms(unet, sample, t, cond).values()) if balance == "time" else None
    cuts = balanced_stages(flops if times is None else times, stages)
    bounds = tuple(itertools.pairwise((0, *cuts, len(names))))
    return StageSplit(tuple(names), bounds, flops, times)
