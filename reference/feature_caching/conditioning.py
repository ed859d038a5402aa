"""Caching the conditioning path: embeddings and cross-attention keys/values of a condition.

Both caches here are **exact**: the cached quantity depends only on the condition (and the
timestep), never on the noisy sample, so reusing it changes nothing but the cost (up to float
rounding when a matrix product is evaluated on a different number of rows).

* [`ConditionEmbeddingCache`][reference.feature_caching.conditioning.ConditionEmbeddingCache] - the
  U-Net's conditioning vector ``emb = MLP(sinusoid(t)) + E[y]`` for each ``(timestep, class)`` pair,
  in a least-recently-used (LRU) table. Every sampling run with the same schedule visits the same
  timesteps, and labels recur, so after the first run every lookup hits. This is the class-label
  analogue of caching a prompt's text-encoder output across requests.
* [`KVCache`][reference.feature_caching.conditioning.KVCache] with
  [`cross_attention_kv`][reference.feature_caching.conditioning.cross_attention_kv] /
  [`cross_attention_with_kv`][reference.feature_caching.conditioning.cross_attention_with_kv] - in a
  cross-attention layer the condition tokens ``c`` enter only through ``K = c W_k`` and ``V = c
  W_v``, which are the same at every denoising step; computing them once per condition and reusing
  them is the idea of diffusers' ``TextKVCacheConfig`` (``diffusers.hooks``, 0.42: written for one
  model family's text tokens). The zoo DiT has no cross-attention (its class label enters through
  adaLN), so [`CrossAttentionToy`][reference.feature_caching.conditioning.CrossAttentionToy] - a
  diffusers ``Attention`` layer fed with learned condition tokens of a label, random weights -
  demonstrates it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F


def condition_embedding(
    unet: nn.Module, timestep: torch.Tensor, class_labels: torch.Tensor | None, batch: int
) -> torch.Tensor:
    """Step 1 of ``UNet2DModel.forward``: ``emb = MLP(sinusoid(t)) + class_embedding(y)``."""
    timesteps = timestep
    if not torch.is_tensor(timesteps):
        timesteps = torch.tensor([timesteps], dtype=torch.long)
    elif timesteps.dim() == 0:
        timesteps = timesteps[None]
    timesteps = timesteps * torch.ones(batch, dtype=timesteps.dtype, device=timesteps.device)
    t_emb = unet.time_proj(timesteps).to(dtype=unet.dtype)
    emb = unet.time_embedding(t_emb)
    if unet.class_embedding is not None:
        if class_labels is None:
            raise ValueError("feature caching: this U-Net needs class labels")
        if unet.config.class_embed_type == "timestep":
            class_labels = unet.time_proj(class_labels)
        emb = emb + unet.class_embedding(class_labels).to(dtype=unet.dtype)
    return emb


class LRU:
    """A small least-recently-used table with hit/miss counters."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"feature caching: cache size must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self.table: OrderedDict[Hashable, object] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> object | None:
        value = self.table.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        self.table.move_to_end(key)
        return value

    def put(self, key: Hashable, value: object) -> None:
        self.table[key] = value
        self.table.move_to_end(key)
        while len(self.table) > self.maxsize:
            self.table.popitem(last=False)

    def lookup(self, keys: list[Hashable]) -> tuple[dict[Hashable, Any], list[Hashable]]:
        """The cached value of each distinct key in ``keys`` (counted as a hit or a miss) and
        the distinct keys not cached, in first-seen order."""
        found: dict[Hashable, Any] = {}
        for key in dict.fromkeys(keys):
            value = self.get(key)
            if value is not None:
                found[key] = value
        return found, [k for k in dict.fromkeys(keys) if k not in found]

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class ConditionEmbeddingCache:
    """LRU cache of a ``UNet2DModel``'s conditioning vector per ``(timestep, class)`` pair.

    ``cache(t, labels, batch)`` returns what
    [`condition_embedding`][reference.feature_caching.conditioning.condition_embedding] returns; the
    rows whose pair is not cached are computed in one batched call and stored. ``maxsize`` bounds
    the table (a 50-step schedule x 11 labels needs 550 entries to hit always).
    """

    def __init__(self, unet: nn.Module, maxsize: int = 1024) -> None:
        self.unet = unet
        self.lru = LRU(maxsize)

    def __call__(
        self, timestep: torch.Tensor, class_labels: torch.Tensor | None, batch: int
    ) -> torch.Tensor:
        t = timestep if timestep.dim() else timestep[None]
        t = t.expand(batch) if t.numel() == 1 else t
        ys = [None] * batch if class_labels is None else class_labels.tolist()
        keys = list(zip(t.tolist(), ys, strict=True))
        rows, missing = self.lru.lookup(keys)
        if missing:
            mt = torch.tensor([k[0] for k in missing], dtype=t.dtype)
            my = None if class_labels is None else torch.tensor([k[1] for k in missing])
            fresh = condition_embedding(self.unet, mt, my, len(missing))
            for key, row in zip(missing, fresh, strict=True):
                rows[key] = row
                self.lru.put(key, row)
        return torch.stack([rows[k] for k in keys])


# --------------------------------------------------------------------------- cross-attention K/V


def _check_plain_attention(attn: nn.Module) -> None:
    for name in ("spatial_norm", "group_norm", "norm_q", "norm_k", "norm_cross"):
        if getattr(attn, name, None):
            raise ValueError(f"feature caching: K/V caching here supports no {name} in Attention")
    if attn.residual_connection or attn.rescale_output_factor != 1.0:
        raise ValueError("feature caching: K/V caching here supports plain cross-attention only")


def cross_attention_kv(attn: nn.Module, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``K = c W_k`` and ``V = c W_v`` of a diffusers ``Attention``: ``[B, L, inner]`` each."""
    _check_plain_attention(attn)
    return attn.to_k(context), attn.to_v(context)


def cross_attention_with_kv(
    attn: nn.Module, hidden: torch.Tensor, key: torch.Tensor, value: torch.Tensor
) -> torch.Tensor:
    """Cross-attention of ``hidden`` ``[B, T, D]`` over precomputed ``key``/``value``.

    Follows ``AttnProcessor2_0`` (diffusers) for a plain layer: ``softmax(Q K^T / sqrt(d)) V``
    per head, then ``to_out``. Equals ``attn(hidden, encoder_hidden_states=c)`` when
    ``(key, value) = cross_attention_kv(attn, c)``.
    """
    b = hidden.shape[0]
    query = attn.to_q(hidden)
    head_dim = key.shape[-1] // attn.heads
    query = query.view(b, -1, attn.heads, head_dim).transpose(1, 2)
    key = key.view(b, -1, attn.heads, head_dim).transpose(1, 2)
    value = value.view(b, -1, attn.heads, head_dim).transpose(1, 2)
    out = F.scaled_dot_product_attention(query, key, value, dropout_p=0.0, is_causal=False)
    out = out.transpose(1, 2).reshape(b, -1, attn.heads * head_dim).to(query.dtype)
    return attn.to_out[1](attn.to_out[0](out))


class KVCache:
    """Per-condition LRU of cross-attention ``(K, V)`` rows (``[L, inner]`` each)."""

    def __init__(self, maxsize: int = 64) -> None:
        self.lru = LRU(maxsize)

    def lookup(
        self,
        attn: nn.Module,
        keys: list[Hashable],
        context_of: Callable[[list[Hashable]], torch.Tensor],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(K, V)`` for a batch with condition ``keys``; ``context_of(missing_keys)`` builds
        the condition tokens ``[M, L, C]`` of the keys not cached yet."""
        rows, missing = self.lru.lookup(keys)
        if missing:
            k_new, v_new = cross_attention_kv(attn, context_of(missing))
            for key, kr, vr in zip(missing, k_new, v_new, strict=True):
                rows[key] = (kr, vr)
                self.lru.put(key, (kr, vr))
        return (
            torch.stack([rows[k][0] for k in keys]),
            torch.stack([rows[k][1] for k in keys]),
        )


class CrossAttentionToy(nn.Module):
    """A label-conditioned cross-attention layer (toy, random weights; for K/V caching only).

    A label ``y`` becomes ``num_tokens`` learned condition tokens (like a short prompt's text
    tokens); image tokens ``[B, T, dim]`` attend over them with a diffusers ``Attention``.
    ``forward(x, labels, kv_cache)`` recomputes ``K``/``V`` when ``kv_cache`` is ``None`` and
    reuses them per label otherwise.
    """

    def __init__(
        self,
        dim: int = 96,
        cond_dim: int = 64,
        num_tokens: int = 8,
        heads: int = 3,
        num_labels: int = 11,
    ) -> None:
        super().__init__()
        from diffusers.models.attention_processor import Attention

        self.num_tokens, self.cond_dim = num_tokens, cond_dim
        self.tokens = nn.Embedding(num_labels, num_tokens * cond_dim)
        self.attn = Attention(
            query_dim=dim, cross_attention_dim=cond_dim, heads=heads, dim_head=dim // heads
        )

    def context(self, labels: torch.Tensor) -> torch.Tensor:
        """Condition tokens ``[B, num_tokens, cond_dim]`` of ``labels``."""
        return self.tokens(labels).view(-1, self.num_tokens, self.cond_dim)

    def forward(
        self, x: torch.Tensor, labels: torch.Tensor, kv_cache: KVCache | None = None
    ) -> torch.Tensor:
        if kv_cache is None:
            return self.attn(x, encoder_hidden_states=self.context(labels))
        key, value = kv_cache.lookup(
            self.attn, labels.tolist(), lambda ks: self.context(torch.tensor(ks))
        )
        return cross_attention_with_kv(self.attn, x, key, value)
