"""Benchmark and demo of
[`reference.stochastic_reparameterization`][reference.stochastic_reparameterization] (the technique
contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Two kinds of rows.

``train-*`` rows are the declared comparison. Every training scheme (`SCHEMES`) trains a tiny
U-Net from scratch with the same training seeds and budget; the change is trained, so the
primary metric is the distribution of its samples. On every noise seed each scheme's models
sample the *same* noise (paired seeds) with DDIM on the clipped ODE (`reference.harness.ode`),
and the samples are scored against the reference half of the held-out digits
(`reference.harness.scores.held_out_score`, ``n_quality`` = 140 per seed, the size of the
held-out real row ``real``). Roles: ``train-eps`` (eps, uniform ``t``) is the baseline and the
first variant, so every ratio is against it; the sampling schemes of the eps objective are the
techniques; v, x0 and EDM (another objective, not another estimator of it) are references. The
headline is ``train-eps-is-ld-anti``'s paired FDD ratio (3) of `reference.harness.compare`:

    ratio = exp((1/S) Σ_s log(FDD_s(is-ld-anti) / FDD_s(eps)))                      (1)

where a seed's FDD is the mean over the scheme's training runs, each sampled from that seed's
noise (`RunScores`). The yardsticks measured once per scheme (held-out eps- and x0-MSE after the
budget, the own objective's noise) are the variants' ``facts``.

``var-*`` rows are not a comparison of samples, and stay extra rows
(`reference.stochastic_reparameterization.rows`). Each estimates the variance of one minibatch
estimator of an objective from repeated draws (a loss estimate on the zoo teacher, a gradient on
a tiny U-Net), and its interval is the variance ratio's own (an F interval for the loss, a
bootstrap over the gradient sketch, `reference.stochastic_reparameterization.variance`): there
is no noise seed whose samples could be scored and paired, so the harness's per-seed statistics
do not apply, and a `FactAim` (a point value, no interval) would hide that a variance estimated
from 200 draws is itself uncertain. Their two aims, ``loss-variance`` and ``gradient-variance``,
judge ``var-eps-is-ld-anti`` (the headline's scheme, named in advance) against ``var-eps-iid``
on that interval; they are added to the measured aims before the result is assembled.

Pitfalls
========
* The tiny U-Nets are unconditional: the held-out score's accuracy and within-class diversity
  read the labels the samples were drawn with and mean nothing here, so only the FDD and the
  KID are kept (`RunScores` says why the KID stays unbiased).
* The quality intervals cover the noise seeds, not the training runs; the ``training-seeds``
  note gives the headline ratio of every training run, which is what a reader should look at
  before calling a difference real.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference.harness import sizes
from reference.harness.declared import higher, lower, sampled_outcome
from reference.harness.entry import integer
from reference.harness.results import metrics

CONTRACT = 2
SLUG = "stochastic-reparameterization"
HEADLINE = "train-eps-is-ld-anti"


@dataclass(frozen=True)
class Config(sizes.Scored):
    """Sizes of one run: variance draws, batch, training budget, quality samples and seeds."""

    batch: int = 32
    loss_draws: int = 200
    grad_draws: int = 128
    own_draws: int = 48
    train_steps: int = 400
    train_batch: int = 32
    eval_every: int = 40
    steps: int = 50
    is_bins: int = 50
    is_history: int = 10
    heldout_images: int = 300
    heldout_repeats: int = 4
    train_seeds: int = 2

    def validate(self) -> None:
        super().validate()
        if self.batch % 2:
            raise ValueError(
                f"--batch must be an even number >= 2 (antithetic pairs), got {self.batch}"
            )
        if self.own_draws < 2 or self.loss_draws < 4:
            raise ValueError("a variance needs repeated draws: own_draws >= 2, loss_draws >= 4")


FULL = Config()
QUICK = Config(
    batch=8, loss_draws=6, grad_draws=4, own_draws=3, train_steps=6, train_batch=8, eval_every=3,
    n_quality=sizes.MIN_QUALITY, steps=5, is_bins=4, is_history=2, heldout_images=40,
    heldout_repeats=1, train_seeds=1, seeds=(0, 1),
)  # fmt: skip
DEMO = Config(loss_draws=100)
OPTIONS = (
    integer("batch", low=2, high=512),
    integer("loss_draws", low=4, high=100_000),
    integer("grad_draws", low=2, high=10_000),
    integer("train_steps", low=1, high=100_000),
    integer("steps", low=1, high=1000),
    integer("train_seeds", low=1, high=20),
    *sizes.SCORED_OPTIONS,
)
METRICS = metrics(
    "fd_digits",
    "kid_digits",
    **higher("loss_var_reduction", "grad_var_reduction", "proj_var_reduction", unit="x"),
    **lower("loss_rel_var", "grad_noise_ratio", "noise_scale"),
    **lower("heldout_eps_mse", "heldout_x0_mse", "examples_to_reach"),
)


def role_of_scheme(key: str) -> str:
    """The eps baseline, the eps sampling schemes (techniques), other objectives (references)."""
    if key == "eps":
        return "baseline"
    return "technique" if key.startswith("eps") else "reference"


def comparison(ctx: Any, runs: Mapping[str, Any], cfg: Config, scores: Any) -> Any:
    """Every trained scheme on the same noise, scored on the held-out digits (1)."""
    from reference.harness.compare import Comparison, HeadlineSpec, Variant

    from .rows import scheme_facts
    from .training_runs import sampler_of

    facts = scheme_facts(runs, cfg.batch)
    config = {"steps": cfg.train_steps, "batch": cfg.train_batch}
    variants = tuple(
        Variant(
            f"train-{key}",
            {"method": f"training-{key}", **config},
            role_of_scheme(key),  # type: ignore[arg-type]
            sample=sampler_of(ctx, run, cfg.n_quality, cfg.steps),
            facts=facts[key],
        )
        for key, run in runs.items()
    )
    return Comparison(
        variants=variants,
        metrics=METRICS,
        score=scores,
        seeds=cfg.seeds,
        aims=(),
        headline=HeadlineSpec(HEADLINE, quality="fd_digits"),
        repeats=0,
        warmup=0,
    )


def _studies(cfg: Config) -> dict[str, Any]:
    """Train every scheme, then the two variance studies (the gradient study reuses the eps
    and EDM models the training made)."""
    from .studies import Context, teacher_loss_study, tiny_gradient_study
    from .training_runs import training_runs

    ctx = Context.make()
    runs = training_runs(ctx, cfg, progress=True)
    loss = teacher_loss_study(ctx, cfg, progress=True)
    models = {"eps": runs["eps"].model, "edm": runs["edm"].model}
    grads = tiny_gradient_study(ctx, models, cfg, True)
    return {"ctx": ctx, "runs": runs, "loss": loss, "grads": grads}


def measure(cfg: Config, staging: Path) -> Any:
    """Train, measure the variances, sample and score every scheme on paired seeds; write the
    three figures."""
    from reference.harness.compare import measure as measure_comparison
    from reference.harness.results import Figure

    from .figures import mechanism_figure, training_figure, variance_figure
    from .notes import notes_of
    from .rows import variance_aims, variance_rows
    from .training_runs import RunScores

    s = _studies(cfg)
    ctx, runs, loss, grads = s["ctx"], s["runs"], s["loss"], s["grads"]
    scores = RunScores(cfg.n_quality)
    m = measure_comparison(comparison(ctx, runs, cfg, scores))
    vrows = variance_rows(loss, grads, cfg.batch)
    m.aims.extend(variance_aims(vrows))
    figures = [
        Figure(f"{SLUG}-variance.png", "variance"),
        Figure(f"{SLUG}-mechanism.png", "mechanism"),
        Figure(f"{SLUG}-training.png", "training"),
    ]
    variance_figure(vrows, staging / figures[0].file)
    mechanism_figure(ctx, loss, staging / figures[1].file)
    training_figure(runs, staging / figures[2].file)
    by_id = {r.id: r for r in [*vrows, *m.rows]}
    return sampled_outcome(
        m,
        cfg,
        notes=notes_of(ctx, cfg, loss, by_id, grads, runs, scores.fdd),
        figures=figures,
        extra_rows=vrows,
        sigma_data=round(ctx.edm.sigma_data, 4),
        edm_p_mean=-1.2,
        edm_p_std=1.2,
    )


def demo(cfg: Config, out: Path) -> None:
    """Loss-estimator variance of the eps objective on the zoo teacher: a table and a figure."""
    from .figures import mechanism_figure
    from .studies import ESTIMATORS, Context, teacher_loss_study
    from .variance import variance_ratio_ci

    ctx = Context.make()
    loss = teacher_loss_study(ctx, cfg, progress=True)
    base = loss.values["eps-iid"]
    print(f"Zoo teacher, eps objective (L_simple), batch {cfg.batch}, {cfg.loss_draws} minibatches")
    print(f"{'estimator':16} {'mean':>8} {'var ratio':>10}  95% interval  scheme")
    for e in ESTIMATORS:
        if e.key in loss.values:
            ratio, lo, hi = variance_ratio_ci(base, loss.values[e.key])
            mean = float(loss.values[e.key].mean())
            print(f"{e.key:16} {mean:8.4f} {ratio:10.2f}  [{lo:.2f}, {hi:.2f}]  {e.name}")
    d = loss.decomposition
    print(
        f"per-example variance: between-t {d.between_t / d.total:.0%} (stratification removes "
        f"it), odd in eps {d.odd_eps / d.total:.0%} (antithetic pairs cancel it); optimal "
        f"importance sampling of t would divide it by {d.is_gain:.2f}"
    )
    print(mechanism_figure(ctx, loss, out / f"{SLUG}-demo-mechanism.png"))
