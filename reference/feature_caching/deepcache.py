"""DeepCache on a diffusers ``UNet2DModel``: a readable forward, its shallow branch, the cache.

The forward pass of [`unet_forward`][reference.feature_caching.deepcache.unet_forward] mirrors
``UNet2DModel.forward`` (diffusers 0.42) step by step - condition embedding, ``conv_in``, down
blocks, mid block, up blocks, output head - so that the place where DeepCache cuts the network is
visible in code. With ``branch = m`` (DeepCache's "skip branch" index, 1 = the outermost), a *full*
step records the input of up block ``U_m`` (the output of everything deeper, which is the part that
changes slowly between adjacent denoising steps); a *cached* step runs only

* the condition embedding (time + class; cheap, see
  [`conditioning`][reference.feature_caching.conditioning] for caching it too),
* ``conv_in`` and the first ``m`` down blocks ``D_1 .. D_m`` **without** ``D_m``'s downsampler
  (its output only fed the deeper path), which recompute the skip connections, and
* the last ``m`` up blocks ``U_m .. U_1`` on the cached deep feature plus the fresh skips,
  followed by the output head.

[`DeepCacheEps`][reference.feature_caching.deepcache.DeepCacheEps] is the sampler-facing denoiser
(the harness's ``EpsFn`` protocol): every ``interval``-th call (0, N, 2N, ...) is a full step that
refreshes the cache, the calls in between are cached steps. ``interval = 1`` performs only full
steps and is therefore *exactly* the plain model (tested bit for bit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .conditioning import ConditionEmbeddingCache, condition_embedding

# --------------------------------------------------------------------------- checks


def check_supported(unet: nn.Module, branch: int = 1) -> None:
    """Raise ``ValueError`` unless
    [`unet_forward`][reference.feature_caching.deepcache.unet_forward] mirrors ``unet`` exactly.

    Supported: the plain ``UNet2DModel`` layouts without the score-SDE skip path
    (``skip_conv``), positional time embedding, ``conv`` downsamplers, class embedding optional.
    """
    config = getattr(unet, "config", None)
    if config is None or not hasattr(unet, "down_blocks") or not hasattr(unet, "up_blocks"):
        raise ValueError(f"feature caching: {type(unet).__name__} is not a diffusers UNet2DModel")
    if config.time_embedding_type == "fourier":
        raise ValueError("feature caching: Fourier time embedding is not supported")
    for block in [*unet.down_blocks, *unet.up_blocks]:
        if hasattr(block, "skip_conv"):
            raise ValueError(f"feature caching: {type(block).__name__} (skip_conv) not supported")
        if getattr(block, "downsample_type", None) not in (None, "conv"):
            raise ValueError(f"feature caching: {type(block).__name__} with resnet downsampler")
    if not 1 <= branch <= len(unet.down_blocks):
        raise ValueError(
            f"feature caching: branch must be in 1..{len(unet.down_blocks)}, got {branch}"
        )


# --------------------------------------------------------------------------- the pieces


def down_block(
    block: nn.Module, hidden: torch.Tensor, temb: torch.Tensor, downsample: bool = True
) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """``DownBlock2D`` / ``AttnDownBlock2D`` forward; ``downsample=False`` stops before it.

    Returns the block output and the skip tensors it hands to the up path (one per resnet, plus
    the downsampled tensor when the downsampler runs).
    """
    skips: tuple[torch.Tensor, ...] = ()
    attentions = getattr(block, "attentions", None) or [None] * len(block.resnets)
    for resnet, attn in zip(block.resnets, attentions, strict=True):
        hidden = resnet(hidden, temb)
        if attn is not None:
            hidden = attn(hidden)
        skips += (hidden,)
    if downsample and block.downsamplers is not None:
        for downsampler in block.downsamplers:
            hidden = downsampler(hidden)
        skips += (hidden,)
    return hidden, skips


def up_blocks(
    unet: nn.Module,
    blocks: list[nn.Module],
    hidden: torch.Tensor,
    skips: tuple[torch.Tensor, ...],
    temb: torch.Tensor,
) -> torch.Tensor:
    """Run ``blocks`` (a suffix of ``unet.up_blocks``), each popping its skips from the end."""
    for block in blocks:
        n = len(block.resnets)
        res, skips = skips[-n:], skips[:-n]
        hidden = block(hidden, res, temb)
    return hidden


def output_head(unet: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """Step 6 of ``UNet2DModel.forward``: GroupNorm, SiLU, ``conv_out``."""
    return unet.conv_out(unet.conv_act(unet.conv_norm_out(hidden)))


@dataclass
class UNetPass:
    """A full forward: the prediction and the deep feature DeepCache keeps (input of ``U_m``)."""

    eps: torch.Tensor
    deep_feature: torch.Tensor


def unet_forward(
    unet: nn.Module,
    sample: torch.Tensor,
    timestep: torch.Tensor,
    class_labels: torch.Tensor | None = None,
    *,
    branch: int = 1,
    emb: torch.Tensor | None = None,
) -> UNetPass:
    """The full ``UNet2DModel`` forward, written out; also returns the feature to cache.

    Equals ``unet(sample, timestep, class_labels).sample`` exactly. ``emb`` may be passed in (from a
    [`ConditionEmbeddingCache`][reference.feature_caching.deepcache.ConditionEmbeddingCache]);
    otherwise it is computed here.
    """
    if emb is None:
        emb = condition_embedding(unet, timestep, class_labels, sample.shape[0])
    if unet.config.center_input_sample:
        sample = 2 * sample - 1.0
    hidden = unet.conv_in(sample)
    skips: tuple[torch.Tensor, ...] = (hidden,)
    for block in unet.down_blocks:
        hidden, res = down_block(block, hidden, emb)
        skips += res
    if unet.mid_block is not None:
        hidden = unet.mid_block(hidden, emb)
    deep_blocks = list(unet.up_blocks)[:-branch]
    hidden = up_blocks(unet, deep_blocks, hidden, skips, emb)
    deep_feature = hidden
    consumed = sum(len(b.resnets) for b in deep_blocks)
    skips = skips[: len(skips) - consumed]
    hidden = up_blocks(unet, list(unet.up_blocks)[-branch:], hidden, skips, emb)
    return UNetPass(output_head(unet, hidden), deep_feature)


def shallow_forward(
    unet: nn.Module,
    sample: torch.Tensor,
    emb: torch.Tensor,
    deep_feature: torch.Tensor,
    *,
    branch: int = 1,
) -> torch.Tensor:
    """A DeepCache *cached* step: recompute only the skip branch, reuse ``deep_feature``.

    Runs ``conv_in``, down blocks ``D_1 .. D_m`` (the last without its downsampler), then up
    blocks ``U_m .. U_1`` on ``deep_feature`` and the output head.
    """
    if unet.config.center_input_sample:
        sample = 2 * sample - 1.0
    hidden = unet.conv_in(sample)
    skips: tuple[torch.Tensor, ...] = (hidden,)
    for i, block in enumerate(list(unet.down_blocks)[:branch]):
        hidden, res = down_block(block, hidden, emb, downsample=i < branch - 1)
        skips += res
    hidden = up_blocks(unet, list(unet.up_blocks)[-branch:], deep_feature, skips, emb)
    return output_head(unet, hidden)


# --------------------------------------------------------------------------- the sampler side


class DeepCacheEps:
    """DeepCache as a denoiser ``eps_fn(x_t, t, labels)`` for `reference.harness.sample`.

    Call ``k`` (counted from 0 since construction or `reset`) is a full step when
    ``k % interval == 0`` and a cached step otherwise. The cache holds one tensor (the deep
    feature of the last full step, ``[batch, C, H, W]``), so the batch and the labels must stay
    the same between a full step and the cached steps that follow it (true inside one sampling
    loop; a changed batch size raises). Build a fresh object (or `reset`) per sampling run.

    Args:
        unet: a diffusers ``UNet2DModel`` (checked by
            [`check_supported`][reference.feature_caching.deepcache.check_supported]).
        interval: DeepCache's ``N``; 1 = no caching (exactly the plain model).
        branch: the skip branch ``m`` (1 = shallowest, the cheapest cached step).
        condition_cache: optional
            [`ConditionEmbeddingCache`][reference.feature_caching.deepcache.ConditionEmbeddingCache]
            for the embedding.
    """

    def __init__(
        self,
        unet: nn.Module,
        interval: int,
        branch: int = 1,
        condition_cache: ConditionEmbeddingCache | None = None,
    ) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ValueError(f"feature caching: interval must be an integer >= 1, got {interval}")
        check_supported(unet, branch)
        self.unet, self.interval, self.branch = unet, interval, branch
        self.condition_cache = condition_cache
        self.reset()

    def reset(self) -> None:
        """Forget the cached feature and restart the full/cached schedule."""
        self.calls = 0
        self.full_calls = 0
        self._deep: torch.Tensor | None = None

    def __call__(self, x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.condition_cache is not None:
            emb = self.condition_cache(t, labels, x_t.shape[0])
        else:
            emb = condition_embedding(self.unet, t, labels, x_t.shape[0])
        full = self.calls % self.interval == 0 or self._deep is None
        self.calls += 1
        if not full and self._deep is not None and self._deep.shape[0] != x_t.shape[0]:
            raise ValueError("feature caching: batch size changed between cached steps")
        if full:
            self.full_calls += 1
            out = unet_forward(self.unet, x_t, t, labels, branch=self.branch, emb=emb)
            self._deep = out.deep_feature
            return out.eps
        assert self._deep is not None
        return shallow_forward(self.unet, x_t, emb, self._deep, branch=self.branch)


# --------------------------------------------------------------------------- cost model


def full_steps(steps: int, interval: int) -> int:
    """Number of full steps in a uniform DeepCache schedule: ``ceil(steps / interval)``."""
    return math.ceil(steps / interval)


def skipped_flop_fraction(unet: nn.Module, branch: int = 1, batch: int = 4) -> float:
    """``f``: the fraction of a full step's FLOPs that a cached step does not spend.

    Counted with the harness FLOP counter (matmul and convolution FLOPs) on one full and one
    cached forward of ``batch`` random inputs.
    """
    from reference.harness import count_flops

    size = unet.config.sample_size
    size = (size, size) if isinstance(size, int) else tuple(size)
    x = torch.randn(batch, unet.config.in_channels, *size)
    t = torch.full((batch,), 500, dtype=torch.long)
    y = torch.zeros(batch, dtype=torch.long) if unet.class_embedding is not None else None
    with torch.no_grad():
        emb = condition_embedding(unet, t, y, batch)
        deep = unet_forward(unet, x, t, y, branch=branch).deep_feature
        full = count_flops(unet_forward, unet, x, t, y, branch=branch, emb=emb)
        cached = count_flops(shallow_forward, unet, x, emb, deep, branch=branch)
    return 1.0 - cached / full


def speedup_limit(f: float, interval: int) -> float:
    """Asymptotic FLOP estimate of uniform caching: ``1 / (1 - f (1 - 1/N))`` (Amdahl's law with
    every step costing its FLOPs; an estimate of the latency speedup, not a bound)."""
    return 1.0 / (1.0 - f * (1.0 - 1.0 / interval))


def relative_cost(steps: int, interval: int, f: float) -> float:
    """Cost of a DeepCache run in full-step units: ``full + cached * (1 - f)``."""
    n_full = full_steps(steps, interval)
    return n_full + (steps - n_full) * (1.0 - f)


def flop_speedup_estimate(full: int, cached: int, f: float) -> float:
    """FLOP ratio of the work a run did: plain DDIM's ``full + cached`` full passes over the
    cached run's ``full + cached * (1 - f)``.

    An *estimate* of the latency speedup, not a bound: the FLOP counter sees only matrix
    multiplications and convolutions, and the normalisations, activations, attention softmax and
    per-layer overhead that latency also pays are not spread over the network like the FLOPs, so
    the measured speedup can land on either side of it.
    """
    if full < 1 or cached < 0:
        raise ValueError(f"feature caching: need full >= 1 and cached >= 0, got {full}, {cached}")
    return (full + cached) / (full + cached * (1.0 - f))


def schedule_speedup_limit(steps: int, interval: int, f: float) -> float:
    """[`flop_speedup_estimate`][reference.feature_caching.deepcache.flop_speedup_estimate] of the
    uniform schedule: ``steps / relative_cost``.

    With ``steps`` not a multiple of ``N`` the run does ``ceil(steps / N)`` full steps, one more
    than the asymptotic [`speedup_limit`][reference.feature_caching.deepcache.speedup_limit]
    assumes.
    """
    n_full = full_steps(steps, interval)
    return flop_speedup_estimate(n_full, steps - n_full, f)


def matched_ddim_steps(steps: int, interval: int, f: float) -> int:
    """Plain DDIM steps with the same FLOPs as the DeepCache run (rounded, at least 1)."""
    return max(1, round(relative_cost(steps, interval, f)))
