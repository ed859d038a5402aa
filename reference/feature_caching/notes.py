"""The notes of the benchmark's result: what its rows mean, in the catalogs' words, and the two
exact caches measured beside the comparison.

Each note is an id of the package's catalogs (``note.<id>``, or of the shared ``results``
catalog) with the numbers it quotes. ``condition-lru`` quotes the headline DeepCache with the
condition-embedding LRU against the same cache without it, from the same interleaved rounds:

    gain = median T(dc_h) / median T(dc-lru)                                                (1)

``kv-cache`` measures cross-attention K/V caching on a toy layer (the zoo U-Net has no text
condition): the largest deviation from the uncached layer and the FLOPs saved over a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from reference.harness.cost import latency_note
from reference.harness.results import note

from .config import BASELINE_STEPS
from .deepcache import flop_speedup_estimate

if TYPE_CHECKING:
    from reference.harness.compare import Measured

    from .config import Config


def limit(m: Measured, f: float) -> float:
    """(6) of the bench module: the FLOP ratio of the work the headline run did, its full passes
    counted in the run (mean over the seeds; fixed by the schedule)."""
    full = m.table.summary(m.comparison.headline.row, "full_steps").value
    return flop_speedup_estimate(round(full), BASELINE_STEPS - round(full), f)


def kv_cache_demo(steps: int = BASELINE_STEPS, batch: int = 16) -> dict[str, float]:
    """Exactness and FLOPs of cross-attention K/V caching on
    [`CrossAttentionToy`][reference.feature_caching.conditioning.CrossAttentionToy]."""
    from reference.harness import count_flops
    from reference.harness.sampling import frozen

    from .conditioning import CrossAttentionToy, KVCache

    torch.manual_seed(0)
    toy = frozen(CrossAttentionToy())
    labels = torch.arange(batch) % 10
    xs = [torch.randn(batch, 64, 96) for _ in range(steps)]
    cache = KVCache()
    with torch.no_grad():
        plain = [toy(x, labels) for x in xs]
        cached = [toy(x, labels, cache) for x in xs]
        max_diff = max(float((a - b).abs().max()) for a, b in zip(plain, cached, strict=True))
        flops_plain = count_flops(lambda: [toy(x, labels) for x in xs])
        flops_cached = count_flops(lambda: [toy(x, labels, cache) for x in xs])
    return {
        "max_abs_diff": max_diff,
        "flops_saved": 1.0 - flops_cached / flops_plain,
        "hit_rate": cache.lru.hit_rate,
    }


def condition_path_share(unet: nn.Module, batch: int = 4) -> float:
    """Fraction of a full U-Net step's FLOPs spent in the time/class embedding MLP."""
    from reference.harness import count_flops

    from .conditioning import condition_embedding

    x = torch.randn(batch, unet.config.in_channels, 16, 16)
    t = torch.full((batch,), 500, dtype=torch.long)
    y = torch.zeros(batch, dtype=torch.long)
    with torch.no_grad():
        emb_flops = count_flops(condition_embedding, unet, t, y, batch)
        total = count_flops(lambda: unet(x, t, class_labels=y))
    return emb_flops / total


def notes(cfg: Config, m: Measured, more: list[Measured], extra: dict[str, Any]) -> list[Any]:
    """The result's notes, in the order the page shows them."""
    from reference.harness import quality_note

    h = cfg.headline_interval
    head = f"dc{h}"
    assert m.latency is not None  # the baseline, the caches and the control are timed
    full = round(m.table.summary(head, "full_steps").value)
    kv = kv_cache_demo(batch=min(16, cfg.batch_latency * 4))
    lo, hi = m.latency.speedup_interval("dc-lru", against=head)
    control = m.comparison.variant(f"ddim-dc{h}").config["steps"]
    out = [
        note("setup", steps=BASELINE_STEPS, n=cfg.n_quality, solution_steps=cfg.solution_steps),
        note("skipped-flops", branch=cfg.branch, f=extra["f"], interval=h,
             limit=limit(m, extra["f"]), full=full, cached=BASELINE_STEPS - full),
        note("matched-cost", control_steps=control, interval=h, steps=BASELINE_STEPS),
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        note("condition-lru", hit_rate=extra["lru"].lru.hit_rate,
             share=condition_path_share(extra["unet"]) * 100, interval=h,
             gain=m.latency.speedup_over("dc-lru", head), lo=lo, hi=hi,  # (1)
             batch=cfg.batch_latency),
        note("kv-cache", max_diff=kv["max_abs_diff"], saved=kv["flops_saved"] * 100,
             steps=BASELINE_STEPS, hit_rate=kv["hit_rate"]),
        latency_note(cfg.repeats, cfg.batch_latency),
    ]  # fmt: skip
    if more:
        fbc = more[0].table.per_seed("dit-fbc", "full_steps")
        out.append(
            note("dit-hooks", threshold=cfg.fbc_threshold, full=sum(fbc) / len(fbc),
                 lo=min(fbc), hi=max(fbc), steps=BASELINE_STEPS, skip=cfg.pab_skip)
        )  # fmt: skip
    return out
