"""Benchmark and demo of [`reference.accelerate_method`][reference.accelerate_method] (the technique
contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows, every one from the same noise and labels on every seed, all with DDIM on the clipped ODE
(`reference.accelerate_method.samplers` says how each samples):

* ``ddim50``: the zoo teacher U-Net, 50 steps (baseline): the one baseline of every benchmark;
* ``newton``: the same 50 steps with the network run on the steps of the schedule (warm-up
  ``w``, then every ``k``-th) and the Newton forecast of order ``m`` in between (technique);
* ``reuse`` (the last output, order 0) and ``ddim-same`` (DDIM with as many network evaluations,
  fewer and larger steps) at the same ``k`` (controls, timed);
* ``newton1`` (order 1) and ``taylor`` (TaylorSeer's finite-difference formula) at the same ``k``
  (techniques, sampled only), ``newton-kK`` and ``ddim-kK`` at the other intervals;
* on the zoo DiT, in a second comparison with its own baseline ``dit-ddim50``: our forecasts,
  DDIM with the same NFE and diffusers' ``apply_taylorseer_cache`` (order 1, the same steps);
* ``real``: held-out real digits at the same n (`reference.harness.scores.real_row`).

Forecasting approximates the baseline's own computation (the same ODE, the same steps), so its
primary figure is the fidelity, each sample's distance to the converged solution of its noise
(``rms_to_solution``, eq. (6) of `reference.harness.compare`), with the held-out FDD, KID,
accuracy and diversity beside it. Aims, on paired seeds and timing rounds:

    beats-same-nfe:  rms(newton) / rms(ddim-same) < 1                                      (1)
    fidelity:        rms(newton) / rms(ddim50) <= 2                                         (2)
    quality:         FDD(newton) / FDD(ddim50) <= 1.1                                       (3)
    speedup:         median T(ddim50) / median T(newton) >= 1.7                              (4)

(1) is the question a user should ask first: is forecasting better than simply taking fewer,
larger steps at the same cost? The headline speedup's limit is the bound of
`reference.accelerate_method.schedule.speedup_limit`, from the evaluations counted in the run:

    limit = N / NFE(newton) = 50 / (w + ceil((50 - w) / k))                                (5)

a true bound: both runs take the same 50 steps and call the same network at the same batch, and
the forecasts only add work.

Sources: TaylorSeer, Liu et al. 2025 (arXiv:2503.06923); DDIM, Song et al. 2021
(arXiv:2010.02502); the clipped ODE, the baseline and the solution, `reference.harness.ode`.

Pitfalls
========
* The DiT rows are a separate comparison: their fidelity is to the DiT's own solution, and their
  speedups are against ``dit-ddim50``, never against the U-Net.
* ``n_quality`` is at most 140 so that the held-out real row is measured at the same n.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference.harness.builders import held_out_comparison
from reference.harness.compare import (
    FIDELITY,
    Comparison,
    HeadlineSpec,
    Measured,
    Outcome,
    QualityAim,
    SpeedupAim,
)
from reference.harness.compare import measure as measure_comparison
from reference.harness.declared import SAMPLED_COLUMNS, sampled_outcome
from reference.harness.results import Figure, metrics

from . import config
from .config import BASELINE, BASELINE_STEPS, DEMO, FULL, OPTIONS, QUICK, Config
from .notes import limit
from .schedule import full_computations

CONTRACT = 2
SLUG = "accelerate-method"
GRID_ROWS = (BASELINE, "newton", "reuse", "ddim-same")
"""The rows of the sample grid, top to bottom."""
__all__ = ["CONTRACT", "DEMO", "FULL", "OPTIONS", "QUICK", "SLUG", "Config", "demo", "measure"]


def aims(cfg: Config) -> tuple[Any, ...]:
    """(1)-(4) for the headline forecast."""
    k = cfg.interval
    full = full_computations(BASELINE_STEPS, k, cfg.forecast_warmup)
    steps = {"k": k, "steps": BASELINE_STEPS}
    c = config
    return (
        QualityAim("beats-same-nfe", "newton", "ddim-same", FIDELITY, "<", c.SAME_NFE_AIM, "ratio",
                   {"k": k, "full": full}),
        QualityAim("fidelity", "newton", BASELINE, FIDELITY, "<=", c.FIDELITY_AIM, "ratio", steps),
        QualityAim("quality", "newton", BASELINE, "fd_digits", "<=", c.QUALITY_AIM, "ratio", steps),
        SpeedupAim("speedup", "newton", BASELINE, ">=", c.SPEEDUP_AIM,
                   {**steps, "limit": BASELINE_STEPS / full}),
    )  # fmt: skip


def _comparison(cfg: Config, variants: list[Any], model: Any, head: str, aims: tuple) -> Comparison:
    from reference.harness.fidelity import solution_of

    return held_out_comparison(
        cfg,
        variants,
        metrics(*SAMPLED_COLUMNS, "nfe"),
        aims,
        HeadlineSpec(head, quality=FIDELITY, limit=limit, limit_kind="bound"),
        solution=solution_of(model, cfg.n_quality, cfg.solution_steps),
    )


def _measured(cfg: Config) -> tuple[Measured, list[Measured]]:
    """The U-Net comparison (the headline) and, with ``dit``, the DiT's."""
    from reference import zoo
    from reference.harness.sampling import frozen

    from .samplers import dit_variants, unet_variants

    unet = frozen(zoo.load_teacher())
    m = measure_comparison(_comparison(cfg, unet_variants(cfg, unet), unet, "newton", aims(cfg)))
    if not cfg.dit:
        return m, []
    dit = frozen(zoo.load_dit())
    c = _comparison(cfg, dit_variants(cfg, dit), dit, "dit-newton", ())
    return m, [measure_comparison(c)]


def measure(cfg: Config, staging: Path) -> Outcome:
    """Sample (paired seeds), score, count and time every row; write the figures."""

    from .figures import plot_fidelity_vs_nfe, save_samples
    from .notes import notes

    m, more = _measured(cfg)
    figures = [Figure(f"{SLUG}.png", "fidelity-vs-nfe"), Figure(f"{SLUG}-samples.png", "samples")]
    plot_fidelity_vs_nfe(m, cfg, staging / figures[0].file)
    save_samples(m, GRID_ROWS, staging / figures[1].file)
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, m, more),
        figures=figures,
        more=more,
        scheduler=None,
        baseline_steps=BASELINE_STEPS,
    )


def demo(cfg: Config, out: Path) -> None:
    """Every row's NFE, fidelity, FDD and latency (means over the seeds); the figures."""
    from .figures import plot_fidelity_vs_nfe, save_samples

    m, more = _measured(cfg)
    print(f"{'row':16} {'NFE':>4} {'rms':>7} {'FDD':>7} {'ms':>8} {'speedup':>7}")
    for row in [r for x in (m, *more) for r in x.rows]:
        v = row.values
        ms = "-" if v.get("latency_ms") is None else f"{v['latency_ms']:.0f}"
        sp = "-" if v.get("speedup") is None else f"{v['speedup']:.2f}"
        print(
            f"{row.id:16} {v['nfe']:4.0f} {v[FIDELITY]:7.4f} {v['fd_digits']:7.2f} {ms:>8} {sp:>7}"
        )
    print(f"limit 50 / NFE = {limit(m):.2f}")
    fig = plot_fidelity_vs_nfe(m, cfg, out / f"{SLUG}-demo.png")
    grid = save_samples(m, GRID_ROWS, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(GRID_ROWS)})")
