"""Benchmark and demo of [`reference.classifier_guidance`][reference.classifier_guidance] (the
technique contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows, every one from the same noise and target labels on every seed, all with DDIM on the clipped
ODE (`reference.classifier_guidance.rows` says how each samples):

* ``ddim50``: the conditional zoo teacher, 50 steps (baseline): the one baseline of every
  benchmark, whose convergence the baseline sanity study checks;
* ``uncond``: the same weights fed the null class (reference): the unconditional model that
  classifier guidance steers;
* ``cg-s``: that unconditional model guided by the noise-aware classifier at scale ``s``
  (technique; the headline scale is fixed in the configuration before the run);
* ``cfg-w``: classifier-free guidance on the same weights at scale ``w`` (control);
* ``cfg-matched``: classifier-free guidance at the headline ``w`` with the fewer steps that cost
  what classifier guidance costs per sample (control at the same FLOPs);
* ``ddimN``, ``cg-s@N``, ``cfg-w@N``: the conditional model and both headline scales at the
  fewer steps of ``--nfe-grid`` (reference rows: the accuracy-against-NFE curves);
* ``real``: held-out real digits at the same n (`reference.harness.scores.real_row`).

Guidance changes the distribution to sample, so quality is judged on the distribution (held-out
FDD and KID, class accuracy, diversity), never as a distance to the conditional ODE's solution.
Aims, on paired seeds, for the headline ``s``:

    accuracy:               mean accuracy(cg-s) >= 0.9                                     (1)
    beats-unguided:         FDD(cg-s) / FDD(uncond) < 1                                    (2)
    accuracy-vs-same-cost:  accuracy(cg-s) - accuracy(cfg-matched) >= 0                   (3)
    quality-vs-same-cost:   FDD(cg-s) / FDD(cfg-matched) <= 1                              (4)

(2) is the claim of Dhariwal & Nichol 2021 (arXiv:2105.05233, Table 4: guidance lowers the FID
of an unconditional ImageNet model); (3)-(4) ask whether the classifier's gradient is worth its
cost against the alternative that needs no classifier (Ho & Salimans 2022, arXiv:2207.12598).

The headline is ``cg-s`` against the baseline: its speedup is below 1 (guidance adds work to every
step, it removes none), and its limit is the ratio of FLOPs per sample,

    limit = F_cond · K / (F_cg · K) = F_cond / F_cg                                        (5)

an estimate, not a bound: the classifier's backward pass is not the only work outside the
network, and matrix products are not all of the time.

Pitfalls
========
* ``n_quality`` is at most 140 so that the held-out real row is measured at the same n.
* The unguided rows ignore their targets: they have no accuracy and no class-weighted KID.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference.harness.builders import held_out_comparison
from reference.harness.compare import Comparison, HeadlineSpec, Measured, Outcome, QualityAim
from reference.harness.compare import measure as measure_comparison
from reference.harness.declared import SAMPLED_COLUMNS, sampled_outcome
from reference.harness.results import Figure, metrics

from . import config
from .config import BASELINE, BASELINE_STEPS, DEMO, FULL, OPTIONS, QUICK, Config
from .rows import row_id

CONTRACT = 2
SLUG = "classifier-guidance"
__all__ = ["CONTRACT", "DEMO", "FULL", "OPTIONS", "QUICK", "SLUG", "Config", "demo", "measure"]


def aims(cfg: Config, matched: int) -> tuple[QualityAim, ...]:
    """(1)-(4) for the headline classifier guidance; ``matched``: the control's steps."""
    s, k = cfg.cg_scale, BASELINE_STEPS
    head = row_id("classifier-guidance", s, k)
    same = {"scale": s, "steps": k, "cfg_scale": cfg.cfg_scale, "cfg_steps": matched}
    return (
        QualityAim("accuracy", head, None, "accuracy", ">=", config.ACCURACY_AIM, "value",
                   {"scale": s, "steps": k}),
        QualityAim("beats-unguided", head, "uncond", "fd_digits", "<", config.UNGUIDED_AIM, "ratio",
                   {"scale": s}),
        QualityAim("accuracy-vs-same-cost", head, "cfg-matched", "accuracy", ">=", 0.0,
                   "difference", same),
        QualityAim("quality-vs-same-cost", head, "cfg-matched", "fd_digits", "<=",
                   config.SAME_COST_AIM, "ratio", same),
    )  # fmt: skip


def comparison(cfg: Config, sampler: Any, flops: dict[str, float], matched: int) -> Comparison:
    """The rows on paired seeds, scored on the held-out digits, timed interleaved."""
    from .rows import variants

    head = row_id("classifier-guidance", cfg.cg_scale, BASELINE_STEPS)
    return held_out_comparison(
        cfg,
        variants(cfg, sampler, flops, matched),
        metrics(*SAMPLED_COLUMNS, "gflops", "nfe"),
        aims(cfg, matched),
        HeadlineSpec(
            head,
            quality="fd_digits",
            limit=flops["uncond"] / flops["cg"],  # (5)
            limit_kind="estimate",
        ),
    )


def _measured(cfg: Config) -> tuple[Measured, dict[str, float], int]:
    """The FLOPs of one step of each method, the matched steps, and the measured comparison."""
    import torch

    from reference.harness import count_flops

    from .rows import Sampler
    from .study import Models, matched_steps

    models = Models()
    fns = models.step_fns(cfg.batch_latency, max(cfg.seeds) + 1)
    with torch.no_grad():
        flops = {name: count_flops(f) / cfg.batch_latency for name, f in fns.items()}
    matched = matched_steps(BASELINE_STEPS, flops)
    return measure_comparison(comparison(cfg, Sampler(models), flops, matched)), flops, matched


def measure(cfg: Config, staging: Path) -> Outcome:
    """Sample (paired seeds), score, count and time every row; write the figures."""

    from .figures import plot_study, save_samples
    from .notes import notes

    m, flops, matched = _measured(cfg)
    figures = [Figure(f"{SLUG}.png", "scales-and-nfe"), Figure(f"{SLUG}-samples.png", "samples")]
    plot_study(m, cfg, matched, staging / figures[0].file)
    save_samples(m, cfg, staging / figures[1].file)
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, m, flops, matched),
        figures=figures,
        scheduler=None,
        baseline_steps=BASELINE_STEPS,
        matched_cfg_steps=matched,
    )


def demo(cfg: Config, out: Path) -> None:
    """Every row's accuracy, FDD and diversity (means over the seeds), the latency of the timed
    rows, the figures."""
    from .figures import grid_rows, plot_study, save_samples

    m, _, matched = _measured(cfg)
    print(f"{'row':14s} {'NFE':>4s} {'ms':>8s} {'acc':>5s} {'FDD':>7s} {'div':>6s}")
    for row in m.rows:
        v = row.values
        ms = "-" if v.get("latency_ms") is None else f"{v['latency_ms']:.1f}"
        acc = "-" if v.get("accuracy") is None else f"{v['accuracy']:.2f}"
        print(
            f"{row.id:14s} {v['nfe']:4.0f} {ms:>8s} {acc:>5s} {v['fd_digits']:7.2f} "
            f"{v['diversity']:6.2f}"
        )
    fig = plot_study(m, cfg, matched, out / f"{SLUG}-demo.png")
    grid = save_samples(m, cfg, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(grid_rows(cfg))}; baseline {BASELINE})")
