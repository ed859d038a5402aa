"""Feature caching: reuse what the denoiser computed a step earlier or for the same condition.

Idea
====
A sampler calls the same network 20-1000 times on inputs that change a little from one step to the
next. Much of what the network computes changes even less: in a U-Net the deep, low-resolution
features ("what digit, where") move slowly, while the shallow, high-resolution ones ("edges")
follow the noise. Feature caching stores such slowly changing intermediates and reuses them for a
few steps, paying for the cheap part of the network only. Separately, whatever depends on the
*condition* alone (a prompt's text embedding, its cross-attention keys and values, a class
embedding) is identical at every step and across requests with the same condition: caching it is
exact.

DeepCache (Ma, Fang & Wang 2024, arXiv:2312.00858) on the zoo U-Net
==================================================================== A U-Net is a chain of down
blocks ``D_1 .. D_d``, a mid block and up blocks ``U_d .. U_1``, with skip connections ``D_i ->
U_i``. With cache branch ``m`` (``1`` = the outermost skip), a *full* step runs everything and
stores ``F = U_{m+1}(...)``, the input of ``U_m`` from the deep path. The next ``N - 1`` steps are
*cached* steps: they run ``D_1 .. D_m`` (to refresh the skips from the new ``x_t``), then ``U_m ..
U_1`` on ``concat(F, skip)`` - everything deeper is skipped. See
[`deepcache`][reference.feature_caching.deepcache], whose
[`unet_forward`][reference.feature_caching.deepcache.unet_forward] mirrors ``UNet2DModel.forward``
exactly (tested bit for bit) so the cut is visible.

Cost. With ``f`` the fraction of a full step's FLOPs that a cached step skips, a uniform schedule
(one full step every ``N``) costs ``1 + (N - 1)(1 - f)`` full steps per ``N`` steps, so its FLOP
ratio to plain sampling is the Amdahl figure:

    S_flop = 1 / (1 - f (1 - 1/N))                                                   (1)
    S_run  = (n_full + n_cached) / (n_full + n_cached (1 - f))                       (2)

(1) is [`speedup_limit`][reference.feature_caching.deepcache.speedup_limit]; (2), for the ``n_full``
full and ``n_cached`` cached steps a run actually did (``ceil(steps / N)`` full steps when ``N``
does not divide ``steps``), is
[`flop_speedup_estimate`][reference.feature_caching.deepcache.flop_speedup_estimate]; ``f`` is
measured with the harness FLOP counter by
[`skipped_flop_fraction`][reference.feature_caching.deepcache.skipped_flop_fraction]. Both are
*estimates* of the latency speedup, not bounds: the counter sees matrix multiplications and
convolutions only, and the rest of a step's time (normalisations, activations, the attention
softmax, per-layer overhead) is not spread over the network like its FLOPs, so a measured speedup
may land on either side. On the zoo teacher (channels 32/64/64) branch 1 skips ``f ~ 0.63``: the
16x16 level, which runs on every step, holds a large share of the compute, so ``N = 3`` is estimated
near 1.7x. Large latent U-Nets (Stable Diffusion) spend most FLOPs deeper and reach 2-4x.

The key control. DeepCache spends less compute per trajectory; so does running fewer DDIM steps. The
honest comparison is DDIM with the number of steps whose FLOPs equal the cached schedule's
([`matched_ddim_steps`][reference.feature_caching.deepcache.matched_ddim_steps]), sampled from the
same noise and timed in the same rounds: DeepCache is worth it only where it is better than that
control at no greater latency. The DeepCache paper itself makes this comparison ("under the same
throughput"). The benchmark tests both sides (quality ratio over paired noise seeds, latency ratio
with its interval).

Conditioning caches (exact)
===========================
* [`ConditionEmbeddingCache`][reference.feature_caching.conditioning.ConditionEmbeddingCache]: LRU
  of the U-Net's ``time MLP + class embedding`` per ``(timestep, class)``.
* [`KVCache`][reference.feature_caching.conditioning.KVCache]: cross-attention ``K = c W_k``, ``V =
  c W_v`` per condition - the idea of diffusers' ``TextKVCacheConfig`` (``diffusers.hooks``, 0.42;
  implemented there for one model family's text stream). The zoo DiT conditions through adaLN (no
  cross-attention), so it is shown on
  [`CrossAttentionToy`][reference.feature_caching.conditioning.CrossAttentionToy]. Lossless, small
  gain: the condition has few tokens next to the image tokens.

Production counterparts (compared in the benchmark on the zoo DiT,
[`dit_hooks`][reference.feature_caching.dit_hooks])
===================================================
* ``diffusers.hooks.apply_first_block_cache`` / ``FirstBlockCacheConfig(threshold)``: adaptive,
  skips all blocks after the first when the first block's residual barely changed (after
  TeaCache, Liu et al. 2024, arXiv:2411.19108).
* ``diffusers.hooks.apply_pyramid_attention_broadcast``: reuse attention outputs for a few steps
  (Zhao et al. 2024, arXiv:2408.12588).
* ``DeepCache`` (pip package of the paper's authors, ``DeepCacheSDHelper``) for Stable Diffusion
  pipelines; ``diffusers`` also ships FasterCache, MagCache, TaylorSeer and
  ``CacheMixin.enable_cache`` (one switch for all of them on supported models).

Pitfalls
========
* The cache is per trajectory: reset it for every sampling run, and never share it between batches
  of different size or different labels
  ([`DeepCacheEps`][reference.feature_caching.deepcache.DeepCacheEps] raises on a changed batch
  size).
* Interval ``N = 1`` must reproduce the model exactly; anything else is an approximation whose
  error grows with ``N`` and is largest where features move fastest (the first and last steps;
  DeepCache's non-uniform schedule refreshes more often there).
* FLOPs are not latency: normalisation, activations and per-layer Python overhead are not
  counted, and a cached step skips them in its own proportion, not in the FLOPs' one. On a tiny
  model on a CPU the measured speedup can sit above or below the FLOP estimate (2).
* With classifier-free guidance the conditional and unconditional rows are separate trajectories;
  the batched call used here caches both together, which is correct because they stay in the same
  rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .conditioning import (
        ConditionEmbeddingCache,
        CrossAttentionToy,
        KVCache,
        condition_embedding,
        cross_attention_kv,
        cross_attention_with_kv,
    )
    from .deepcache import (
        DeepCacheEps,
        UNetPass,
        check_supported,
        flop_speedup_estimate,
        full_steps,
        matched_ddim_steps,
        relative_cost,
        schedule_speedup_limit,
        shallow_forward,
        skipped_flop_fraction,
        speedup_limit,
        unet_forward,
    )

__all__ = [
    "ConditionEmbeddingCache",
    "CrossAttentionToy",
    "DeepCacheEps",
    "KVCache",
    "UNetPass",
    "check_supported",
    "condition_embedding",
    "cross_attention_kv",
    "cross_attention_with_kv",
    "flop_speedup_estimate",
    "full_steps",
    "matched_ddim_steps",
    "relative_cost",
    "schedule_speedup_limit",
    "shallow_forward",
    "skipped_flop_fraction",
    "speedup_limit",
    "unet_forward",
]

__getattr__ = attributes(__name__)
