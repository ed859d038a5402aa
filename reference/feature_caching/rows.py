"""The rows the benchmark compares and how each samples: every row on the clipped ODE.

Idea
====
Every row solves the harness's one problem, the probability-flow ODE of the *clipped* denoiser
(`reference.harness.ode`), with DDIM on the trailing timesteps from the same noise and labels,
so that its distance to the converged solution of that noise measures only what the row changes.
A DeepCache row takes the same 50 steps as the baseline; on a cached step the U-Net recomputes
only its shallow path around the deep feature of the last full step
(`reference.feature_caching.deepcache`), and DDIM turns that noise prediction into the clipped
x̂₀. The matched-cost control takes the DDIM steps whose FLOPs equal the cached run's,

    k = round(full + cached · (1 - f))                                                     (1)

with ``f`` the fraction of a full step's FLOPs a cached step skips
(`reference.feature_caching.deepcache.matched_ddim_steps`). On the zoo DiT, diffusers' First
Block Cache and Pyramid Attention Broadcast hooks are sampled the same way
(`reference.feature_caching.dit_hooks`).

Every sampled row counts its full passes (``full_steps``): fixed by the schedule for DeepCache,
decided on the fly by First Block Cache (so it varies with the seed and has an interval).

Pitfalls
========
* A cache and a hooked model hold state: a fresh DeepCache object, and reset hooks, per run.
* The condition-embedding LRU changes no sample (it is exact, tested); its row is timed only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from reference.harness.builders import counted_variant
from reference.harness.compare import Variant

from .config import BASELINE, BASELINE_STEPS, Config
from .deepcache import DeepCacheEps, matched_ddim_steps

MakeEps = Callable[[], Callable[..., torch.Tensor]]
"""A fresh noise predictor for one sampling run (one that counts ``full_calls`` if it caches)."""


def run(make_eps: MakeEps, steps: int, noise: torch.Tensor, labels: torch.Tensor) -> tuple:
    """``steps`` DDIM steps on the clipped ODE with a fresh predictor; returns x₀ and the full
    passes it made (every step for a plain model)."""
    from reference.harness import ode

    eps = make_eps()
    reset = getattr(eps, "reset", None)
    if reset is not None:
        reset()
    x = ode.solve(eps, noise, steps=steps, labels=labels)
    return x, int(getattr(eps, "full_calls", steps))


def gflops_per_sample(make_eps: MakeEps, steps: int) -> float:
    """FLOPs per sample of one sampling run (matrix products and convolutions), on two samples."""
    from reference.harness import class_labels, count_flops, make_noise

    noise, labels = make_noise(2, seed=1), class_labels(2)
    return count_flops(lambda: run(make_eps, steps, noise, labels)) / 2 / 1e9


def row(
    cfg: Config,
    id: str,
    config: dict[str, Any],
    role: str,
    make_eps: MakeEps,
    steps: int,
    **kw: Any,
) -> Variant:
    """One row: ``steps`` steps with ``make_eps``, sampled on each seed's noise (its full passes
    counted) and timed on the latency batch (`counted_variant`; ``kw``: ``sampled``, ``timed``),
    its FLOPs per sample a fact."""

    def sampler(noise: torch.Tensor, labels: torch.Tensor) -> tuple:
        return run(make_eps, steps, noise, labels)

    facts = {"gflops": gflops_per_sample(make_eps, steps)}
    return counted_variant(cfg, id, config, role, sampler, counted="full_steps", facts=facts, **kw)


def unet_variants(cfg: Config, unet: torch.nn.Module, f: float, lru: Any) -> list[Variant]:
    """Baseline, DeepCache at every interval, the headline's with the exact condition LRU (timed
    only), and DDIM at the FLOPs of each interval (1) (the headline's timed)."""
    from reference.harness import model_eps_fn

    s, b, h = BASELINE_STEPS, cfg.branch, cfg.headline_interval

    def plain() -> Callable[..., torch.Tensor]:
        return model_eps_fn(unet)

    out = [row(cfg, BASELINE, {"method": "ddim", "steps": s}, "baseline", plain, s)]
    for n in cfg.intervals:
        config = {"method": "deepcache", "interval": n, "branch": b, "steps": s}
        out.append(row(cfg, f"dc{n}", config, "technique", lambda n=n: DeepCacheEps(unet, n, b), s))
    config = {"method": "deepcache-lru", "interval": h, "branch": b, "steps": s}
    out.append(
        row(cfg, "dc-lru", config, "technique",
            lambda: DeepCacheEps(unet, h, b, condition_cache=lru), s, sampled=False)
    )  # fmt: skip
    for n in cfg.intervals:
        k = matched_ddim_steps(s, n, f)  # (1)
        config = {"method": "ddim-matched", "steps": k, "interval": n}
        out.append(row(cfg, f"ddim-dc{n}", config, "control", plain, k, timed=n == h))
    return out


def dit_variants(cfg: Config) -> list[Variant]:
    """The zoo DiT plain (its baseline), with diffusers' First Block Cache and with Pyramid
    Attention Broadcast (each on a fresh copy)."""
    from reference import zoo
    from reference.harness import model_eps_fn
    from reference.harness.sampling import frozen

    from .dit_hooks import first_block_cache, pyramid_attention_broadcast

    s = BASELINE_STEPS
    plain = frozen(zoo.load_dit())
    fbc = first_block_cache(frozen(zoo.load_dit()), cfg.fbc_threshold)
    pab = pyramid_attention_broadcast(frozen(zoo.load_dit()), cfg.pab_skip)

    return [
        row(cfg, f"dit-{BASELINE}", {"method": "dit-ddim", "steps": s}, "baseline",
            lambda: model_eps_fn(plain), s),
        row(cfg, "dit-fbc", {"method": "first-block-cache", "threshold": cfg.fbc_threshold,
            "steps": s}, "technique", lambda: fbc, s),
        row(cfg, "dit-pab", {"method": "pyramid-attention-broadcast", "skip": cfg.pab_skip,
            "steps": s}, "technique", lambda: pab, s),
    ]  # fmt: skip
