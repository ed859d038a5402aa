"""Scheduler trade-off: sample quality against the number of denoiser evaluations (NFE).

Idea
----
A trained epsilon-prediction model defines the whole reverse process; the *scheduler* (sampler)
only decides at which noise levels the model is called and how its predictions are combined into
the next sample. The same weights therefore give very different quality for the same compute,
depending on the sampler:

* **DDPM** ancestral sampling (Ho et al. 2020, arXiv:2006.11239) simulates the reverse *stochastic*
  chain; with fewer steps than the 1000 it was trained for, each step adds noise it cannot remove.
* **DDIM** (Song et al. 2020, arXiv:2010.02502) is the deterministic (``eta = 0``) sampler of a
  non-Markovian process with the same marginals. One step from ``t`` to ``s < t`` is (eq. 12)::

      x0_hat = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t)
      x_s    = sqrt(abar_s) x0_hat + sqrt(1 - abar_s) eps

  which is the first-order (Euler) step of the probability-flow ODE in the right variables.
* **DPM-Solver++(2M)** (Lu et al. 2022, arXiv:2211.01095) solves the same ODE with an exponential
  integrator in ``lambda = log(alpha / sigma)`` (``alpha = sqrt(abar)``,
  ``sigma = sqrt(1 - abar)``) on the *data* prediction ``D = x0_hat``, reusing the previous
  step's prediction for second order at no extra NFE (Algorithm 2)::

      h = lambda_s - lambda_t,  r = h_prev / h
      D = (1 + 1 / (2 r)) D_t - 1 / (2 r) D_prev       (first step and last step: D = D_t)
      x_s = (sigma_s / sigma_t) x_t - alpha_s (exp(-h) - 1) D

* **UniPC** (Zhao et al. 2023, arXiv:2302.04867) adds a corrector that reuses the *next*
  evaluation, raising the order again without extra NFE.
* **Euler** (Karras et al. 2022, arXiv:2206.00364) integrates the ODE in ``sigma = sqrt((1 -
  abar) / abar)`` with plain Euler steps.

The multistep solvers call the model once per step, so NFE = number of steps for all five.

This module sweeps the five diffusers schedulers over NFE 1-100 on the zoo teacher, plots the
Fréchet digits distance (FDD) against NFE and against wall time, and carries two minimal
schedulers written from the papers, :class:`MinimalDDIM` and :class:`MinimalDPMSolverPP2M`,
tested step for step against ``DDIMScheduler`` and ``DPMSolverMultistepScheduler``.

Settings shared by every scheduler (the comparison is only fair if they agree)
-----------------------------------------------------------------------------
* ``timestep_spacing="trailing"``: the first step is always at ``t = 999``, where the model was
  trained on (almost) pure noise, and the others are spaced evenly below it. ``"leading"`` (the
  DDIM/DDPM default) starts at ``999 - 999 // N * ...`` e.g. ``t = 900`` for ``N = 10``, i.e. it
  feeds pure noise to the model as if it still held 10 % signal; ``"linspace"`` starts at 999 but
  ends at ``t = 0`` and splits the range unevenly. Lin et al. 2023 (arXiv:2305.08891) recommend
  trailing for exactly this reason; at low NFE it matters a lot.
* Final step: every scheduler ends at ``abar = 1`` (sigma = 0): DDIM/DDPM with
  ``set_alpha_to_one``, DPM-Solver++/UniPC/Euler with ``final_sigmas_type="zero"``. The
  multistep solvers take a first-order last step there (``lower_order_final``), since the
  second-order formula degenerates when ``h`` is infinite.
* x0 clipping: the zoo schedule is cosine, whose last timestep has ``abar ~ 2e-9``; the x0
  prediction there divides by ``sqrt(abar) ~ 5e-5`` and amplifies model error ~20000-fold. The
  zoo's configuration therefore clips ``x0_hat`` to [-1, 1] (``clip_sample``). DPM-Solver++ and
  UniPC have no ``clip_sample``; their ``thresholding=True`` with ``sample_max_value=1.0`` clamps
  the dynamic threshold ``s`` to 1, which *is* static clipping to [-1, 1] (same numbers). Euler
  has no such option and runs unclipped: part of what its curve shows.

Pitfalls
--------
* diffusers' DDIM/DDPM compute the previous timestep as ``t - 1000 // N``, not as the next entry
  of ``timesteps``; with trailing spacing the two agree only when ``N`` divides 1000 (at ``N =
  15`` DDIM's target is ``t = 933`` while the next model call is at 932). :class:`MinimalDDIM`
  follows the paper (the next timestep); the step-for-step test uses ``N`` that divide 1000.
* Multistep schedulers keep history: never reuse one object for two sampling loops.
* FDD is biased by the number of samples: every point of the sweep uses the same noise and the
  same N; the DDPM-1000 reference uses fewer samples and is compared at its own N.

Production: ``diffusers`` ``DDPMScheduler``, ``DDIMScheduler``, ``DPMSolverMultistepScheduler``
(``algorithm_type="dpmsolver++"``, ``solver_order=2``), ``UniPCMultistepScheduler``,
``EulerDiscreteScheduler``; swap them on any pipeline with
``pipe.scheduler = X.from_config(pipe.scheduler.config, timestep_spacing="trailing")``.

Run ``python -m reference.scheduler_tradeoff`` for a demonstration, ``--bench`` for the benchmark.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

SLUG = "scheduler-tradeoff"
MODULE = "reference.scheduler_tradeoff"
TIMESTEP_SPACING = "trailing"
NFE_GRID: tuple[int, ...] = (1, 2, 4, 8, 10, 15, 20, 25, 50, 100)

SCHEDULERS: dict[str, tuple[str, dict[str, Any]]] = {
    "ddpm": ("DDPMScheduler", {"clip_sample": True}),
    "ddim": ("DDIMScheduler", {"clip_sample": True, "set_alpha_to_one": True}),
    "dpmpp2m": (
        "DPMSolverMultistepScheduler",
        {
            "algorithm_type": "dpmsolver++",
            "solver_order": 2,
            "solver_type": "midpoint",
            "lower_order_final": True,
            "final_sigmas_type": "zero",
            "thresholding": True,
            "sample_max_value": 1.0,
        },
    ),
    "unipc": (
        "UniPCMultistepScheduler",
        {
            "solver_order": 2,
            "lower_order_final": True,
            "final_sigmas_type": "zero",
            "thresholding": True,
            "sample_max_value": 1.0,
        },
    ),
    "euler": ("EulerDiscreteScheduler", {"final_sigmas_type": "zero"}),
}
"""Short name -> (diffusers class, configuration overrides on the zoo schedule)."""

LABELS = {
    "ddpm": "DDPM",
    "ddim": "DDIM",
    "dpmpp2m": "DPM-Solver++(2M)",
    "unipc": "UniPC",
    "euler": "Euler",
}


def make_scheduler(name: str, *, clip: bool = True) -> Any:
    """A fresh diffusers scheduler ``name`` (see :data:`SCHEDULERS`) on the zoo's schedule.

    All use trailing timestep spacing and end at ``abar = 1``; ``clip`` toggles clipping of the
    x0 prediction to [-1, 1] (``clip_sample`` or its equivalent ``thresholding``).
    """
    from reference import zoo

    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; choose from {', '.join(SCHEDULERS)}")
    cls, overrides = SCHEDULERS[name]
    cfg = dict(overrides, timestep_spacing=TIMESTEP_SPACING)
    if not clip:
        cfg = {**cfg, "clip_sample": False, "thresholding": False}
    return zoo.teacher_scheduler(cls, **cfg)


def model_calls_per_step(name: str) -> int:
    """Denoiser evaluations per scheduler step: 1 for all five (multistep solvers reuse history)."""
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; choose from {', '.join(SCHEDULERS)}")
    return 1


# --------------------------------------------------------------------------- minimal solvers


def trailing_timesteps(num_steps: int, num_train_timesteps: int = 1000) -> torch.Tensor:
    """``round(T, T - T/N, ..., T/N) - 1``: N timesteps, the first at ``T - 1`` (int64)."""
    if not 1 <= num_steps <= num_train_timesteps:
        raise ValueError(f"steps must be in [1, {num_train_timesteps}], got {num_steps}")
    ratio = num_train_timesteps / num_steps
    grid = torch.arange(num_train_timesteps, 0, -ratio, dtype=torch.float64)[:num_steps]
    return torch.round(grid).to(torch.int64) - 1


@dataclass
class StepOutput:
    """What ``step`` returns (the attribute the sampling loop reads, as in diffusers)."""

    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor


class _MinimalScheduler:
    """Shared plumbing: the schedule ``abar``, trailing timesteps, a step counter, x0 clipping."""

    init_noise_sigma = 1.0

    def __init__(self, alphas_cumprod: torch.Tensor, *, clip_x0: bool = True) -> None:
        self.alphas_cumprod = alphas_cumprod.detach().to(torch.float64)
        self.clip_x0 = clip_x0
        self.timesteps = torch.empty(0, dtype=torch.int64)
        self._i = 0

    def set_timesteps(self, num_inference_steps: int) -> None:
        self.timesteps = trailing_timesteps(num_inference_steps, len(self.alphas_cumprod))
        self._i = 0
        self._reset()

    def _reset(self) -> None:
        pass

    def scale_model_input(self, sample: torch.Tensor, timestep: Any = None) -> torch.Tensor:
        return sample

    def _abar_pair(self, timestep: Any) -> tuple[float, float]:
        """``abar`` at the current step and at the next one (1 after the last step)."""
        if self._i >= len(self.timesteps):
            raise ValueError("step called more often than set_timesteps allows")
        if int(timestep) != int(self.timesteps[self._i]):
            raise ValueError(f"expected timestep {int(self.timesteps[self._i])}, got {timestep}")
        abar_t = float(self.alphas_cumprod[self.timesteps[self._i]])
        last = self._i == len(self.timesteps) - 1
        abar_s = 1.0 if last else float(self.alphas_cumprod[self.timesteps[self._i + 1]])
        return abar_t, abar_s

    def _x0(self, x_t: torch.Tensor, eps: torch.Tensor, abar_t: float) -> torch.Tensor:
        x0 = (x_t - math.sqrt(1.0 - abar_t) * eps) / math.sqrt(abar_t)
        return x0.clamp(-1.0, 1.0) if self.clip_x0 else x0


class MinimalDDIM(_MinimalScheduler):
    """Deterministic DDIM (``eta = 0``), Song et al. 2020 (arXiv:2010.02502), eq. 12.

    ``x_s = sqrt(abar_s) x0_hat + sqrt(1 - abar_s) eps`` with the model's ``eps`` (as diffusers
    does, the direction term keeps the unclipped ``eps`` even when ``x0_hat`` is clipped).
    """

    def step(self, model_output: torch.Tensor, timestep: Any, sample: torch.Tensor, **_: Any):
        abar_t, abar_s = self._abar_pair(timestep)
        x0 = self._x0(sample, model_output, abar_t)
        prev = math.sqrt(abar_s) * x0 + math.sqrt(1.0 - abar_s) * model_output
        self._i += 1
        return StepOutput(prev, x0)


class MinimalDPMSolverPP2M(_MinimalScheduler):
    """DPM-Solver++(2M), Lu et al. 2022 (arXiv:2211.01095), Algorithm 2, data prediction.

    First step and last step (to ``sigma = 0``) are first order, which is DDIM in
    ``lambda``; the steps in between use the previous ``x0_hat`` for a second-order correction.
    """

    def _reset(self) -> None:
        self._prev: tuple[torch.Tensor, float] | None = None  # (D_prev, lambda at D_prev)

    def step(self, model_output: torch.Tensor, timestep: Any, sample: torch.Tensor, **_: Any):
        abar_t, abar_s = self._abar_pair(timestep)
        d_t = self._x0(sample, model_output, abar_t)
        alpha_t, sigma_t = math.sqrt(abar_t), math.sqrt(1.0 - abar_t)
        lambda_t = math.log(alpha_t) - math.log(sigma_t)
        if abar_s >= 1.0:  # sigma_s = 0: lambda_s = inf, exp(-h) = 0, x_s = D
            prev = d_t
        else:
            alpha_s, sigma_s = math.sqrt(abar_s), math.sqrt(1.0 - abar_s)
            h = math.log(alpha_s) - math.log(sigma_s) - lambda_t
            d = d_t
            if self._prev is not None:
                d_prev, lambda_prev = self._prev
                r = (lambda_t - lambda_prev) / h
                d = (1.0 + 0.5 / r) * d_t - (0.5 / r) * d_prev
            prev = (sigma_s / sigma_t) * sample - alpha_s * math.expm1(-h) * d
        self._prev = (d_t, lambda_t)
        self._i += 1
        return StepOutput(prev, d_t)


MINIMAL = {"ddim": MinimalDDIM, "dpmpp2m": MinimalDPMSolverPP2M}
"""Our schedulers, keyed like the diffusers ones they are checked against."""


def make_minimal(name: str, *, clip: bool = True) -> _MinimalScheduler:
    """:class:`MinimalDDIM` or :class:`MinimalDPMSolverPP2M` on the zoo's ``abar``."""
    if name not in MINIMAL:
        raise ValueError(f"no minimal scheduler {name!r}; choose from {', '.join(MINIMAL)}")
    return MINIMAL[name](make_scheduler("ddim").alphas_cumprod, clip_x0=clip)


_SCHEDULE_TENSORS = ("alphas_cumprod", "final_alpha_cumprod", "sigmas", "alpha_t", "sigma_t")


def max_step_difference(
    ours: Any,
    theirs: Any,
    eps_fn: Any,
    noise: torch.Tensor,
    steps: int,
    dtype: torch.dtype = torch.float64,
) -> float:
    """Largest ``|ours.step - theirs.step|`` over a trajectory, feeding both the same inputs.

    At every step both schedulers receive the same ``x_t`` (the reference trajectory of
    ``theirs``) and the same model output; the difference of their outputs is recorded.

    ``dtype=torch.float64`` (default) compares the *updates* and not float32 rounding: the first
    step at ``t = 999`` divides by ``sqrt(abar) ~ 5e-5``, so any float32 implementation is only
    determined to ~1e-3 there (diffusers' DDIM rounds ``sqrt(1 - abar)`` to 1.0, its DPM-Solver
    rounds ``sigma_t = sigma * alpha_t``; their float32 schedule tensors are promoted to
    ``dtype`` here, with the values unchanged). The model itself runs in float32.
    """
    ours.set_timesteps(steps)
    theirs.set_timesteps(steps)
    if not torch.equal(ours.timesteps.to(torch.int64), theirs.timesteps.to(torch.int64)):
        raise ValueError(f"timesteps differ: {ours.timesteps.tolist()} vs {theirs.timesteps}")
    for attr in _SCHEDULE_TENSORS:  # promote diffusers' float32 schedule to ``dtype``
        if isinstance(getattr(theirs, attr, None), torch.Tensor):
            setattr(theirs, attr, getattr(theirs, attr).to(dtype))
    x = noise.to(dtype) * theirs.init_noise_sigma
    labels = torch.zeros(noise.shape[0], dtype=torch.long)
    worst = 0.0
    with torch.no_grad():
        for t in theirs.timesteps:
            x_in = theirs.scale_model_input(x, t).float()
            eps = eps_fn(x_in, t.expand(noise.shape[0]), labels).to(dtype)
            a = ours.step(eps, t, x).prev_sample
            x = theirs.step(eps, t, x).prev_sample
            worst = max(worst, float((a - x).abs().max()))
    return worst


# --------------------------------------------------------------------------- the sweep


@dataclass(frozen=True)
class BenchConfig:
    """What the sweep measures (see :data:`QUICK` and :data:`DEMO` for smaller ones)."""

    n: int = 128
    nfe_grid: tuple[int, ...] = NFE_GRID
    schedulers: tuple[str, ...] = tuple(SCHEDULERS)
    ref_n: int = 64
    ref_steps: int = 1000
    latency_batch: int = 32
    repeats: int = 5
    threads: int = 2
    seed: int = 0
    headline_nfe: int = 10
    baseline_nfe: int = 50

    def validate(self) -> None:
        unknown = [s for s in self.schedulers if s not in SCHEDULERS]
        if unknown:
            raise ValueError(
                f"unknown scheduler {unknown[0]!r}; choose from {', '.join(SCHEDULERS)}"
            )
        bad = [k for k in self.nfe_grid if k < 1 or k > 1000]
        if bad or not self.nfe_grid:
            raise ValueError(f"NFE must be in [1, 1000], got {bad[0] if bad else 'none'}")
        if self.n < 2 or self.ref_n < 2:
            raise ValueError(f"need at least 2 samples for the FDD, got {min(self.n, self.ref_n)}")
        if self.ref_n > self.n:
            raise ValueError(f"reference samples ({self.ref_n}) must not exceed n ({self.n})")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")


QUICK = BenchConfig(
    n=12,
    nfe_grid=(1, 2, 4),
    ref_n=6,
    ref_steps=10,
    latency_batch=4,
    repeats=1,
    headline_nfe=2,
    baseline_nfe=4,
)
DEMO = BenchConfig(n=64, nfe_grid=(1, 2, 5, 10, 20), ref_n=32, ref_steps=100, repeats=2)


@dataclass
class Point:
    """One (scheduler, NFE) measurement of the sweep."""

    scheduler: str
    nfe: int
    fd_digits: float
    seconds: float
    samples: torch.Tensor = field(repr=False)


def run_sampler(unet: Any, scheduler: Any, noise: torch.Tensor, steps: int, seed: int = 0):
    """Class-conditional samples (balanced labels) and the number of model calls made."""
    from reference.harness import class_labels, count_nfe, model_eps_fn, sample

    eps = count_nfe(model_eps_fn(unet))
    x = sample(eps, scheduler, noise, steps=steps, labels=class_labels(len(noise)), seed=seed)
    return x, eps.nfe


def sweep(unet: Any, cfg: BenchConfig, progress: bool = True) -> list[Point]:
    """FDD and wall time of every scheduler at every NFE of ``cfg`` (same noise for all)."""
    from tqdm.auto import tqdm

    from reference.harness import frechet_digits_distance, make_noise

    noise = make_noise(cfg.n, cfg.seed)
    jobs = [(s, k) for s in cfg.schedulers for k in cfg.nfe_grid]
    points = []
    for name, nfe in tqdm(jobs, desc="schedulers", disable=not progress):
        steps = nfe // model_calls_per_step(name)
        start = time.perf_counter()
        x, calls = run_sampler(unet, make_scheduler(name), noise, steps, cfg.seed)
        seconds = time.perf_counter() - start
        if calls != nfe:
            raise RuntimeError(f"{name}: expected {nfe} model calls, counted {calls}")
        points.append(Point(name, nfe, frechet_digits_distance(x), seconds, x))
    return points


def nfe_to_match(points: list[Point], name: str, target: float) -> int | None:
    """Smallest NFE at which scheduler ``name`` reaches FDD <= ``target`` (None if never)."""
    hits = [p.nfe for p in points if p.scheduler == name and p.fd_digits <= target]
    return min(hits) if hits else None


# --------------------------------------------------------------------------- figures


def plot_tradeoff(points: list[Point], path: Path, hlines: dict[str, float]) -> Path:
    """Two panels: FDD against NFE and against wall time (log x), one curve per scheduler."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_nfe, ax_time = fig.subplots(1, 2)
    for name in dict.fromkeys(p.scheduler for p in points):
        mine = [p for p in points if p.scheduler == name]
        fdd = [p.fd_digits for p in mine]
        ax_nfe.plot([p.nfe for p in mine], fdd, marker="o", label=LABELS[name])
        ax_time.plot([p.seconds for p in mine], fdd, marker="o", label=LABELS[name])
    for ax, xlabel in ((ax_nfe, "NFE (denoiser evaluations)"), (ax_time, "wall time (s)")):
        for label, level in hlines.items():
            ax.axhline(level, linestyle="--", linewidth=1, color="#8c8c8c")
            ax.annotate(label, (0.01, level), xycoords=("axes fraction", "data"), fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("FDD (lower is better)")
        ax.grid(alpha=0.3, which="both")
    ax_nfe.legend()
    ax_nfe.set_title("Quality against NFE")
    ax_time.set_title("Quality against sampling time")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def save_sample_grid(points: list[Point], nfe: int, path: Path) -> Path:
    """Ten samples (digits 0-9) per scheduler at ``nfe``, one row per scheduler."""
    from reference.harness import save_grid

    rows = [p.samples[:10] for p in points if p.nfe == nfe]
    return save_grid(torch.cat(rows), path, nrow=10)


# --------------------------------------------------------------------------- benchmark


def _measure(cfg: BenchConfig, progress: bool) -> dict[str, Any]:
    from reference import zoo
    from reference.harness import compare_latency, frechet_digits_distance, make_noise

    torch.set_num_threads(cfg.threads)
    unet = zoo.load_teacher()
    for p in unet.parameters():
        p.requires_grad_(False)
    points = sweep(unet, cfg, progress)
    by = {(p.scheduler, p.nfe): p for p in points}
    # DDPM with all 1000 training steps, on the first ref_n noises (noise sets nest).
    ref_noise = make_noise(cfg.ref_n, cfg.seed)
    ddpm_ref, _ = run_sampler(unet, make_scheduler("ddpm"), ref_noise, cfg.ref_steps, cfg.seed)
    base = by[("ddim", cfg.baseline_nfe)]
    ref = {
        "ddpm": frechet_digits_distance(ddpm_ref),
        "ddim_base": frechet_digits_distance(base.samples[: cfg.ref_n]),
    }
    # The same DDIM without x0 clipping: what clipping buys on the cosine schedule.
    unclipped, _ = run_sampler(
        unet, make_scheduler("ddim", clip=False), make_noise(cfg.n, cfg.seed), cfg.headline_nfe
    )
    ref["ddim_unclipped"] = frechet_digits_distance(unclipped)
    # Ours vs diffusers: the same step inputs, and the final samples of the full loop.
    noise = make_noise(cfg.latency_batch, cfg.seed + 1)
    from reference.harness import model_eps_fn

    eps_fn = model_eps_fn(unet)
    ours = {}
    for name, nfe in (("ddim", cfg.baseline_nfe), ("dpmpp2m", cfg.headline_nfe)):
        ours[name] = {
            "step_diff": max_step_difference(
                make_minimal(name), make_scheduler(name), eps_fn, noise, nfe
            ),
            "sample": run_sampler(unet, make_minimal(name), make_noise(cfg.n, cfg.seed), nfe)[0],
            "nfe": nfe,
        }
        ours[name]["fd_digits"] = frechet_digits_distance(ours[name]["sample"])
        ours[name]["sample_diff"] = float(
            (ours[name]["sample"] - by[(name, nfe)].samples).abs().max()
        )
    # Interleaved latency of the headline rows at a small batch.
    lat_noise = make_noise(cfg.latency_batch, cfg.seed)
    timed = {
        "ddim_base": ("ddim", cfg.baseline_nfe),
        "dpmpp2m": ("dpmpp2m", cfg.headline_nfe),
        "unipc": ("unipc", cfg.headline_nfe),
        "ddim": ("ddim", cfg.headline_nfe),
        "euler": ("euler", cfg.headline_nfe),
    }
    timed = {k: v for k, v in timed.items() if v[0] in cfg.schedulers}
    funcs = {
        key: (lambda s=s, k=k: run_sampler(unet, make_scheduler(s), lat_noise, k))
        for key, (s, k) in timed.items()
    }
    warmup = 1 if cfg.repeats > 1 else 0
    lat = compare_latency(funcs, repeats=cfg.repeats, warmup=warmup, threads=cfg.threads)
    return {"points": points, "by": by, "ref": ref, "ours": ours, "lat": lat, "timed": timed}


def benchmark(quick: bool = False, cfg: BenchConfig | None = None, progress: bool = True) -> Any:
    """The scheduler sweep through the harness; returns a ``BenchmarkResult``."""
    from reference.harness import (
        BenchmarkResult,
        Headline,
        MetricSpec,
        Row,
        aim,
        fdd_floor,
        metrics,
        output_dir,
        provenance,
    )

    cfg = cfg or (QUICK if quick else BenchConfig())
    cfg.validate()
    for needed in ("ddim", "dpmpp2m"):
        if needed not in cfg.schedulers:
            raise ValueError(f"the benchmark needs scheduler {needed!r}")
    for k in (cfg.headline_nfe, cfg.baseline_nfe):
        if k not in cfg.nfe_grid:
            raise ValueError(f"the benchmark needs NFE {k} in the grid")
    m = _measure(cfg, progress)
    by, lat, ours, ref = m["by"], m["lat"], m["ours"], m["ref"]
    base = by[("ddim", cfg.baseline_nfe)]
    tech = by[("dpmpp2m", cfg.headline_nfe)]
    q_ratio = tech.fd_digits / base.fd_digits
    rows = []
    roles = {"ddim_base": "baseline", "dpmpp2m": "technique", "unipc": "technique"}
    for key, (name, nfe) in m["timed"].items():
        rows.append(
            Row(
                f"{LABELS[name]} {nfe} NFE" + (" (baseline)" if key == "ddim_base" else ""),
                roles.get(key, "control"),  # type: ignore[arg-type]
                {
                    "nfe": nfe,
                    "latency_ms": lat.median_ms(key),
                    "fd_digits": by[(name, nfe)].fd_digits,
                },
                {"latency_ms": lat.iqr_ms(key)},
            )
        )
    ddpm_fast = ("ddpm", cfg.headline_nfe)
    if ddpm_fast in by:
        rows.append(
            Row(
                f"DDPM {cfg.headline_nfe} NFE",
                "control",
                {"nfe": cfg.headline_nfe, "fd_digits": by[ddpm_fast].fd_digits},
            )
        )
    rows.append(
        Row(
            f"DDIM {cfg.headline_nfe} NFE without x0 clipping",
            "control",
            {"nfe": cfg.headline_nfe, "fd_digits": ref["ddim_unclipped"]},
        )
    )
    for name, o in ours.items():
        rows.append(
            Row(
                f"Ours: minimal {LABELS[name]} {o['nfe']} NFE",
                "technique",
                {"nfe": o["nfe"], "fd_digits": o["fd_digits"], "max_diff": o["step_diff"]},
            )
        )
    rows.append(
        Row(
            f"DDPM {cfg.ref_steps} NFE ({cfg.ref_n} samples)",
            "reference",
            {"nfe": cfg.ref_steps, "fd_digits": ref["ddpm"]},
        )
    )
    floor = fdd_floor(cfg.n)
    out = output_dir(quick)
    figures = [
        plot_tradeoff(
            m["points"],
            out / f"{SLUG}.png",
            {
                f"real digits (floor, n={cfg.n})": floor,
                f"DDIM {cfg.baseline_nfe} x 1.1": 1.1 * base.fd_digits,
            },
        ).name,
        save_sample_grid(m["points"], cfg.headline_nfe, out / f"{SLUG}-samples.png").name,
    ]
    target = 1.1 * base.fd_digits
    reach = {s: nfe_to_match(m["points"], s, target) for s in cfg.schedulers}
    reach_txt = ", ".join(
        f"{LABELS[s]} {k if k else '>' + str(max(cfg.nfe_grid))}" for s, k in reach.items()
    )
    notes = [
        f"Teacher U-Net, {cfg.n} class-conditional samples per point (balanced labels, the same "
        f"noise for every point), FDD floor at n={cfg.n}: {floor:.2f}. NFE = model calls "
        "(counted), one per step for all five schedulers.",
        f"Shared settings: timestep_spacing='{TIMESTEP_SPACING}' (first step at t=999), final "
        "step to abar=1 (set_alpha_to_one / final_sigmas_type='zero', first-order last step for "
        "the multistep solvers), x0 clipped to [-1, 1] (clip_sample, or thresholding with "
        "sample_max_value=1 which is the same clip). Euler has no clipping option: its first "
        "step starts at sigma = sqrt((1 - abar) / abar) ~ 2e4 (t = 999 of the cosine schedule), "
        "where x0 = x - sigma eps turns an eps error of 1e-3 into an x0 error of ~20; the row "
        f"'DDIM {cfg.headline_nfe} NFE without x0 clipping' shows what clipping does for DDIM.",
        f"Reference: DDPM with {cfg.ref_steps} steps on only {cfg.ref_n} samples (cost); its FDD "
        f"{ref['ddpm']:.2f} compares with DDIM {cfg.baseline_nfe} on the same {cfg.ref_n} "
        f"noises: {ref['ddim_base']:.2f} (FDD at n={cfg.ref_n} is higher than at n={cfg.n}; "
        "floor at that n: "
        f"{fdd_floor(cfg.ref_n):.2f}).",
        f"NFE needed to come within 10% of DDIM {cfg.baseline_nfe} (FDD <= {target:.2f}): "
        f"{reach_txt}.",
        f"Latency: medians of {cfg.repeats} interleaved rounds at batch {cfg.latency_batch}, "
        f"{cfg.threads} threads, on a shared 2-core CPU; the wall-time panel of the figure uses "
        f"single sequential runs at batch {cfg.n}. Speedup limit = NFE ratio "
        f"{cfg.baseline_nfe}/{cfg.headline_nfe}: per-step cost is the same U-Net call, the "
        "scheduler arithmetic is negligible next to it.",
        "Ours vs diffusers: max abs difference of one step's output given identical inputs, "
        f"over whole trajectories: DDIM {ours['ddim']['step_diff']:.1e}, DPM-Solver++(2M) "
        f"{ours['dpmpp2m']['step_diff']:.1e}; full sampling loops end "
        f"{ours['ddim']['sample_diff']:.1e} / {ours['dpmpp2m']['sample_diff']:.1e} apart.",
    ]
    if q_ratio > 1.1:
        notes.append(
            f"Quality aim not met: DPM-Solver++(2M) at {cfg.headline_nfe} NFE has "
            f"{q_ratio:.2f}x the FDD of DDIM at {cfg.baseline_nfe} NFE."
        )
    aims = [
        aim(
            f"DPM-Solver++(2M) at {cfg.headline_nfe} NFE within 10% of DDIM at "
            f"{cfg.baseline_nfe} NFE (FDD ratio)",
            q_ratio,
            1.1,
            "<=",
        ),
        aim(
            "our DDIM step equals diffusers' (max abs diff)", ours["ddim"]["step_diff"], 1e-5, "<="
        ),
        aim(
            "our DPM-Solver++(2M) step equals diffusers' (max abs diff)",
            ours["dpmpp2m"]["step_diff"],
            1e-5,
            "<=",
        ),
    ]
    sweep_table = {
        s: {str(p.nfe): round(p.fd_digits, 4) for p in m["points"] if p.scheduler == s}
        for s in cfg.schedulers
    }
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Scheduler trade-off on the zoo teacher: FDD against NFE and wall time for DDPM, "
        "DDIM, DPM-Solver++(2M), UniPC and Euler",
        quick=quick,
        settings={
            "n": cfg.n,
            "nfe_grid": list(cfg.nfe_grid),
            "schedulers": list(cfg.schedulers),
            "timestep_spacing": TIMESTEP_SPACING,
            "ref_steps": cfg.ref_steps,
            "ref_n": cfg.ref_n,
            "latency_batch": cfg.latency_batch,
            "repeats": cfg.repeats,
            "threads": cfg.threads,
            "sweep_fd_digits": sweep_table,
            "sweep_seconds": {
                s: {str(p.nfe): round(p.seconds, 3) for p in m["points"] if p.scheduler == s}
                for s in cfg.schedulers
            },
        },
        metrics=metrics(
            "nfe",
            "latency_ms",
            "fd_digits",
            max_diff=MetricSpec("Max abs difference to diffusers (one step)", "", "lower"),
        ),
        rows=rows,
        headline=Headline(
            speedup=lat.speedup["dpmpp2m"],
            speedup_limit=cfg.baseline_nfe / cfg.headline_nfe,
            quality_ratio=q_ratio,
            quality_metric="fd_digits",
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance([__file__]),
    )


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.scheduler_tradeoff",
        description="Sample the zoo teacher with DDPM, DDIM, DPM-Solver++(2M), UniPC and Euler "
        "at several NFE; print FDD and time, plot the trade-off.",
    )
    p.add_argument(
        "--schedulers",
        nargs="+",
        default=None,
        metavar="NAME",
        help=f"subset of: {', '.join(SCHEDULERS)} (default: all)",
    )
    p.add_argument(
        "--nfe", type=int, nargs="+", default=None, help="NFE values (demo: 1 2 5 10 20)"
    )
    p.add_argument("--samples", type=int, default=None, help="samples per point (demo: 64)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="demo output dir")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write the result")
    p.add_argument("--quick", action="store_true", help="with --bench: the small test setup")
    return p


def _config(args: argparse.Namespace) -> BenchConfig:
    base = (QUICK if args.quick else BenchConfig()) if args.bench else DEMO
    cfg = replace(
        base,
        schedulers=tuple(args.schedulers) if args.schedulers else base.schedulers,
        nfe_grid=tuple(args.nfe) if args.nfe else base.nfe_grid,
        n=args.samples if args.samples is not None else base.n,
        ref_n=min(base.ref_n, args.samples) if args.samples is not None else base.ref_n,
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
        from reference import zoo

        unet = zoo.load_teacher()
        points = sweep(unet, cfg)
        print(f"{'scheduler':18} " + " ".join(f"{k:>7}" for k in cfg.nfe_grid) + "   (FDD)")
        for s in cfg.schedulers:
            vals = [p.fd_digits for p in points if p.scheduler == s]
            print(f"{LABELS[s]:18} " + " ".join(f"{v:7.2f}" for v in vals))
        print(f"{'seconds':18}")
        for s in cfg.schedulers:
            vals = [p.seconds for p in points if p.scheduler == s]
            print(f"{LABELS[s]:18} " + " ".join(f"{v:7.2f}" for v in vals))
        fig = plot_tradeoff(points, args.out / f"{SLUG}.png", {})
        grid = save_sample_grid(points, cfg.nfe_grid[len(cfg.nfe_grid) // 2], args.out / "grid.png")
        print(f"figure: {fig}\nsamples: {grid}")
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
