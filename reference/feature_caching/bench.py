"""Benchmark and demo of [`reference.feature_caching`][reference.feature_caching] (the technique
contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows, every one from the same noise and labels on every seed, all with DDIM on the clipped ODE
(`reference.feature_caching.rows` says how each samples):

* ``ddim50``: the zoo teacher U-Net, 50 steps (baseline): the one baseline of every benchmark;
* ``dcN``: DeepCache at interval ``N`` (technique): the whole U-Net every ``N``-th step, only its
  shallow path around the cached deep feature in between;
* ``dc-lru``: the headline DeepCache with the exact condition-embedding LRU (technique, timed
  only: its samples are the headline's, tested);
* ``ddim-dcN``: DDIM with the steps whose FLOPs equal DeepCache's at ``N`` (control; the
  headline's is timed);
* on the zoo DiT, in a second comparison with its own baseline ``dit-ddim50`` and solution:
  diffusers' First Block Cache and Pyramid Attention Broadcast hooks;
* ``real``: held-out real digits at the same n (`reference.harness.scores.real_row`).

DeepCache approximates the baseline's own computation (the same ODE, the same steps), so its
primary figure is the fidelity, each sample's distance to the converged solution of its noise
(``rms_to_solution``, eq. (6) of `reference.harness.compare`), with the held-out FDD, KID,
accuracy and diversity beside it. Aims for the headline interval ``h``, on paired seeds and
timing rounds:

    speedup:             median T(ddim50) / median T(dc_h) >= 1.6                           (1)
    fidelity:            rms(dc_h) / rms(ddim50) <= 2                                       (2)
    quality:             FDD(dc_h) / FDD(ddim50) <= 1.15                                    (3)
    fidelity-vs-control: rms(dc_h) / rms(ddim-dc_h) <= 1                                    (4)
    speed-vs-control:    median T(ddim-dc_h) / median T(dc_h) >= 1                          (5)

(4)-(5) ask whether caching beats simply taking fewer steps at the same FLOPs. The headline
speedup's limit is the FLOP ratio of the work the run did
(`reference.feature_caching.deepcache.flop_speedup_estimate`, full passes counted):

    limit = 50 / (full + (50 - full) · (1 - f))                                           (6)

an estimate, not a bound: the FLOP counter sees matrix products and convolutions only.

Sources: DeepCache, Ma, Fang and Wang 2024 (arXiv:2312.00858); DDIM, Song et al. 2021
(arXiv:2010.02502); the clipped ODE, the baseline and the solution, `reference.harness.ode`.

Pitfalls
========
* First Block Cache and Pyramid Attention Broadcast run on the zoo DiT, in a comparison of their
  own: fidelity to the DiT's solution, speed against ``dit-ddim50``. Never read them against the
  U-Net's rows.
* A larger ``--n-quality`` than 140 is refused: the held-out real row could not be measured at
  that n (`reference.harness.sizes.MAX_QUALITY`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference.harness import compare
from reference.harness.builders import held_out_comparison
from reference.harness.compare import FIDELITY, HeadlineSpec, QualityAim, SpeedupAim
from reference.harness.declared import SAMPLED_COLUMNS, lower, sampled_outcome
from reference.harness.results import Figure, metrics

from . import config
from .config import BASELINE, BASELINE_STEPS, DEMO, FULL, OPTIONS, QUICK, Config

CONTRACT = 2
SLUG = "feature-caching"
__all__ = ["CONTRACT", "DEMO", "FULL", "OPTIONS", "QUICK", "SLUG", "Config", "demo", "measure"]


def aims(cfg: Config, control_steps: int) -> tuple[Any, ...]:
    """(1)-(5) for the headline interval; ``control_steps``: the matched DDIM's steps."""
    h = cfg.headline_interval
    head, ctrl = f"dc{h}", f"ddim-dc{h}"
    p, c = {"interval_n": h}, {"interval_n": h, "control_steps": control_steps}
    control_aim = config.CONTROL_AIM
    return (
        SpeedupAim("speedup", head, BASELINE, ">=", config.SPEEDUP_AIM, p),
        QualityAim("fidelity", head, BASELINE, FIDELITY, "<=", config.FIDELITY_AIM, "ratio", p),
        QualityAim("quality", head, BASELINE, "fd_digits", "<=", config.QUALITY_AIM, "ratio", p),
        QualityAim("fidelity-vs-control", head, ctrl, FIDELITY, "<=", control_aim, "ratio", c),
        SpeedupAim("speed-vs-control", head, ctrl, ">=", control_aim, c),
    )


def _comparison(
    cfg: Config, variants: list[Any], model: Any, headline: HeadlineSpec, aims: tuple
) -> compare.Comparison:
    from reference.harness.fidelity import solution_of

    columns = metrics(*SAMPLED_COLUMNS, "gflops", **lower("full_steps"))
    solution = solution_of(model, cfg.n_quality, cfg.solution_steps)
    return held_out_comparison(cfg, variants, columns, aims, headline, solution=solution)


def _measured(cfg: Config) -> tuple[compare.Measured, list[compare.Measured], dict[str, Any]]:
    """The U-Net comparison (the headline), the DiT's with ``dit``, and what the notes need."""
    from reference import zoo
    from reference.harness.sampling import frozen

    from .conditioning import ConditionEmbeddingCache
    from .deepcache import check_supported, matched_ddim_steps, skipped_flop_fraction
    from .notes import limit
    from .rows import dit_variants, unet_variants

    unet = frozen(zoo.load_teacher())
    check_supported(unet, cfg.branch)
    f = skipped_flop_fraction(unet, cfg.branch)
    lru = ConditionEmbeddingCache(unet, maxsize=4096)
    head = HeadlineSpec(f"dc{cfg.headline_interval}", quality=FIDELITY,
                        limit=lambda m: limit(m, f), limit_kind="estimate")  # fmt: skip
    control = matched_ddim_steps(BASELINE_STEPS, cfg.headline_interval, f)
    c = _comparison(cfg, unet_variants(cfg, unet, f, lru), unet, head, aims(cfg, control))
    m, more = compare.measure(c), []
    if cfg.dit:
        dit = frozen(zoo.load_dit())
        spec = HeadlineSpec("dit-fbc", quality=FIDELITY)
        more = [compare.measure(_comparison(cfg, dit_variants(cfg), dit, spec, ()))]
    return m, more, {"f": f, "lru": lru, "unet": unet}


def measure(cfg: Config, staging: Path) -> compare.Outcome:
    """Sample (paired seeds), score, count and time every row; write the figures."""

    from .figures import plot_speed_and_fidelity, save_samples
    from .notes import notes

    m, more, extra = _measured(cfg)
    h = cfg.headline_interval
    figures = [Figure(f"{SLUG}.png", "speed-and-quality"), Figure(f"{SLUG}-samples.png", "samples")]
    plot_speed_and_fidelity(m, cfg, extra["f"], staging / figures[0].file)
    save_samples(m, [BASELINE, f"dc{h}", f"ddim-dc{h}"], staging / figures[1].file)
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, m, more, extra),
        figures=figures,
        more=more,
        scheduler=None,
        baseline_steps=BASELINE_STEPS,
        skipped_flop_fraction=round(extra["f"], 4),
    )


def demo(cfg: Config, out: Path) -> None:
    """Every row's full passes, fidelity, FDD and latency (means over the seeds); the figures."""
    from .figures import plot_speed_and_fidelity, save_samples

    m, more, extra = _measured(cfg)
    print(f"f = {extra['f']:.3f} (the FLOPs a cached step skips)")
    print(f"{'row':12} {'full':>5} {'rms':>7} {'FDD':>7} {'ms':>8} {'speedup':>7}")
    for row in [r for x in (m, *more) for r in x.rows if x.table.values.get(r.id)]:
        v = row.values
        ms = "-" if v.get("latency_ms") is None else f"{v['latency_ms']:.0f}"
        sp = "-" if v.get("speedup") is None else f"{v['speedup']:.2f}"
        print(
            f"{row.id:12} {v['full_steps']:5.1f} {v[FIDELITY]:7.4f} {v['fd_digits']:7.2f} "
            f"{ms:>8} {sp:>7}"
        )
    h = cfg.headline_interval
    fig = plot_speed_and_fidelity(m, cfg, extra["f"], out / f"{SLUG}-demo.png")
    rows = [BASELINE, f"dc{h}", f"ddim-dc{h}"]
    grid = save_samples(m, rows, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(rows)})")
