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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference.harness.compare import (
    FIDELITY,
    Comparison,
    HeadlineSpec,
    Measured,
    Outcome,
    QualityAim,
    Variant,
    outcome,
)
from reference.harness.compare import measure as measure_comparison
from reference.harness.entry import integer, integers, names, seeds
from reference.harness.results import Figure, Metric, metrics, settings_of
from reference.harness.scores import QUALITY_METRICS, held_out_score

from .samplers import Mode, runner
from .schedulers import SCHEDULERS, TIMESTEP_SPACING

CONTRACT = 2
SLUG = "scheduler-tradeoff"
NFE_GRID: tuple[int, ...] = (1, 2, 4, 8, 10, 15, 20, 25, 50)
CONTROL_AIM = 1.0
"""(1): a solver lands closer to the solution than DDIM at the same NFE."""
FIDELITY_AIM = 1.0
"""(2): the headline solver at least as close to the solution as the baseline."""
QUALITY_TOLERANCE = 1.1
"""(3): the headline solver keeps the baseline's FDD within 10% (paired ratio)."""
MIN_QUALITY, MAX_QUALITY = 20, 140
"""Every class twice (the class-weighted KID needs pairs); the held-out real half's limit."""
LATENCY_SEED = 1000
"""Noise seed of the latency batch (apart from the quality seeds)."""
TECHNIQUES = ("dpmpp2m", "unipc")


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    n_quality: int = MAX_QUALITY
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    nfe_grid: tuple[int, ...] = NFE_GRID
    schedulers: tuple[str, ...] = tuple(SCHEDULERS)
    headline_nfe: int = 10
    baseline_nfe: int = 50
    ref_seeds: int = 2
    ref_steps: int = 1000
    batch_latency: int = 32
    repeats: int = 15
    warmup: int = 1
    solution_steps: int = 200
    """Steps of the converged solution (`reference.harness.ode.SOLUTION`); fewer only in QUICK."""

    def validate(self) -> None:
        missing = [s for s in ("ddim", "dpmpp2m") if s not in self.schedulers]
        if missing:
            raise ValueError(f"--schedulers must include ddim and dpmpp2m, got {self.schedulers}")
        if not self.headline_nfe < self.baseline_nfe:
            raise ValueError(
                f"--headline-nfe must be below --baseline-nfe {self.baseline_nfe}, "
                f"got {self.headline_nfe}"
            )
        for name, k in (
            ("--headline-nfe", self.headline_nfe),
            ("--baseline-nfe", self.baseline_nfe),
        ):
            if k not in self.nfe_grid:
                raise ValueError(f"{name} {k} is not one of --nfe-grid {self.nfe_grid}")
        if self.n_quality % 10:
            raise ValueError(
                f"--n-quality must be a multiple of 10 (classes), got {self.n_quality}"
            )
        if self.ref_seeds > len(self.seeds):
            raise ValueError(
                f"--ref-seeds must be at most the {len(self.seeds)} seeds, got {self.ref_seeds}"
            )
        if self.ref_steps <= self.headline_nfe:
            raise ValueError(
                f"--ref-steps must be above --headline-nfe {self.headline_nfe}, "
                f"got {self.ref_steps}"
            )


FULL = Config()
QUICK = Config(
    n_quality=20,
    seeds=(0, 1),
    nfe_grid=(1, 2, 4),
    headline_nfe=2,
    baseline_nfe=4,
    ref_steps=10,
    batch_latency=4,
    repeats=2,
    warmup=0,
    solution_steps=20,
)
DEMO = Config(
    n_quality=60, seeds=(0, 1), nfe_grid=(1, 2, 5, 10, 20), headline_nfe=5, baseline_nfe=20
)
OPTIONS = (
    integer("n_quality", low=MIN_QUALITY, high=MAX_QUALITY),
    seeds(),
    integers("nfe_grid", low=1, high=1000),
    names("schedulers", tuple(SCHEDULERS), min_count=2),
    integer("headline_nfe", low=1, high=1000),
    integer("baseline_nfe", low=2, high=1000),
    integer("ref_seeds", low=2, high=100),
    integer("ref_steps", low=2, high=1000),
    integer("batch_latency", low=1, high=256),
    integer("repeats", low=2, high=200),
    integer("warmup", low=0, high=20),
)


@dataclass(frozen=True)
class Spec:
    """One row: ``nfe`` evaluations of sampler ``name`` run as ``mode`` says."""

    id: str
    name: str
    nfe: int
    mode: Mode
    role: str
    timed: bool
    method: str


def specs(cfg: Config) -> list[Spec]:
    """The rows of the main comparison, baseline first (only the schedulers ``cfg`` names)."""
    h, b, on = cfg.headline_nfe, cfg.baseline_nfe, set(cfg.schedulers)
    out = [Spec(f"ddim-{b}", "ddim", b, "ode", "baseline", True, "ddim")]
    out += [Spec(f"{s}-{h}", s, h, "ode", "technique", True, s) for s in TECHNIQUES if s in on]
    out.append(Spec(f"ddim-{h}", "ddim", h, "ode", "control", True, "ddim"))
    if "euler" in on:
        out.append(Spec(f"euler-{h}", "euler", h, "ode", "reference", True, "euler"))
    out.append(
        Spec(f"ddim-{h}-unclipped", "ddim", h, "unclipped", "reference", False, "ddim-unclipped")
    )
    out += [
        Spec(f"ddim-{k}-diffusers", "ddim", k, "diffusers", "reference", False, "ddim-diffusers")
        for k in (b, h)
    ]
    return out


def ancestral_specs(cfg: Config) -> list[Spec]:
    """DDPM at the headline NFE and at ``ref_steps``, with the baseline on the same seeds."""
    b, h = cfg.baseline_nfe, cfg.headline_nfe
    return [
        Spec(f"ddim-{b}-ref", "ddim", b, "ode", "baseline", False, "ddim-ref"),
        Spec(f"ddpm-{h}", "ddpm", h, "ancestral", "reference", False, "ddpm"),
        Spec(
            f"ddpm-{cfg.ref_steps}",
            "ddpm",
            cfg.ref_steps,
            "ancestral",
            "reference",
            False,
            "ddpm-reference",
        ),
    ]


def variant(cfg: Config, spec: Spec, model: torch.nn.Module) -> Variant:
    """One row: its samples on a seed's noise (network evaluations counted, ``nfe``) and, if
    timed, one run on the latency batch."""
    from reference.harness import class_labels, count_nfe, make_noise, model_eps_fn

    run, eps = runner(spec.name, spec.mode), model_eps_fn(model)

    def sample(seed: int) -> tuple[torch.Tensor, dict[str, float]]:
        counter = count_nfe(eps)
        x = run(
            counter, make_noise(cfg.n_quality, seed), class_labels(cfg.n_quality), spec.nfe, seed
        )
        return x, {"nfe": float(counter.nfe)}

    noise, labels = make_noise(cfg.batch_latency, LATENCY_SEED), class_labels(cfg.batch_latency)
    config: dict[str, Any] = {"method": spec.method, "nfe": spec.nfe}
    if spec.method == "ddpm-reference":
        config |= {"samples": cfg.n_quality, "seeds": cfg.ref_seeds}
    return Variant(
        spec.id,
        config,
        spec.role,  # type: ignore[arg-type]
        sample=sample,  # type: ignore[arg-type]
        timed=(lambda: run(eps, noise, labels, spec.nfe, LATENCY_SEED)) if spec.timed else None,
    )


def aims(cfg: Config) -> tuple[QualityAim, ...]:
    """(1) for each solver against DDIM at its NFE, (2) and (3) for the headline."""
    h, b = cfg.headline_nfe, cfg.baseline_nfe
    beats = tuple(
        QualityAim(
            f"beats-control-{s}",  # one message per solver (a parameter cannot be a name)
            f"{s}-{h}",
            f"ddim-{h}",
            FIDELITY,
            "<",
            CONTROL_AIM,
            params={"nfe": h},
        )
        for s in TECHNIQUES
        if s in cfg.schedulers
    )
    params = {"nfe": h, "baseline_nfe": b}
    head = f"dpmpp2m-{h}"
    return (
        *beats,
        QualityAim("fidelity", head, f"ddim-{b}", FIDELITY, "<=", FIDELITY_AIM, params=params),
        QualityAim(
            "quality", head, f"ddim-{b}", "fd_digits", "<=", QUALITY_TOLERANCE, params=params
        ),
    )


def nfe_ratio(m: Measured) -> float:
    """(4): the counted network evaluations of the baseline over the headline's."""
    base, head = m.comparison.baseline, m.comparison.headline.row
    return m.table.summary(base, "nfe").value / m.table.summary(head, "nfe").value


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
    return Comparison(
        variants=tuple(variant(cfg, s, model) for s in specs(cfg)),
        metrics=metrics(
            "latency_ms", "speedup", *QUALITY_METRICS, "nfe", rms_to_solution=Metric("", "lower")
        ),
        score=held_out_score(cfg.n_quality),
        seeds=cfg.seeds,
        aims=aims(cfg),
        headline=HeadlineSpec(
            f"dpmpp2m-{cfg.headline_nfe}", quality=FIDELITY, limit=nfe_ratio, limit_kind="estimate"
        ),
        repeats=cfg.repeats,
        warmup=cfg.warmup,
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
    return outcome(
        m,
        settings=settings_of(
            cfg,
            timestep_spacing=TIMESTEP_SPACING,
            ode="clipped",
            quality_reference="held-out-half",
            sweep_seed=cfg.seeds[0],
            sweep_fd_digits=curves(points, cfg.schedulers, "fd_digits"),
            sweep_rms_to_solution=curves(points, cfg.schedulers, "rms_to_solution"),
            sweep_seconds=curves(points, cfg.schedulers, "seconds"),
        ),
        notes=notes(cfg, m, more, points, teacher, target),
        figures=figures,
        extra_rows=[real.as_row("fd_digits", "kid_digits")],
        more=more,
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
