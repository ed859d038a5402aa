"""Benchmark and demo of [`reference.scheduler_tradeoff`][reference.scheduler_tradeoff] (the
technique contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows, every one from the same noise and labels on every seed (paired; how each samples is
`reference.scheduler_tradeoff.samplers`):

* ``ddim-50``: the zoo teacher with DDIM at 50 steps on the clipped ODE, trailing timesteps
  (baseline): the one baseline of every benchmark, whose convergence the baseline sanity study
  checks;
* ``dpmpp2m-10``, ``unipc-10``: the higher-order solvers at the headline NFE on the same ODE
  (technique);
* ``ddim-10``: DDIM at the same NFE (control: the same network calls, only the solver differs);
* ``euler-10``: Euler on the same ODE at the same NFE (reference);
* ``ddim-10-unclipped``: the plain ODE, x̂₀ not clipped (reference: what the clipping is for);
* ``ddim-50-diffusers``, ``ddim-10-diffusers``: diffusers' ``DDIMScheduler`` with
  ``clip_sample=True``, which steps with the raw ε (reference: the drift the clipped ODE removes);
* ``ddpm-10``, ``ddpm-1000`` with their own paired ``ddim-50-ref``: the stochastic sampler, on
  the first ``ref_seeds`` seeds (a second comparison; 1000 steps cost 20 times the baseline);
* ``real``: held-out real digits at the same n (`reference.harness.scores.real_row`).

The solvers are training-free approximations of one computation, so the primary metric is the
fidelity: the per-sample distance to the converged solution from the same noise
(``rms_to_solution``, eq. (6) of `reference.harness.compare`), with the distribution metrics on
the held-out digits beside it (FDD, KID, accuracy, diversity). Aims, on paired seeds:

    beats-control:  rms(solver_h) / rms(ddim_h) < 1           for DPM-Solver++ and UniPC     (1)
    fidelity:       rms(dpmpp2m_h) / rms(ddim_b) <= 1                                         (2)
    quality:        FDD(dpmpp2m_h) / FDD(ddim_b) <= 1.1                                       (3)

(1) is the solvers' claim at equal cost; (2) asks whether a fifth of the steps lands as close to
the solution as the baseline; (3) whether the distribution is as good. The headline speedup's
limit is the counted NFE ratio

    limit = NFE(ddim_b) / NFE(dpmpp2m_h)                                                      (4)

an estimate, not a bound: the solvers' own arithmetic per step differs and fixed costs do not
shrink with the steps. The sweep (every scheduler at every NFE of the grid, first seed) gives
the curves (`reference.scheduler_tradeoff.sweep`), kept in the settings for the figure.

Sources: DDIM, Song et al. 2021 (arXiv:2010.02502); DPM-Solver++, Lu et al. 2022
(arXiv:2211.01095); UniPC, Zhao et al. 2023 (arXiv:2302.04867); Euler in σ, Karras et al. 2022
(arXiv:2206.00364); DDPM, Ho et al. 2020 (arXiv:2006.11239); the clipped ODE and the baseline,
`reference.harness.ode`.

Pitfalls
========
* The solution is DPM-Solver++(2M) at 200 steps; its own error (about 2e-3 RMS) is the floor of
  every fidelity, which the baseline sanity study measures against a second solver.
* DDPM's samples depend on its step noise, so its rows have no fidelity and are judged on the
  distribution only, on fewer seeds.
* ``n_quality`` is at most 140 so that the held-out real row is measured at the same n (the FDD
  is biased by n).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from reference.harness.builders import held_out_comparison
from reference.harness.compare import FIDELITY, Comparison, HeadlineSpec, Outcome
from reference.harness.compare import measure as measure_comparison
from reference.harness.declared import SAMPLED_COLUMNS, lower, sampled_outcome
from reference.harness.results import Figure, metrics
from reference.harness.scores import QUALITY_METRICS, held_out_score

from .config import DEMO, FULL, OPTIONS, QUALITY_TOLERANCE, QUICK, Config
from .rows import aims, ancestral_specs, nfe_ratio, specs, variant
from .schedulers import TIMESTEP_SPACING

__all__ = ["CONTRACT", "DEMO", "FULL", "OPTIONS", "QUICK", "SLUG", "Config", "demo", "measure"]

CONTRACT = 2
SLUG = "scheduler-tradeoff"


def solution_of(cfg: Config, model: torch.nn.Module) -> Any:
    """The converged solution of each quality seed (cached by content)."""
    from reference.harness import class_labels, make_noise
    from reference.harness.solutions import solution

    def of(seed: int) -> torch.Tensor:
        n = cfg.n_quality
        return solution(model, make_noise(n, seed), class_labels(n), steps=cfg.solution_steps)

    return of


def comparison(cfg: Config, model: torch.nn.Module) -> Comparison:
    """The ODE samplers on paired seeds, judged on their fidelity, timed interleaved."""
    return held_out_comparison(
        cfg,
        [variant(cfg, s, model) for s in specs(cfg)],
        metrics(*SAMPLED_COLUMNS, "nfe", **lower(FIDELITY)),
        aims(cfg),
        HeadlineSpec(
            f"dpmpp2m-{cfg.headline_nfe}", quality=FIDELITY, limit=nfe_ratio, limit_kind="estimate"
        ),
        solution=solution_of(cfg, model),
    )


def ancestral(cfg: Config, model: torch.nn.Module) -> Comparison:
    """DDPM on the first ``ref_seeds`` seeds, paired with the baseline there; sampled, not timed."""
    variants = tuple(variant(cfg, s, model) for s in ancestral_specs(cfg))
    return Comparison(
        variants=variants,
        metrics=metrics(*QUALITY_METRICS, "nfe"),
        score=held_out_score(cfg.n_quality),
        seeds=cfg.seeds[: cfg.ref_seeds],
        aims=(),
        headline=HeadlineSpec(variants[-1].id),
        repeats=cfg.repeats,
        warmup=cfg.warmup,
    )


def measure(cfg: Config, staging: Path) -> Outcome:
    """The two comparisons, the sweep and the notes; the figures into ``staging``."""
    from reference import zoo
    from reference.harness.sampling import frozen
    from reference.harness.scores import real_row

    from .figures import plot_tradeoff, save_sample_grid
    from .notes import notes
    from .sweep import curves

    teacher = frozen(zoo.load_teacher())
    m = measure_comparison(comparison(cfg, teacher))
    more = [measure_comparison(ancestral(cfg, teacher))] if "ddpm" in cfg.schedulers else []
    points = run_sweep(cfg, teacher)
    real = real_row(cfg.n_quality)
    figures = [Figure(f"{SLUG}.png", "tradeoff"), Figure(f"{SLUG}-samples.png", "samples")]
    target = QUALITY_TOLERANCE * _point_fd(points, "ddim", cfg.baseline_nfe)
    levels = {
        f"real digits (n={cfg.n_quality})": real.fdd,
        f"DDIM {cfg.baseline_nfe} x {QUALITY_TOLERANCE}": target,
    }
    plot_tradeoff(points, staging / figures[0].file, levels)
    save_sample_grid(points, cfg.headline_nfe, staging / figures[1].file)
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, m, more, points, teacher, target),
        figures=figures,
        more=more,
        scheduler=None,
        timestep_spacing=TIMESTEP_SPACING,
        sweep_seed=cfg.seeds[0],
        sweep_fd_digits=curves(points, cfg.schedulers, "fd_digits"),
        sweep_rms_to_solution=curves(points, cfg.schedulers, "rms_to_solution"),
        sweep_seconds=curves(points, cfg.schedulers, "seconds"),
    )


def run_sweep(cfg: Config, model: torch.nn.Module) -> list[Any]:
    """The sweep on the first seed's noise (`reference.scheduler_tradeoff.sweep`)."""
    from reference.harness import class_labels, make_noise, model_eps_fn

    from .sweep import sweep

    seed, n = cfg.seeds[0], cfg.n_quality
    with torch.inference_mode():
        return sweep(
            model_eps_fn(model),
            cfg.schedulers,
            cfg.nfe_grid,
            make_noise(n, seed),
            class_labels(n),
            seed,
            held_out_score(n),
            solution_of(cfg, model)(seed),
        )


def _point_fd(points: list[Any], scheduler: str, nfe: int) -> float:
    return next(p.fd_digits for p in points if (p.scheduler, p.nfe) == (scheduler, nfe))


def demo(cfg: Config, out: Path) -> None:
    """FDD, fidelity and seconds of every scheduler at every NFE of ``cfg`` (first seed)."""
    from reference import zoo
    from reference.harness.sampling import frozen

    from .figures import plot_tradeoff, save_sample_grid
    from .schedulers import LABELS

    points = run_sweep(cfg, frozen(zoo.load_teacher()))
    header = " ".join(f"{k:>7}" for k in cfg.nfe_grid)
    for what in ("fd_digits", "rms_to_solution", "seconds"):
        print(f"{what:18} {header}")
        for s in cfg.schedulers:
            vals = [getattr(p, what) for p in points if p.scheduler == s]
            print(
                f"{LABELS[s]:18} " + " ".join("      -" if v is None else f"{v:7.3f}" for v in vals)
            )
    fig = plot_tradeoff(points, out / f"{SLUG}-demo.png", {})
    grid = save_sample_grid(points, cfg.headline_nfe, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(cfg.schedulers)}; NFE {cfg.headline_nfe})")
