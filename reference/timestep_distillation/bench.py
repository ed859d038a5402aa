"""Benchmark and demo of [`reference.timestep_distillation`][reference.timestep_distillation] (the
technique contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows, every one from the same noise and labels on every seed (`reference.timestep_distillation
.samplers` says how each samples):

* ``ddim50``: the zoo teacher with the harness's DDIM at 50 steps on the clipped ODE, trailing
  timesteps (baseline): the one baseline of every benchmark, whose convergence the baseline
  sanity study checks, so that this headline ratio reads like every other technique's;
* ``student8/4/2``: the distilled students, each with the sampler it was distilled for
  (technique);
* ``teacher8/4/2``: the teacher's DDIM on the clipped ODE on exactly the student's timesteps
  (control: the same network, the same number of network evaluations, so the same cost; only
  the weights differ);
* ``ddim8/4/2``: the teacher's DDIM on the clipped ODE on the harness's trailing timesteps at the
  student's step count (control: the same cost on the grid every other benchmark uses, the
  strongest training-free alternative a user has);
* ``teacher64``: the teacher's DDIM on the 64-step nested grid the distillation started from
  (reference; sampled, not timed);
* ``real``: held-out real digits at the same n (`reference.harness.scores.real_row`).

A student is a trained change, so its quality is judged on the distribution
(`reference.harness.scores.held_out_score`: FDD and class-weighted KID against the reference half
of the held-out digits, accuracy, diversity), not on its distance to the teacher's solution of
the same noise: its sampler starts on another grid (t = 945 instead of 999), so a per-sample
distance would mix the grid with the distillation. Aims, on paired seeds:

    beats-control:  FDD(student_n) / FDD(teacher_n) < 1   for every n                       (1)
    beats-trailing: FDD(student_n) / FDD(ddim_n) < 1      for every n                       (1')
    quality:        FDD(student_h) / FDD(ddim50) <= 1.1   (h: the headline steps)           (2)

(1) asks whether distillation improved the teacher on the timesteps it was distilled on; (1')
whether it beats the teacher with the same number of steps where the teacher does best, on the
trailing grid: a student is only worth training if it beats both.

The headline speedup's limit is the counted ratio of network evaluations,

    limit = NFE(ddim50) / NFE(student_h)                                                      (3)

an estimate, not a bound: the baseline's and the students' per-step work outside the network
differ, and fixed costs do not shrink with the steps.

Sources: progressive distillation, Salimans & Ho 2022 (arXiv:2202.00512), whose claim (1)-(2)
tests at toy scale; DDIM, Song et al. 2021 (arXiv:2010.02502); the clipped ODE and the baseline,
`reference.harness.ode`.

Pitfalls
========
* Only the teacher's rows are on the clipped ODE; the students keep their own sampler
  (`reference.timestep_distillation.samplers`), so a student's row and its control differ in
  the weights *and* in the ε of the step wherever x̂₀ is clipped: the claim (1) is about the
  student as distilled, the way a user runs it.
* The baseline's trailing grid and the students' nested grid start at different timesteps; the
  paired seeds share the noise and the labels, not the trajectory, which is why the quality is a
  distribution distance and not a per-sample one.
* ``n_quality`` is at most 140 so that the held-out real row is measured at the same n (the FDD
  is biased by n).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch

from reference.harness import compare, sizes
from reference.harness.builders import held_out_comparison
from reference.harness.compare import HeadlineSpec, QualityAim, Variant
from reference.harness.declared import sampled_outcome
from reference.harness.results import Figure, metrics
from reference.harness.scores import QUALITY_METRICS

from .config import (
    BASELINE,
    BASELINE_STEPS,
    CONTROL_AIM,
    DEMO,
    FULL,
    OPTIONS,
    QUALITY_TOLERANCE,
    QUICK,
    Config,
)
from .core import BASE_STEPS
from .notes import nfe_ratio, notes, train_seconds
from .samplers import RUNS
from .train import PLAN

CONTRACT = 2
SLUG = "timestep-distillation"
__all__ = ["CONTRACT", "DEMO", "FULL", "OPTIONS", "QUICK", "SLUG", "Config", "demo", "measure"]


def variant(
    cfg: Config, id: str, method: str, role: str, model: torch.nn.Module, steps: int, timed: bool
) -> Variant:
    """One row: ``steps`` steps of ``RUNS[method]`` with ``model`` on a seed's noise (its network
    evaluations counted, ``nfe``) and, if ``timed``, on the latency batch."""
    from reference.harness import class_labels, count_nfe, make_noise, model_eps_fn

    run, eps = RUNS[method], model_eps_fn(model)

    def sample(seed: int) -> tuple[torch.Tensor, dict[str, float]]:
        counter = count_nfe(eps)
        x = run(counter, make_noise(cfg.n_quality, seed), class_labels(cfg.n_quality), steps)
        return x, {"nfe": float(counter.nfe)}

    noise, labels = sizes.latency_inputs(cfg.batch_latency)
    return Variant(
        id,
        {"method": method, "steps": steps},
        role,  # type: ignore[arg-type]
        sample=sample,  # type: ignore[arg-type]
        timed=(lambda: run(eps, noise, labels, steps)) if timed else None,
    )


def variants(
    cfg: Config, teacher: torch.nn.Module, students: Mapping[int, torch.nn.Module]
) -> tuple[Variant, ...]:
    """Baseline, then per student step count (largest first) the student and its two controls
    (the teacher on its timesteps, the trailing DDIM at its cost), then the teacher on the
    distillation's 64-step grid."""
    out = [variant(cfg, BASELINE, "ddim", "baseline", teacher, BASELINE_STEPS, True)]
    for n in sorted(cfg.steps, reverse=True):
        out += [
            variant(cfg, f"student{n}", "student", "technique", students[n], n, True),
            variant(cfg, f"teacher{n}", "teacher-grid-ddim", "control", teacher, n, True),
            variant(cfg, f"ddim{n}", "ddim", "control", teacher, n, True),
        ]
    nested = f"teacher{BASE_STEPS}"
    out.append(variant(cfg, nested, "teacher-grid-ddim", "reference", teacher, BASE_STEPS, False))
    return tuple(out)


def aims(cfg: Config) -> tuple[QualityAim, ...]:
    """(1) and (1') for every student against its two controls, (2) for the headline student."""
    h, fdd = cfg.headline_steps, "fd_digits"

    def beats(aim: str, control: str) -> tuple[QualityAim, ...]:
        """Each student at ``n`` steps beats the ``control`` row at the same steps, on FDD."""
        return tuple(
            QualityAim(
                aim, f"student{n}", f"{control}{n}", fdd, "<", CONTROL_AIM, "ratio", {"steps": n}
            )
            for n in sorted(cfg.steps, reverse=True)
        )

    params = {"steps": h, "base_steps": BASELINE_STEPS}
    quality = QualityAim(
        "quality", f"student{h}", BASELINE, fdd, "<=", QUALITY_TOLERANCE, "ratio", params
    )
    return (*beats("beats-control", "teacher"), *beats("beats-trailing", "ddim"), quality)


def comparison(
    cfg: Config, teacher: torch.nn.Module, students: Mapping[int, torch.nn.Module]
) -> compare.Comparison:
    """The rows on paired seeds, scored on the held-out digits, timed interleaved."""
    return held_out_comparison(
        cfg,
        variants(cfg, teacher, students),
        metrics("latency_ms", "speedup", *QUALITY_METRICS, "nfe"),
        aims(cfg),
        HeadlineSpec(
            f"student{cfg.headline_steps}",
            quality="fd_digits",
            limit=nfe_ratio,  # (3), counted in this run
            limit_kind="estimate",
        ),
    )


def _measured(cfg: Config) -> compare.Measured:
    from reference import zoo
    from reference.harness.sampling import frozen

    from .students import load_student

    students = {n: frozen(load_student(n)) for n in cfg.steps}
    return compare.measure(comparison(cfg, frozen(zoo.load_teacher()), students))


def measure(cfg: Config, staging: Path) -> compare.Outcome:
    """Sample (paired seeds), score, count and time every row; write the figures."""
    from reference.harness.scores import real_row

    from .figures import quality_curve, samples_grid

    m = _measured(cfg)
    real = real_row(cfg.n_quality)
    h = cfg.headline_steps
    figures = [Figure(f"{SLUG}.png", "quality-vs-steps"), Figure(f"{SLUG}-samples.png", "samples")]
    quality_curve(staging / figures[0].file, m.table, cfg.steps, real.fdd)
    samples_grid(staging / figures[1].file, m.first, [BASELINE, f"student{h}", f"teacher{h}"])
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, m),
        figures=figures,
        scheduler=None,
        baseline_steps=BASELINE_STEPS,
        base_steps=BASE_STEPS,
        guidance_scale=1.0,
        student_sampler="grid-ddim",
        distillation_train_seconds=round(train_seconds(*PLAN), 1),
        teacher_train_seconds=round(train_seconds("teacher"), 1),
    )


def demo(cfg: Config, out: Path) -> None:
    """The students against the teacher at the same steps and the baseline: a table and a grid."""
    from .figures import samples_grid

    m = _measured(cfg)
    print(f"{'row':12s} {'NFE':>4s} {'ms':>8s} {'FDD':>7s} {'KID':>8s} {'acc':>5s}")
    for row in m.rows:
        v = row.values
        ms = "-" if v.get("latency_ms") is None else f"{v['latency_ms']:.1f}"
        print(
            f"{row.id:12s} {v['nfe']:4.0f} {ms:>8s} {v['fd_digits']:7.2f} "
            f"{v['kid_digits']:8.1f} {v['accuracy']:5.2f}"
        )
    h = cfg.headline_steps
    keys = [BASELINE, f"student{h}", f"teacher{h}"]
    path = samples_grid(out / f"{SLUG}-demo.png", m.first, keys)
    print(f"{path} (rows: {', '.join(keys)}; means over seeds {list(cfg.seeds)})")
