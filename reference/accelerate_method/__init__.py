"""Step forecasting ("accelerate method"): run the denoiser only every k-th step, forecast the rest.

Idea
----
Along a sampling trajectory the denoiser's output changes slowly from one step to the next. So
compute it fully only at some steps and *forecast* it at the steps in between from the cached
history of full computations. TaylorSeer (Liu et al. 2025, arXiv:2503.06923) does this on the
features of diffusion transformers: it estimates the derivatives of a feature ``F`` along the
steps by finite differences of the cached full computations and extrapolates with a Taylor
series. With full computations ``k`` steps apart (``Delta^i F`` the ``i``-th backward difference
of the cached values) a step ``d`` past the last full computation gets::

    F(s + d) ~ sum_{i=0..m} Delta^i F / (i! k^i) * d^i                       (TaylorSeer)

This module forecasts the whole denoiser output ``eps(x_t, t)`` (any :data:`EpsFn`, U-Net or DiT)
with the polynomial that *interpolates* the last ``m + 1`` full computations, in Newton's
divided-difference form over the timesteps ``t_j`` at which they were made::

    eps(t) ~ f[t_0] + f[t_0, t_1] (t - t_0) + ... + f[t_0..t_m] (t - t_0)...(t - t_{m-1})

Both agree for ``m <= 1`` (order 0 is "reuse the last output", order 1 linear extrapolation).
For ``m >= 2`` the Newton form is exact on any polynomial trajectory of degree ``<= m`` (tested),
while the finite-difference Taylor series is not (it misses terms of order ``k d``: for
``F = s^2`` it predicts ``s^2 + (2s - k) d + d^2``); :func:`taylorseer_forecast` implements the
paper's formula for comparison.

Cost and the limit
------------------
With ``N`` sampler steps, the first ``w`` computed fully (warm-up: the history must fill, and the
first steps change fastest), then one full computation every ``k`` steps, the network runs
``w + ceil((N - w) / k)`` times, so the speedup is at most::

    N / (w + ceil((N - w) / k))           e.g. N = 50, w = 2, k = 2: 50 / 26 = 1.92x

minus the forecast arithmetic (a few tensor additions). The key control is plain DDIM with the
same number of network evaluations: forecasting only pays if it beats simply taking fewer, larger
steps.

Pitfalls
--------
* The forecaster is stateful: one object per sampling run (:func:`forecasting_eps_fn` builds a
  fresh one); it assumes one denoiser call per sampler step (DDIM, DPM-Solver multistep).
* Forecasting extrapolates; high orders with large ``k`` amplify the noise of the history.
* Classifier-free guidance doubles the batch; forecast the guided output, or each branch.

Production: ``diffusers`` ``apply_taylorseer_cache(model, TaylorSeerCacheConfig(cache_interval=k,
max_order=m, disable_cache_before_step=w + 1))`` hooks chosen sub-modules (by default attention
modules whose names end in ``attn``; none in ``DiTTransformer2DModel``, whose attention is
``attn1``, so the benchmark passes identifiers explicitly); related caches: ``FirstBlockCache``,
``PyramidAttentionBroadcast``, ``FasterCache`` in ``diffusers.hooks``.

Run ``python -m reference.accelerate_method`` for a demonstration, ``--bench`` for the benchmark.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

SLUG = "accelerate-method"
MODULE = "reference.accelerate_method"
METHODS = ("newton", "taylorseer", "reuse")

EpsFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


# --------------------------------------------------------------------------- the schedule


def _check(interval: int, warmup: int, order: int) -> None:
    if interval < 1:
        raise ValueError(f"interval must be >= 1, got {interval}")
    if warmup < 1:
        raise ValueError(f"warm-up must be >= 1 (the first step has no history), got {warmup}")
    if order < 0:
        raise ValueError(f"order must be >= 0, got {order}")


def compute_mask(num_steps: int, interval: int, warmup: int = 1) -> list[bool]:
    """``True`` at the steps that run the network: the first ``warmup``, then every ``interval``."""
    _check(interval, warmup, 0)
    return [i < warmup or (i - warmup) % interval == 0 for i in range(num_steps)]


def full_computations(num_steps: int, interval: int, warmup: int = 1) -> int:
    """``w + ceil((N - w) / k)`` network evaluations for ``N`` steps (``N`` if ``N <= w``)."""
    _check(interval, warmup, 0)
    if num_steps <= warmup:
        return num_steps
    return warmup + math.ceil((num_steps - warmup) / interval)


def speedup_limit(num_steps: int, interval: int, warmup: int = 1) -> float:
    """The analytic limit ``N / (w + ceil((N - w) / k))``: network time only, free forecasts."""
    return num_steps / full_computations(num_steps, interval, warmup)


# --------------------------------------------------------------------------- forecasts


def newton_forecast(nodes: Sequence[float], values: Sequence[torch.Tensor], at: float):
    """Evaluate at ``at`` the polynomial through ``(nodes[j], values[j])`` (Newton form).

    Degree ``len(nodes) - 1``; exact for polynomial trajectories of at most that degree.
    """
    if len(nodes) != len(values) or not nodes:
        raise ValueError("newton_forecast: need as many values as nodes, at least one")
    coef = list(values)  # divided differences, computed in place
    n = len(nodes)
    for level in range(1, n):
        for j in range(n - 1, level - 1, -1):
            coef[j] = (coef[j] - coef[j - 1]) / (nodes[j] - nodes[j - level])
    out = coef[n - 1]
    for j in range(n - 2, -1, -1):  # Horner on the Newton basis
        out = coef[j] + (at - nodes[j]) * out
    return out


def taylorseer_forecast(nodes: Sequence[float], values: Sequence[torch.Tensor], at: float):
    """TaylorSeer's forecast (arXiv:2503.06923, eq. 6-8): finite-difference Taylor series.

    Derivatives of order ``i`` are estimated by recursive backward differences of the cached
    values divided by the node spacing (as ``diffusers``' ``TaylorSeerState.update`` does), then
    ``F(s + d) = sum_i F^(i) d^i / i!``. Exact for degree <= 1 only.
    """
    if len(nodes) != len(values) or not nodes:
        raise ValueError("taylorseer_forecast: need as many values as nodes, at least one")
    factors: list[torch.Tensor] = []
    for j in range(len(nodes)):  # replay the cache updates in order
        new = [values[j]]
        for i in range(len(factors)):
            new.append((new[i] - factors[i]) / (nodes[j] - nodes[j - 1]))
        factors = new
    d = at - nodes[-1]
    return sum(f * (d**i / math.factorial(i)) for i, f in enumerate(factors))


class StepForecaster:
    """An :data:`EpsFn` that calls ``eps_fn`` on the steps of :func:`compute_mask` only.

    Between full computations it forecasts the output from the last ``order + 1`` cached ones
    (fewer while the cache fills), as a function of the timestep ``t``. ``method``: ``"newton"``
    (interpolating polynomial), ``"taylorseer"`` (the paper's finite-difference Taylor series) or
    ``"reuse"`` (the last output, i.e. order 0). ``full_calls`` counts network evaluations.
    """

    def __init__(
        self,
        eps_fn: EpsFn,
        interval: int,
        *,
        order: int = 1,
        warmup: int = 1,
        method: str = "newton",
    ) -> None:
        _check(interval, warmup, order)
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
        self.eps_fn, self.interval, self.warmup = eps_fn, interval, warmup
        self.order = 0 if method == "reuse" else order
        self.method = method
        self.step = 0
        self.full_calls = 0
        self.nodes: list[float] = []
        self.values: list[torch.Tensor] = []

    def is_full_step(self, i: int) -> bool:
        return i < self.warmup or (i - self.warmup) % self.interval == 0

    def __call__(self, x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        i, self.step = self.step, self.step + 1
        at = float(t.reshape(-1)[0])
        if self.is_full_step(i):
            out = self.eps_fn(x_t, t, labels)
            self.full_calls += 1
            self.nodes = [*self.nodes, at][-(self.order + 1) :]
            self.values = [*self.values, out][-(self.order + 1) :]
            return out
        forecast = taylorseer_forecast if self.method == "taylorseer" else newton_forecast
        return forecast(self.nodes, self.values, at)


def forecasting_eps_fn(model: torch.nn.Module, interval: int, **kwargs: Any) -> StepForecaster:
    """A fresh :class:`StepForecaster` around a diffusers ``UNet2DModel`` / DiT."""
    from reference.harness import model_eps_fn

    return StepForecaster(model_eps_fn(model), interval, **kwargs)


# --------------------------------------------------------------------------- diffusers' TaylorSeer


def diffusers_taylorseer(
    dit: torch.nn.Module, interval: int, order: int = 1, warmup: int = 2
) -> torch.nn.Module:
    """A copy of the zoo DiT with ``diffusers.hooks.apply_taylorseer_cache`` applied.

    The last transformer block's output is forecast (Taylor series of ``order``), the other
    blocks are skipped on forecast steps (the "lite" layout of diffusers, adapted to the DiT's
    module names); embedding, final norm and projection run every step. diffusers computes at
    steps ``i < disable_cache_before_step`` and where ``(i - before - 1) % interval == 0``;
    ``before = warmup + 1`` gives the same steps as :func:`compute_mask` with ``warmup``.
    """
    from diffusers.hooks import TaylorSeerCacheConfig, apply_taylorseer_cache

    model = copy.deepcopy(dit)
    last = len(model.transformer_blocks) - 1
    config = TaylorSeerCacheConfig(
        cache_interval=interval,
        disable_cache_before_step=warmup + 1,
        max_order=order,
        taylor_factors_dtype=torch.float32,
        cache_identifiers=[rf"transformer_blocks\.{last}"],
        skip_predict_identifiers=[rf"transformer_blocks\.[0-{last - 1}]"] if last else None,
    )
    apply_taylorseer_cache(model, config)
    return model


@contextlib.contextmanager
def taylorseer_run(model: torch.nn.Module) -> Iterator[None]:
    """One sampling run of a hooked model: fresh hook state and a cache context ("cond")."""
    from diffusers.hooks import HookRegistry
    from diffusers.models.cache_utils import CacheMixin

    HookRegistry.check_if_exists_or_initialize(model).reset_stateful_hooks()
    with CacheMixin.cache_context(model, "cond"):  # type: ignore[arg-type]
        yield


# --------------------------------------------------------------------------- benchmark


@dataclass(frozen=True)
class BenchConfig:
    """What the benchmark measures."""

    n: int = 200
    steps: int = 50
    interval: int = 2
    warmup: int = 2
    order: int = 2
    intervals: tuple[int, ...] = (2, 3, 4)
    latency_batch: int = 32
    repeats: int = 5
    threads: int = 2
    seed: int = 0
    dit: bool = True

    def validate(self) -> None:
        _check(self.interval, self.warmup, self.order)
        for k in self.intervals:
            _check(k, self.warmup, self.order)
        if self.steps < 2:
            raise ValueError(f"steps must be >= 2, got {self.steps}")
        if self.n < 2:
            raise ValueError(f"need at least 2 samples for the FDD, got {self.n}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")


QUICK = BenchConfig(n=8, steps=6, intervals=(2,), latency_batch=4, repeats=1)
DEMO = BenchConfig(n=64, steps=20, intervals=(2, 3), latency_batch=16, repeats=2, dit=False)


@dataclass
class Run:
    """One configuration: how to sample, what it is called, its role, its network calls."""

    key: str
    name: str
    role: str
    sample: Callable[[torch.Tensor], torch.Tensor]
    nfe: int
    timed: bool = False


def _runs(model: torch.nn.Module, cfg: BenchConfig, prefix: str, labels_of) -> list[Run]:
    from reference import zoo
    from reference.harness import model_eps_fn, sample

    def ddim(steps: int) -> Callable[[torch.Tensor], torch.Tensor]:
        return lambda noise: sample(
            model_eps_fn(model),
            zoo.teacher_scheduler(),
            noise,
            steps=steps,
            labels=labels_of(noise),
        )

    def forecast(k: int, method: str, order: int) -> Callable[[torch.Tensor], torch.Tensor]:
        def run(noise: torch.Tensor) -> torch.Tensor:
            eps = forecasting_eps_fn(model, k, order=order, warmup=cfg.warmup, method=method)
            return sample(
                eps, zoo.teacher_scheduler(), noise, steps=cfg.steps, labels=labels_of(noise)
            )

        return run

    n, k, w, m = cfg.steps, cfg.interval, cfg.warmup, cfg.order
    same = full_computations(n, k, w)
    runs = [
        Run("base", f"{prefix}DDIM {n} steps", "baseline", ddim(n), n, True),
        Run(
            "newton",
            f"{prefix}forecast k={k}, order {m} (Newton)",
            "technique",
            forecast(k, "newton", m),
            same,
            True,
        ),
        Run(
            "reuse",
            f"{prefix}reuse last output k={k}",
            "control",
            forecast(k, "reuse", 0),
            same,
            True,
        ),
        Run(
            "ddim_same", f"{prefix}DDIM {same} steps (same NFE)", "control", ddim(same), same, True
        ),
        Run(
            "newton1",
            f"{prefix}forecast k={k}, order 1 (linear)",
            "technique",
            forecast(k, "newton", 1),
            same,
        ),
        Run(
            "taylor",
            f"{prefix}forecast k={k}, order {m} (TaylorSeer formula)",
            "technique",
            forecast(k, "taylorseer", m),
            same,
        ),
    ]
    for kk in cfg.intervals:
        if kk == k:
            continue
        nfe = full_computations(n, kk, w)
        runs += [
            Run(
                f"newton_k{kk}",
                f"{prefix}forecast k={kk}, order {m} (Newton)",
                "technique",
                forecast(kk, "newton", m),
                nfe,
            ),
            Run(
                f"ddim_k{kk}",
                f"{prefix}DDIM {nfe} steps (same NFE as k={kk})",
                "control",
                ddim(nfe),
                nfe,
            ),
        ]
    return runs


def _dit_runs(dit: torch.nn.Module, cfg: BenchConfig, labels_of) -> list[Run]:
    from reference import zoo
    from reference.harness import model_eps_fn, sample

    hooked = diffusers_taylorseer(dit, cfg.interval, order=1, warmup=cfg.warmup)

    def run_hooked(noise: torch.Tensor) -> torch.Tensor:
        with taylorseer_run(hooked):
            return sample(
                model_eps_fn(hooked),
                zoo.teacher_scheduler(),
                noise,
                steps=cfg.steps,
                labels=labels_of(noise),
            )

    runs = [
        r
        for r in _runs(dit, cfg, "DiT: ", labels_of)
        if r.key in ("base", "newton", "newton1", "ddim_same")
    ]
    for r in runs:
        r.key, r.role = "dit_" + r.key, ("reference" if r.key == "base" else r.role)
    same = full_computations(cfg.steps, cfg.interval, cfg.warmup)
    runs.append(
        Run(
            "dit_diffusers",
            f"DiT: diffusers apply_taylorseer_cache k={cfg.interval}, order 1",
            "technique",
            run_hooked,
            same,
            True,
        )
    )
    return runs


def measure(cfg: BenchConfig, progress: bool = True) -> dict[str, Any]:
    """FDD of every run on ``cfg.n`` samples, interleaved latency of the timed ones."""
    from tqdm.auto import tqdm

    from reference import zoo
    from reference.harness import (
        class_labels,
        compare_latency,
        frechet_digits_distance,
        make_noise,
    )

    torch.set_num_threads(cfg.threads)

    def labels_of(noise: torch.Tensor) -> torch.Tensor:
        return class_labels(len(noise))

    unet = zoo.load_teacher()
    runs = _runs(unet, cfg, "", labels_of)
    if cfg.dit:
        runs += _dit_runs(zoo.load_dit(), cfg, labels_of)
    noise = make_noise(cfg.n, cfg.seed)
    fdd, samples = {}, {}
    with torch.inference_mode():
        for r in tqdm(runs, desc="forecasting", disable=not progress):
            samples[r.key] = r.sample(noise)
            fdd[r.key] = frechet_digits_distance(samples[r.key])
    lat_noise = make_noise(cfg.latency_batch, cfg.seed + 1)
    warmup = 1 if cfg.repeats > 1 else 0
    lat = {}
    for group in ("", "dit_"):
        timed = {
            r.key: r
            for r in runs
            if r.timed and r.key.startswith(group) and (group or not r.key.startswith("dit_"))
        }
        if not timed:
            continue
        funcs = {k: (lambda r=r: r.sample(lat_noise)) for k, r in timed.items()}
        with torch.inference_mode():
            lat[group] = compare_latency(
                funcs, repeats=cfg.repeats, warmup=warmup, threads=cfg.threads
            )
    return {"runs": runs, "fdd": fdd, "samples": samples, "lat": lat}


def benchmark(quick: bool = False, cfg: BenchConfig | None = None, progress: bool = True) -> Any:
    """Step forecasting on the zoo U-Net (and DiT) through the harness; a ``BenchmarkResult``."""
    from reference.harness import (
        BenchmarkResult,
        Headline,
        Row,
        aim,
        fdd_floor,
        metrics,
        output_dir,
        provenance,
        save_grid,
    )

    cfg = cfg or (QUICK if quick else BenchConfig())
    cfg.validate()
    m = measure(cfg, progress)
    runs, fdd, lat = m["runs"], m["fdd"], m["lat"]
    rows = []
    for r in runs:
        group = lat.get("dit_" if r.key.startswith("dit_") else "")
        values: dict[str, float | None] = {"nfe": r.nfe, "fd_digits": fdd[r.key]}
        spread = {}
        if group is not None and r.key in group.stats:
            values["latency_ms"] = group.median_ms(r.key)
            spread["latency_ms"] = group.iqr_ms(r.key)
        rows.append(Row(r.name, r.role, values, spread))  # type: ignore[arg-type]
    main_lat = lat[""]
    speed = main_lat.speedup["newton"]
    limit = speedup_limit(cfg.steps, cfg.interval, cfg.warmup)
    q_base = fdd["newton"] / fdd["base"]
    q_same = fdd["newton"] / fdd["ddim_same"]
    same = full_computations(cfg.steps, cfg.interval, cfg.warmup)
    out = output_dir(quick)
    grid_keys = ["base", "newton", "reuse", "ddim_same"]
    save_grid(torch.cat([m["samples"][k][:10] for k in grid_keys]), out / f"{SLUG}-samples.png")
    figures = [_plot(runs, fdd, cfg, out / f"{SLUG}.png").name, f"{SLUG}-samples.png"]
    notes = [
        f"Teacher U-Net, DDIM {cfg.steps} steps (trailing spacing is not used here: the zoo's "
        f"default DDIMScheduler), {cfg.n} class-conditional samples from the same noise for every "
        f"row; FDD floor at n={cfg.n}: {fdd_floor(cfg.n):.2f}.",
        f"Forecast schedule: warm-up w={cfg.warmup} full steps, then one full computation every "
        f"k={cfg.interval} steps: {same} network evaluations instead of {cfg.steps}; analytic "
        f"limit N / (w + ceil((N - w) / k)) = {limit:.2f}x.",
        f"Latency: medians of {cfg.repeats} interleaved rounds of whole sampling runs at batch "
        f"{cfg.latency_batch}, {cfg.threads} threads, shared 2-core CPU.",
        f"Key control: DDIM with {same} steps costs the same network evaluations; FDD forecast / "
        f"same-NFE DDIM = {q_same:.2f} (below 1 means forecasting beats taking fewer steps).",
    ]
    if cfg.dit:
        notes.append(
            "DiT rows: diffusers' apply_taylorseer_cache (diffusers.hooks, 0.42) with the last "
            "transformer block forecast and the others skipped on forecast steps (its default "
            "identifiers hook modules named '...attn', which the DiT does not have: its attention "
            "is 'attn1'); it computes on the same steps as ours. Model-agnostic: any nn.Module "
            "with named sub-modules, not only CacheMixin models."
        )
    aims = [
        aim(
            f"forecast k={cfg.interval} beats plain DDIM at the same NFE (FDD ratio < 1)",
            q_same,
            1.0,
            "<",
        ),
        aim(
            f">= 1.7x measured speedup over DDIM {cfg.steps} (limit {limit:.2f}x)", speed, 1.7, ">="
        ),
    ]
    if not aims[0].met:
        notes.append(
            f"Quality aim not met: forecasting k={cfg.interval} has {q_same:.2f}x the FDD of "
            f"DDIM at the same {same} NFE; on this model fewer, larger DDIM steps lose less than "
            "the extrapolation error of the skipped outputs."
        )
    if not aims[1].met:
        notes.append(f"Speedup aim not met: {speed:.2f}x of a {limit:.2f}x limit.")
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Step forecasting (TaylorSeer-style) on the zoo U-Net and DiT: full network every "
        "k steps, polynomial forecasts between",
        quick=quick,
        settings={
            "n": cfg.n,
            "steps": cfg.steps,
            "interval": cfg.interval,
            "warmup": cfg.warmup,
            "order": cfg.order,
            "intervals": list(cfg.intervals),
            "latency_batch": cfg.latency_batch,
            "repeats": cfg.repeats,
            "threads": cfg.threads,
        },
        metrics=metrics("nfe", "latency_ms", "fd_digits"),
        rows=rows,
        headline=Headline(
            speedup=speed, speedup_limit=limit, quality_ratio=q_base, quality_metric="fd_digits"
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance([__file__]),
    )


def _plot(runs: list[Run], fdd: dict[str, float], cfg: BenchConfig, path: Path) -> Path:
    """FDD against network evaluations: forecasting vs plain DDIM at the same NFE (U-Net)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    unet = [r for r in runs if not r.key.startswith("dit_")]
    groups = {
        "plain DDIM": [r for r in unet if r.key.startswith("ddim") or r.key == "base"],
        f"forecast, order {cfg.order} (Newton)": [
            r for r in unet if r.key.startswith("newton") and r.key != "newton1"
        ],
    }
    for label, rs in groups.items():
        rs = sorted(rs, key=lambda r: r.nfe)
        ax.plot([r.nfe for r in rs], [fdd[r.key] for r in rs], marker="o", label=label)
    for key, marker in (("reuse", "x"), ("taylor", "s"), ("newton1", "^")):
        r = next(r for r in unet if r.key == key)
        ax.scatter([r.nfe], [fdd[key]], marker=marker, label=r.name, zorder=3)
    ax.set_xlabel("network evaluations")
    ax.set_ylabel("FDD (lower is better)")
    ax.set_title(f"Teacher U-Net, {cfg.steps} DDIM steps")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.accelerate_method",
        description="Run the zoo U-Net only every k DDIM steps and forecast the skipped outputs; "
        "compare with reuse and with plain DDIM at the same NFE.",
    )
    p.add_argument("--interval", type=int, default=None, help="k: full compute every k steps")
    p.add_argument("--order", type=int, default=None, help="forecast polynomial order (2)")
    p.add_argument("--warmup", type=int, default=None, help="full steps at the start (2)")
    p.add_argument("--steps", type=int, default=None, help="DDIM steps (demo: 20)")
    p.add_argument("--samples", type=int, default=None, help="samples for the FDD (demo: 64)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="demo output dir")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write the result")
    p.add_argument("--quick", action="store_true", help="with --bench: the small test setup")
    return p


def _config(args: argparse.Namespace) -> BenchConfig:
    base = (QUICK if args.quick else BenchConfig()) if args.bench else DEMO
    interval = args.interval if args.interval is not None else base.interval
    cfg = replace(
        base,
        interval=interval,
        intervals=tuple(sorted({interval, *base.intervals})),
        order=args.order if args.order is not None else base.order,
        warmup=args.warmup if args.warmup is not None else base.warmup,
        steps=args.steps if args.steps is not None else base.steps,
        n=args.samples if args.samples is not None else base.n,
        threads=args.threads,
    )
    cfg.validate()
    return cfg


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    from reference.zoo import ZooError

    args = _parser().parse_args(argv)
    try:
        cfg = _config(args)
        torch.set_num_threads(cfg.threads)
        if args.bench:
            from reference.harness import write_result

            result = benchmark(quick=args.quick, cfg=cfg)
            path = write_result(result)
            for a in result.aims:
                print(f"[{'met' if a.met else 'NOT met'}] {a.text}: {a.measured:.3g}")
            print(f"wrote {path}")
            return 0
        m = measure(cfg)
        lat = m["lat"][""]
        print(f"{'configuration':48} {'NFE':>4} {'FDD':>7} {'ms':>8} {'speedup':>7}")
        for r in m["runs"]:
            ms = f"{lat.median_ms(r.key):8.0f}" if r.key in lat.stats else f"{'-':>8}"
            sp = f"{lat.speedup[r.key]:7.2f}" if r.key in lat.stats else f"{'-':>7}"
            print(f"{r.name[:48]:48} {r.nfe:4d} {m['fdd'][r.key]:7.2f} {ms} {sp}")
        print(
            f"limit N/(w+ceil((N-w)/k)) = {speedup_limit(cfg.steps, cfg.interval, cfg.warmup):.2f}"
        )
        fig = _plot(m["runs"], m["fdd"], cfg, args.out / f"{SLUG}.png")
        print(f"figure: {fig}")
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
