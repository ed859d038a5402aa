"""Benchmark and demo of [`reference.feature_caching`][reference.feature_caching] (the technique
contract of `reference.harness.cli`).

Rows: the zoo U-Net with plain DDIM (baseline), DeepCache at each interval (technique), the same
with the exact condition-embedding LRU (timed only: its samples are DeepCache's), and DDIM with the
number of steps whose FLOPs equal each cached schedule (control; the headline interval's one is
timed); on the zoo DiT, plain DDIM (reference) and diffusers' First Block Cache and Pyramid
Attention Broadcast hooks; the class-balanced real digits (reference). Quality over paired noise
seeds (`over_seeds`); the headline's limit is the FLOP estimate of
the full and cached steps the run counted, which is not a bound on latency.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from reference.harness.cli import Option, at_least, check_seeds, int_tuple
from reference.harness.cost import LatencyComparison, latency_note
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
from reference.harness.seeds import N_QUALITY, SEEDS, SeedTable

from .conditioning import ConditionEmbeddingCache, CrossAttentionToy, KVCache
from .deepcache import (
    DeepCacheEps,
    check_supported,
    flop_speedup_estimate,
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
    n_quality: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
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
        at_least(self, n_quality=10, batch_latency=1, repeats=2, warmup=0)
        check_seeds(self.seeds)


FULL = Config()
QUICK = Config(
    steps=9,
    intervals=(3,),
    n_quality=20,
    seeds=(0, 1),
    batch_latency=4,
    repeats=2,
    warmup=0,
    dit=True,
)
DEMO = Config(steps=50, intervals=(3,), n_quality=64, batch_latency=8, repeats=2, warmup=1)
OPTIONS = (
    Option("steps"),
    Option("intervals", int_tuple, "N,N,..."),
    Option("headline_interval"),
    Option("branch"),
    Option("n_quality"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("batch_latency"),
    Option("repeats"),
)


def _metrics() -> dict[str, Metric]:
    return metrics(
        "latency_ms",
        "speedup",
        "fd_digits",
        "kid_digits",
        "accuracy",
        "diversity",
        "psnr_vs_baseline",
        "gflops",
        full_steps=Metric("", "lower"),
    )


@dataclass
class Variant:
    """One sampling configuration: its denoiser factory and how many DDIM steps it runs.

    ``quality=False``: timed only (its samples equal another row's, see the benchmark).
    """

    key: str
    config: dict[str, object]
    role: str
    make_eps: Callable[[], Callable[..., torch.Tensor]]
    steps: int
    timed: bool = True
    full_passes: int | None = None
    quality: bool = True


@dataclass
class Work:
    """What the quality runs did: full denoiser passes and calls per seed, and the samples of
    the first seed (for the figure)."""

    full: dict[str, list[int]] = field(default_factory=dict)
    calls: dict[str, list[int]] = field(default_factory=dict)
    shown: dict[str, torch.Tensor] = field(default_factory=dict)

    def record(self, key: str, eps: object, steps: int) -> None:
        """Count the passes of one run (a plain model runs every step in full)."""
        self.full.setdefault(key, []).append(int(getattr(eps, "full_calls", steps)))
        self.calls.setdefault(key, []).append(int(getattr(eps, "calls", steps)))


def _sample_with(
    v: Variant, noise: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, object]:
    """One sampling run of ``v`` from ``noise`` with a fresh cache: the samples and the denoiser
    (which counted its full passes)."""
    from reference import zoo
    from reference.harness import sample

    eps = v.make_eps()
    if isinstance(eps, HookedDiTEps):
        eps.reset()
    return sample(eps, zoo.teacher_scheduler(), noise, steps=v.steps, labels=labels), eps


def _runner(v: Variant, noise: torch.Tensor, labels: torch.Tensor) -> Callable[[], torch.Tensor]:
    return lambda: _sample_with(v, noise, labels)[0]


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
            quality=False,
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
    """Exactness and FLOPs of cross-attention K/V caching on
    [`CrossAttentionToy`][reference.feature_caching.bench.CrossAttentionToy]."""
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


Point = tuple[float, float, tuple[float, float]]
"""``(x, value, 95% interval)`` of one point of a figure."""


def _figure(path: Path, f: float, speed: dict[int, Point], cost_fd: dict[str, list[Point]]) -> Path:
    """Left: measured speedup per interval with the FLOP estimate; right: FDD against compute."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.5, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)

    def bars(ax, pts: Sequence[Point], fmt: str, **kw: object) -> None:
        pts = sorted(pts)
        lo = [p[1] - p[2][0] for p in pts]
        hi = [p[2][1] - p[1] for p in pts]
        ax.errorbar(
            [p[0] for p in pts], [p[1] for p in pts], yerr=[lo, hi], fmt=fmt, capsize=3, **kw
        )

    grid = np.linspace(1, max(speed) + 1, 100)
    ax1.plot(grid, [speedup_limit(f, float(n)) for n in grid], "--", color="#8c8c8c")
    ax1.annotate(f"FLOP estimate 1/(1 - f(1 - 1/N)), f = {f:.2f}", (1.05, 1.02), fontsize=8)
    bars(ax1, list(speed.values()), "o-", color="#dd8452", label="measured (95% interval)")
    ax1.set_xlabel("cache interval N")
    ax1.set_ylabel("speedup vs DDIM (latency)")
    ax1.grid(alpha=0.3)
    ax1.legend()
    for label, pts in cost_fd.items():
        bars(ax2, pts, "o-", label=label)
    ax2.set_xlabel("compute (full-step units, FLOPs)")
    ax2.set_ylabel("FDD, mean over seeds (lower is better)")
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


def paired_quality(variants: Sequence[Variant], cfg: Config) -> tuple[SeedTable, Work]:
    """FDD, KID, accuracy, diversity and PSNR against the baseline of every variant with
    ``quality``, over ``cfg.seeds``: on each seed all variants start from ``make_noise(n, seed)``
    with the same labels; the U-Net rows are compared with ``base``, the DiT rows with ``dit``."""
    from reference.harness import (
        class_labels,
        make_noise,
        over_seeds,
        psnr_per_sample,
        quality_report,
    )

    labels = class_labels(cfg.n_quality)
    work = Work()

    def sampler(v: Variant) -> Callable[[int], torch.Tensor]:
        def run(seed: int) -> torch.Tensor:
            x, eps = _sample_with(v, make_noise(cfg.n_quality, seed), labels)
            work.record(v.key, eps, v.steps)
            if seed == cfg.seeds[0]:
                work.shown[v.key] = x[: min(20, cfg.n_quality)]
            return x

        return run

    def measure(key: str, x: torch.Tensor, same: dict[str, torch.Tensor]) -> dict[str, float]:
        ref = same["dit" if key.startswith("dit") else "base"]
        psnr = float(psnr_per_sample(x, ref).mean())
        return {**quality_report(x, labels), "psnr_vs_baseline": psnr}

    samplers = {v.key: sampler(v) for v in variants if v.quality}
    return over_seeds(samplers, measure, cfg.seeds), work


def time_groups(variants: Sequence[Variant], cfg: Config) -> list[LatencyComparison]:
    """Interleaved latency of the timed U-Net rows (baseline first) and of the DiT rows."""
    from tqdm import tqdm

    from reference.harness import class_labels, compare_latency, make_noise

    noise, labels = make_noise(cfg.batch_latency, seed=2), class_labels(cfg.batch_latency)
    groups = [[v for v in variants if v.timed and not v.key.startswith("dit")]]
    groups += [[v for v in variants if v.key.startswith("dit")]] if cfg.dit else []
    timing = []
    for group in tqdm(groups, desc="latency groups", leave=False):
        runs = {v.key: _runner(v, noise, labels) for v in group}
        with torch.inference_mode():
            timing.append(compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup))
    return timing


def relative_speed(
    lat: LatencyComparison, fast: str, slow: str
) -> tuple[float, tuple[float, float]]:
    """``median(slow) / median(fast)`` from one interleaved comparison, with its bootstrap
    interval over the comparison's rounds."""
    return lat.speedup_over(fast, slow), lat.speedup_interval(fast, against=slow)


def _row(
    v: Variant, q: SeedTable, work: Work, lat: dict[str, LatencyComparison], gflops: float
) -> Row:
    """The result row of ``v``: paired quality, the passes it ran, its FLOPs and latency."""
    from reference.harness import summarize

    values, intervals, seeds = q.row_fields(v.key) if v.quality else ({}, {}, {})
    full = work.full.get(v.key) or [v.full_passes or v.steps]
    values["full_steps"] = sum(full) / len(full)
    if len(set(full)) > 1:  # adaptive (First Block Cache): the count varies with the seed
        intervals["full_steps"], seeds["full_steps"] = summarize(full).interval, list(full)
    values["gflops"] = gflops
    spread = {}
    if v.key in lat:
        cmp = lat[v.key]
        values["latency_ms"], values["speedup"] = cmp.median_ms(v.key), cmp.speedup[v.key]
        intervals["speedup"], spread["latency_ms"] = cmp.speedup_interval(v.key), cmp.iqr_ms(v.key)
    return Row(v.key, v.config, v.role, values, intervals, spread, seeds)  # type: ignore[arg-type]


def _aims(cfg: Config, q: SeedTable, unet_lat: LatencyComparison, ctrl: Variant) -> list:
    """Speed and quality against plain DDIM, and both against DDIM at the same FLOPs."""
    h = cfg.headline_interval
    head = f"dc{h}"
    quality = q.ratio(head, "base", "fd_digits")
    vs_ctrl = q.ratio(head, ctrl.key, "fd_digits")
    speed_ctrl, speed_ctrl_ci = relative_speed(unet_lat, head, ctrl.key)
    k = ctrl.steps
    return [
        aim(
            "speedup",
            unet_lat.speedup[head],
            1.6,
            ">=",
            unet_lat.speedup_interval(head),
            row=head,
            against="base",
            interval_n=h,
        ),
        aim(
            "quality",
            quality.value,
            1.15,
            "<=",
            quality.interval,
            row=head,
            against="base",
            interval_n=h,
        ),
        aim(
            "quality-vs-control",
            vs_ctrl.value,
            1.0,
            "<=",
            vs_ctrl.interval,
            row=head,
            against=ctrl.key,
            interval_n=h,
            control_steps=k,
        ),
        aim(
            "speed-vs-control",
            speed_ctrl,
            1.0,
            ">=",
            speed_ctrl_ci,
            row=head,
            against=ctrl.key,
            interval_n=h,
            control_steps=k,
        ),
    ]


def _notes(
    cfg: Config,
    unet: nn.Module,
    skipped: dict[str, float],
    variants: Sequence[Variant],
    work: Work,
    lat: dict[str, LatencyComparison],
) -> list:
    """The cost model with the counted steps, the control, the protocols, the exact caches."""
    from reference.harness import quality_note

    h = cfg.headline_interval
    head = f"dc{h}"
    by_key = {v.key: v for v in variants}
    full, calls = work.full[head][0], work.calls[head][0]
    kv = kv_cache_demo(steps=cfg.steps, batch=min(16, cfg.batch_latency * 4))
    lru = by_key["dc-lru"].make_eps().condition_cache  # type: ignore[attr-defined]
    gain, (lo, hi) = relative_speed(lat[head], "dc-lru", head)
    notes = [
        note(
            "skipped-flops",
            branch=cfg.branch,
            f=skipped["f"],
            interval=h,
            limit=skipped["limit"],
            full=full,
            cached=calls - full,
        ),
        note("matched-cost", control_steps=by_key[f"ddim{h}"].steps, interval=h, steps=cfg.steps),
        quality_note(cfg.n_quality, cfg.seeds),
        note(
            "condition-lru",
            hit_rate=lru.lru.hit_rate,
            share=condition_path_share(unet) * 100,
            interval=h,
            gain=gain,
            lo=lo,
            hi=hi,
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
        fbc = work.full["dit-fbc"]
        notes.append(
            note(
                "dit-hooks",
                threshold=cfg.fbc_threshold,
                full=sum(fbc) / len(fbc),
                lo=min(fbc),
                hi=max(fbc),
                steps=cfg.steps,
                skip=cfg.pab_skip,
            )
        )
    return notes


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure every variant; write the figures into ``out``."""
    from reference.harness import class_labels, make_noise, real_reference_row, save_grid

    unet, f = _teacher(cfg)
    variants = unet_variants(unet, cfg, f) + (dit_variants(cfg) if cfg.dit else [])
    q, work = paired_quality(variants, cfg)
    noise_f, labels_f = make_noise(2, seed=1), class_labels(2)
    gflops = {v.key: _gflops_per_sample(v, noise_f, labels_f) for v in variants}
    timing = time_groups(variants, cfg)
    lat = {k: cmp for cmp in timing for k in cmp.stats}
    rows = [_row(v, q, work, lat, gflops[v.key]) for v in variants]

    h = cfg.headline_interval
    head, ctrl = f"dc{h}", next(v for v in variants if v.key == f"ddim{h}")
    full, calls = work.full[head][0], work.calls[head][0]
    limit = flop_speedup_estimate(full, calls - full, f)  # (the work the run did)
    quality = q.ratio(head, "base", "fd_digits")

    figures = [Figure(f"{SLUG}.png", "speed-and-quality"), Figure(f"{SLUG}-samples.png", "samples")]
    speed = {1: (1.0, 1.0, (1.0, 1.0))}
    speed |= {
        n: (float(n), lat[f"dc{n}"].speedup[f"dc{n}"], lat[f"dc{n}"].speedup_interval(f"dc{n}"))
        for n in cfg.intervals
    }
    fd = {v.key: q.summary(v.key, "fd_digits") for v in variants if v.quality}
    base_pt = (float(cfg.steps), fd["base"].value, fd["base"].interval)
    cost_fd = {
        "DeepCache": [base_pt]
        + [
            (relative_cost(cfg.steps, n, f), fd[f"dc{n}"].value, fd[f"dc{n}"].interval)
            for n in cfg.intervals
        ],
        "DDIM": [base_pt]
        + [
            (float(ctl.steps), fd[ctl.key].value, fd[ctl.key].interval)
            for ctl in variants
            if ctl.config["method"] == "ddim-matched"
        ],
    }
    _figure(out / figures[0].file, f, speed, cost_fd)
    grid = torch.cat([work.shown[k] for k in ("base", head, ctrl.key)])
    save_grid(grid, out / figures[1].file, nrow=min(10, len(work.shown["base"])))

    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            skipped_flop_fraction=round(f, 4),
            fbc_threshold=cfg.fbc_threshold if cfg.dit else None,
            pab_skip=cfg.pab_skip if cfg.dit else None,
        ),
        metrics=_metrics(),
        rows=[*rows, real_reference_row(cfg.n_quality)],
        headline=speedup_headline(
            head,
            timing[0],
            limit=limit,
            limit_kind="estimate",
            quality_ratio=quality.value,
            quality_interval=quality.interval,
        ),
        aims=_aims(cfg, q, timing[0], ctrl),
        notes=_notes(cfg, unet, {"f": f, "limit": limit}, variants, work, lat),
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
