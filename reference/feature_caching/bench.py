"""Benchmark and demo of :mod:`reference.feature_caching` (the technique contract of
:mod:`reference.harness.cli`).

Rows: the zoo U-Net with plain DDIM (baseline), DeepCache at each interval (technique), the same
with the exact condition-embedding LRU, and DDIM with the number of steps whose FLOPs equal each
cached schedule (control); on the zoo DiT, plain DDIM (reference) and diffusers' First Block Cache
and Pyramid Attention Broadcast hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from reference.harness.cli import Option, at_least, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)
from reference.harness.sampling import frozen

from .conditioning import ConditionEmbeddingCache, CrossAttentionToy, KVCache
from .deepcache import (
    DeepCacheEps,
    check_supported,
    full_steps,
    matched_ddim_steps,
    relative_cost,
    schedule_speedup_limit,
    skipped_flop_fraction,
    speedup_limit,
)
from .dit_hooks import HookedDiTEps, first_block_cache, pyramid_attention_broadcast

SLUG = "feature-caching"


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    steps: int = 50
    intervals: tuple[int, ...] = (2, 3, 5)
    headline_interval: int = 3
    branch: int = 1
    n_quality: int = 256
    batch_latency: int = 16
    repeats: int = 15
    warmup: int = 2
    fbc_threshold: float = 0.1
    pab_skip: int = 3
    dit: bool = True

    def validate(self) -> None:
        at_least(self, steps=1)
        if not self.intervals or any(n < 1 for n in self.intervals):
            raise ValueError(f"--intervals must be >= 1, got {self.intervals}")
        if self.headline_interval not in self.intervals:
            raise ValueError(
                f"--headline-interval {self.headline_interval} is not one of --intervals "
                f"{self.intervals}"
            )
        if self.branch < 1:
            raise ValueError(f"--branch must be >= 1 (1 = the shallowest skip), got {self.branch}")
        if self.n_quality < 2 or self.batch_latency < 1:
            raise ValueError("need --n-quality >= 2 and --batch-latency >= 1")
        if self.repeats < 1 or self.warmup < 0:
            raise ValueError("need --repeats >= 1 and --warmup >= 0")


FULL = Config()
QUICK = Config(
    steps=9, intervals=(3,), n_quality=20, batch_latency=4, repeats=2, warmup=0, dit=True
)
DEMO = Config(steps=50, intervals=(3,), n_quality=64, batch_latency=8, repeats=2, warmup=1)
OPTIONS = (
    Option("steps"),
    Option("intervals", int_tuple, "N,N,..."),
    Option("headline_interval"),
    Option("branch"),
    Option("n_quality"),
    Option("batch_latency"),
    Option("repeats"),
)


def _metrics() -> dict[str, Metric]:
    return metrics(
        "latency_ms",
        "speedup",
        "fd_digits",
        "accuracy",
        "psnr_vs_baseline",
        "gflops",
        full_steps=Metric("", "lower"),
    )


@dataclass
class Variant:
    """One sampling configuration: its denoiser factory and how many DDIM steps it runs."""

    key: str
    config: dict[str, object]
    role: str
    make_eps: Callable[[], Callable[..., torch.Tensor]]
    steps: int
    timed: bool = True
    full_passes: int | None = None


def _runner(v: Variant, noise: torch.Tensor, labels: torch.Tensor) -> Callable[[], torch.Tensor]:
    from reference import zoo
    from reference.harness import sample

    def run() -> torch.Tensor:
        eps = v.make_eps()
        if isinstance(eps, HookedDiTEps):
            eps.reset()
        return sample(eps, zoo.teacher_scheduler(), noise, steps=v.steps, labels=labels)

    return run


def _gflops_per_sample(v: Variant, noise: torch.Tensor, labels: torch.Tensor) -> float:
    from reference.harness import count_flops

    return count_flops(_runner(v, noise, labels)) / noise.shape[0] / 1e9


def unet_variants(unet: nn.Module, cfg: Config, f: float) -> list[Variant]:
    """Baseline, DeepCache at every interval, + condition LRU, and the matched-cost DDIM runs."""
    from reference.harness import model_eps_fn

    s, b = cfg.steps, cfg.branch
    cond_cache = ConditionEmbeddingCache(unet, maxsize=4096)
    out = [
        Variant(
            "base",
            {"method": "ddim", "steps": s},
            "baseline",
            lambda: model_eps_fn(unet),
            s,
        )
    ]
    for n in cfg.intervals:
        out.append(
            Variant(
                f"dc{n}",
                {"method": "deepcache", "interval": n, "branch": b, "steps": s},
                "technique",
                lambda n=n: DeepCacheEps(unet, n, b),
                s,
                full_passes=full_steps(s, n),
            )
        )
    n = cfg.headline_interval
    out.append(
        Variant(
            "dc-lru",
            {"method": "deepcache-lru", "interval": n, "branch": b, "steps": s},
            "technique",
            lambda n=n: DeepCacheEps(unet, n, b, condition_cache=cond_cache),
            s,
            full_passes=full_steps(s, n),
        )
    )
    for n in cfg.intervals:
        k = matched_ddim_steps(s, n, f)
        out.append(
            Variant(
                f"ddim{n}",
                {"method": "ddim-matched", "steps": k, "interval": n},
                "control",
                lambda: model_eps_fn(unet),
                k,
                timed=n == cfg.headline_interval,
            )
        )
    return out


def dit_variants(cfg: Config) -> list[Variant]:
    """The zoo DiT plain, with diffusers' First Block Cache, and with PAB (fresh copies)."""
    from reference import zoo
    from reference.harness import model_eps_fn

    s = cfg.steps
    plain = frozen(zoo.load_dit())
    fbc = first_block_cache(frozen(zoo.load_dit()), cfg.fbc_threshold)
    pab = pyramid_attention_broadcast(frozen(zoo.load_dit()), cfg.pab_skip)
    return [
        Variant(
            "dit",
            {"method": "dit-ddim", "steps": s},
            "reference",
            lambda: model_eps_fn(plain),
            s,
        ),
        Variant(
            "dit-fbc",
            {"method": "first-block-cache", "threshold": cfg.fbc_threshold, "steps": s},
            "technique",
            lambda: fbc,
            s,
        ),
        Variant(
            "dit-pab",
            {"method": "pyramid-attention-broadcast", "skip": cfg.pab_skip, "steps": s},
            "technique",
            lambda: pab,
            s,
        ),
    ]


def kv_cache_demo(steps: int = 50, batch: int = 16) -> dict[str, float]:
    """Exactness and FLOPs of cross-attention K/V caching on :class:`CrossAttentionToy`."""
    from reference.harness import count_flops

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


def _figure(
    path: Path,
    intervals: Sequence[int],
    measured: dict[int, float],
    f: float,
    cost_fd: dict[str, list[tuple[float, float]]],
) -> Path:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.5, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    grid = np.linspace(1, max(intervals) + 1, 100)
    ax1.plot(grid, [speedup_limit(f, float(n)) for n in grid], "--", color="#8c8c8c")
    ax1.annotate(f"1/(1 - f(1 - 1/N)), f = {f:.2f}", (1.05, 1.02), fontsize=8)
    ns = sorted(measured)
    ax1.plot(ns, [measured[n] for n in ns], "o-", color="#dd8452", label="measured")
    ax1.set_xlabel("cache interval N")
    ax1.set_ylabel("speedup vs DDIM (latency)")
    ax1.grid(alpha=0.3)
    ax1.legend()
    for label, pts in cost_fd.items():
        pts = sorted(pts)
        ax2.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label)
    ax2.set_xlabel("compute (full-step units, FLOPs)")
    ax2.set_ylabel("FDD (lower is better)")
    ax2.grid(alpha=0.3)
    ax2.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def _teacher(cfg: Config) -> tuple[nn.Module, float]:
    """The frozen zoo teacher, checked for caching at ``cfg.branch``, and the fraction of its
    FLOPs a cached step skips there."""
    from reference import zoo

    unet = frozen(zoo.load_teacher())
    check_supported(unet, cfg.branch)
    return unet, skipped_flop_fraction(unet, cfg.branch)


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure every variant; write the figures into ``out``."""
    from tqdm import tqdm

    from reference.harness import (
        class_accuracy,
        class_labels,
        compare_latency,
        fdd_floor,
        frechet_digits_distance,
        make_noise,
        psnr_per_sample,
        save_grid,
    )

    unet, f = _teacher(cfg)
    variants = unet_variants(unet, cfg, f) + (dit_variants(cfg) if cfg.dit else [])
    by_key = {v.key: v for v in variants}

    noise_q, labels_q = make_noise(cfg.n_quality, seed=0), class_labels(cfg.n_quality)
    samples: dict[str, torch.Tensor] = {}
    fbc_full: int | None = None
    for v in tqdm(variants, desc="quality samples", leave=False):
        samples[v.key] = _runner(v, noise_q, labels_q)()
        if v.key == "dit-fbc":
            fbc_full = v.make_eps().full_calls  # type: ignore[attr-defined]
    noise_f, labels_f = make_noise(2, seed=1), class_labels(2)
    gflops = {v.key: _gflops_per_sample(v, noise_f, labels_f) for v in variants}

    noise_l, labels_l = make_noise(cfg.batch_latency, seed=2), class_labels(cfg.batch_latency)
    groups = [[v for v in variants if v.timed and not v.key.startswith("dit")]]
    if cfg.dit:
        groups.append([v for v in variants if v.key.startswith("dit")])
    timing = []
    for group in tqdm(groups, desc="latency groups", leave=False):
        runs = {v.key: _runner(v, noise_l, labels_l) for v in group}
        with torch.inference_mode():
            timing.append(compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup))
    lat = {k: s for cmp in timing for k, s in cmp.stats.items()}
    speed = {k: s for cmp in timing for k, s in cmp.speedup.items()}
    speed_ci = {k: cmp.speedup_interval(k) for cmp in timing for k in cmp.stats}

    fd = {k: frechet_digits_distance(x) for k, x in samples.items()}
    rows = []
    for v in variants:
        ref = samples["dit" if v.key.startswith("dit") else "base"]
        full = fbc_full if v.key == "dit-fbc" and fbc_full is not None else v.full_passes
        rows.append(
            Row(
                v.key,
                v.config,
                v.role,  # type: ignore[arg-type]
                {
                    "latency_ms": lat[v.key].median_ms if v.key in lat else None,
                    "speedup": speed.get(v.key),
                    "fd_digits": fd[v.key],
                    "accuracy": class_accuracy(samples[v.key], labels_q),
                    "psnr_vs_baseline": float(psnr_per_sample(samples[v.key], ref).mean()),
                    "gflops": gflops[v.key],
                    "full_steps": float(full if full is not None else v.steps),
                },
                intervals={"speedup": speed_ci[v.key]} if v.key in speed_ci else {},
                spread={"latency_ms": lat[v.key].iqr_ms} if v.key in lat else {},
            )
        )

    h = cfg.headline_interval
    head, ctrl = f"dc{h}", by_key[f"ddim{h}"]
    limit = schedule_speedup_limit(cfg.steps, h, f)
    quality_ratio = fd[head] / fd["base"]
    kv = kv_cache_demo(steps=cfg.steps, batch=min(16, cfg.batch_latency * 4))
    share = condition_path_share(unet)
    lru = by_key["dc-lru"].make_eps().condition_cache  # type: ignore[attr-defined]

    figures = [Figure(f"{SLUG}.png", "speed-and-quality"), Figure(f"{SLUG}-samples.png", "samples")]
    measured = {1: 1.0, **{n: speed[f"dc{n}"] for n in cfg.intervals if f"dc{n}" in speed}}
    cost_fd = {
        "DeepCache": [(1.0 * cfg.steps, fd["base"])]
        + [(relative_cost(cfg.steps, n, f), fd[f"dc{n}"]) for n in cfg.intervals],
        "DDIM": [(1.0 * cfg.steps, fd["base"])]
        + [(float(by_key[f"ddim{n}"].steps), fd[f"ddim{n}"]) for n in cfg.intervals],
    }
    _figure(out / figures[0].file, cfg.intervals, measured, f, cost_fd)
    show = min(20, cfg.n_quality)
    grid = torch.cat([samples[k][:show] for k in ("base", head, f"ddim{h}")])
    save_grid(grid, out / figures[1].file, nrow=min(10, show))

    n_full = full_steps(cfg.steps, h)
    notes = [
        note(
            "skipped-flops",
            branch=cfg.branch,
            f=f,
            interval=h,
            limit=limit,
            full=n_full,
            cached=cfg.steps - n_full,
        ),
        note("matched-cost", control_steps=ctrl.steps, interval=h, steps=cfg.steps),
        note("fdd-at-n", n=cfg.n_quality, floor=fdd_floor(cfg.n_quality)),
        note(
            "condition-lru",
            hit_rate=lru.lru.hit_rate,
            share=share * 100,
            interval=h,
            gain=speed["dc-lru"] / speed[head],
            batch=cfg.batch_latency,
        ),
        note(
            "kv-cache",
            max_diff=kv["max_abs_diff"],
            saved=kv["flops_saved"] * 100,
            steps=cfg.steps,
            hit_rate=kv["hit_rate"],
        ),
        latency_note(cfg.repeats, cfg.batch_latency),
    ]
    if cfg.dit:
        notes.append(
            note(
                "dit-hooks",
                threshold=cfg.fbc_threshold,
                full=fbc_full or 0,
                steps=cfg.steps,
                skip=cfg.pab_skip,
            )
        )
    aims = [
        aim("speedup", speed[head], 1.6, ">=", interval=speed_ci[head], interval_n=h),
        aim("quality", quality_ratio, 1.15, "<=", interval_n=h),
        aim(
            "beats-control-quality",
            fd[head] / fd[f"ddim{h}"],
            1.0,
            "<",
            interval_n=h,
            control_steps=ctrl.steps,
        ),
    ]
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            skipped_flop_fraction=round(f, 4),
            fbc_threshold=cfg.fbc_threshold if cfg.dit else None,
            pab_skip=cfg.pab_skip if cfg.dit else None,
        ),
        metrics=_metrics(),
        rows=rows,
        headline=speedup_headline(
            head, timing[0], limit=limit, limit_kind="bound", quality_ratio=quality_ratio
        ),
        aims=aims,
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Baseline vs DeepCache vs matched-cost DDIM: a small table and a sample grid."""
    from reference.harness import (
        class_labels,
        compare_latency,
        frechet_digits_distance,
        make_noise,
        save_grid,
    )

    unet, f = _teacher(cfg)
    variants = [v for v in unet_variants(unet, cfg, f) if v.key != "dc-lru"]
    noise, labels = make_noise(cfg.n_quality, seed=0), class_labels(cfg.n_quality)
    runs = {v.key: _runner(v, noise, labels) for v in variants}
    with torch.inference_mode():
        lat = compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup)
        xs = {key: fn() for key, fn in runs.items()}
    h = cfg.headline_interval
    print(f"f = {f:.3f}, limit {schedule_speedup_limit(cfg.steps, h, f):.2f}x")
    print(f"{'row':10s} {'latency ms':>11s} {'speedup':>8s} {'FDD':>7s}")
    for v in variants:
        fd = frechet_digits_distance(xs[v.key])
        print(f"{v.key:10s} {lat.median_ms(v.key):11.1f} {lat.speedup[v.key]:8.2f} {fd:7.3f}")
    path = save_grid(torch.cat([xs[v.key][:10] for v in variants]), out / f"{SLUG}-demo.png")
    print(f"{path} ({', '.join(v.key for v in variants)})")
