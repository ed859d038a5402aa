"""Benchmark and demo of
[`reference.stochastic_reparameterization`][reference.stochastic_reparameterization] (the technique
contract of `reference.harness.cli`).

Two kinds of rows. ``var-*`` rows estimate the *same* objective with different minibatch
sampling (pure variance reduction at equal batch size): the eps objective on the zoo teacher and
the tiny eps U-Net (baseline: uniform ``t``, iid noise; control: the batch doubled), EDM's
objective on the tiny EDM U-Net (reference: EDM's own log-normal sampling). ``train-*`` rows
change the objective (parameterization and weighting) and are compared on common yardsticks
after the same training budget (baseline: eps with uniform ``t``); their sample quality is
measured over paired noise seeds (every trained model samples the same noise on each seed), next
to the class-balanced real digits (reference).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from reference.harness.cli import Option, check_seeds, int_tuple
from reference.harness.results import (
    Figure,
    Headline,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    settings_of,
)
from reference.harness.seeds import N_QUALITY, SEEDS

from .figures import mechanism_figure, training_figure, variance_figure
from .notes import noise_ratio, notes_of
from .studies import ESTIMATORS, GROUP_BASELINE, SAME_EPS, Context, LossStudy, teacher_loss_study
from .studies import tiny_gradient_study as gradient_study
from .training_runs import Quality, TrainingRun, examples_to_reach, paired_quality, training_runs
from .variance import Estimator, GradientMoments, trace_ratio_ci, variance_ratio_ci

SLUG = "stochastic-reparameterization"
HEADLINE = "train-eps-is-ld-anti"
MINIMA = {
    **{"loss_draws": 4, "grad_draws": 2, "own_draws": 2, "fdd_n": 10},
    **dict.fromkeys(("train_steps", "train_batch", "eval_every", "ddim_steps", "train_seeds"), 1),
    **dict.fromkeys(("is_bins", "is_history", "heldout_images", "heldout_repeats"), 1),
}
"""The smallest value of each size (a variance needs repeated draws)."""


@dataclass(frozen=True)
class Config:
    """Sizes of one run: variance draws, batch, training budget, quality samples and seeds."""

    batch: int = 32
    loss_draws: int = 200
    grad_draws: int = 128
    own_draws: int = 48
    train_steps: int = 400
    train_batch: int = 32
    eval_every: int = 40
    fdd_n: int = N_QUALITY
    ddim_steps: int = 50
    is_bins: int = 50
    is_history: int = 10
    heldout_images: int = 300
    heldout_repeats: int = 4
    train_seeds: int = 2
    seeds: tuple[int, ...] = SEEDS

    def validate(self) -> None:
        if self.batch < 2 or self.batch % 2:
            raise ValueError(
                f"--batch must be an even number >= 2 (antithetic pairs), got {self.batch}"
            )
        for name, low in MINIMA.items():
            value = getattr(self, name)
            if value < low:
                raise ValueError(f"--{name.replace('_', '-')} must be >= {low}, got {value}")
        check_seeds(self.seeds)


FULL = Config()
QUICK = Config(
    *(8, 6, 4, 3, 6, 8, 3, 20, 5, 4, 2),
    heldout_images=40,
    heldout_repeats=1,
    train_seeds=1,
    seeds=(0, 1),
)
DEMO = Config(loss_draws=100)
OPTIONS = (
    Option("batch"),
    Option("loss_draws"),
    Option("grad_draws"),
    Option("train_steps"),
    Option("fdd_n"),
    Option("train_seeds"),
    Option("seeds", int_tuple, "S,S,..."),
)
METRICS = metrics(
    loss_var_reduction=Metric("x", "higher"),
    grad_var_reduction=Metric("x", "higher"),
    proj_var_reduction=Metric("x", "higher"),
    loss_rel_var=Metric("", "lower"),
    grad_noise_ratio=Metric("", "lower"),
    noise_scale=Metric("", "lower"),
    heldout_eps_mse=Metric("", "lower"),
    heldout_x0_mse=Metric("", "lower"),
    **metrics("fd_digits", "kid_digits", "diversity"),
    examples_to_reach=Metric("", "lower"),
)


def role_of(e: Estimator) -> str:
    if e.key == "eps-iid":
        return "baseline"
    if e.batch_factor > 1:
        return "control"
    return "reference" if e.key == "edm-iid" else "technique"


def loss_values(key: str, loss: LossStudy, grads: dict[str, GradientMoments]) -> torch.Tensor:
    """Repeated loss estimates: from the teacher study if there, else from the gradient draws."""
    if key in loss.values:
        return loss.values[key]
    return torch.tensor(grads[key].losses, dtype=torch.float64)


def variance_rows(loss: LossStudy, grads: dict[str, GradientMoments], cfg: Config) -> list[Row]:
    rows = []
    for e in ESTIMATORS:
        base = GROUP_BASELINE[e.group]
        lv, lb = loss_values(e.key, loss, grads), loss_values(base, loss, grads)
        ratio, lo, hi = variance_ratio_ci(lb, lv)
        values: dict[str, float | None] = {
            "loss_var_reduction": ratio,
            "grad_var_reduction": grads[base].trace_cov() / grads[e.key].trace_cov(),
            "proj_var_reduction": grads[base].projection_var() / grads[e.key].projection_var(),
            "loss_rel_var": float(lv.var() / lv.mean() ** 2),
        }
        intervals = {}
        if e.key != base:
            intervals = {
                "loss_var_reduction": (lo, hi),
                "grad_var_reduction": trace_ratio_ci(grads[base], grads[e.key]),
            }
        config = {"method": f"estimator-{e.key}", "batch": cfg.batch * e.batch_factor}
        rows.append(Row(f"var-{e.key}", config, role_of(e), values, intervals=intervals))  # type: ignore[arg-type]
    return rows


def iqr(values: Sequence[float]) -> float:
    """Inter-quartile range (inclusive quartiles; half the range for two values)."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def training_rows(runs: dict[str, TrainingRun], q: Quality, cfg: Config) -> list[Row]:
    """One row per training scheme: yardsticks (seed means over the training runs), the own
    objective's noise, and the sample quality over paired noise seeds."""
    target = runs["eps"].mean_curve("eps_mse")[-1]
    rows = []
    for key, r in runs.items():
        losses = torch.tensor(r.own.losses, dtype=torch.float64)
        eps_final = [c.eps_mse[-1] for c in r.curves]
        x0_final = [c.x0_mse[-1] for c in r.curves]
        ratio = noise_ratio(r.own)
        reach = examples_to_reach(r, target)
        values, intervals, seeds = q.table.row_fields(key)
        values |= {
            "loss_rel_var": float(losses.var() / losses.mean() ** 2),
            "grad_noise_ratio": ratio,
            "noise_scale": None if ratio is None else cfg.batch * ratio,
            "heldout_eps_mse": statistics.mean(eps_final),
            "heldout_x0_mse": statistics.mean(x0_final),
            "examples_to_reach": None if reach is None else float(reach),
        }
        spread = {"heldout_eps_mse": iqr(eps_final), "heldout_x0_mse": iqr(x0_final)}
        role = (
            "baseline" if key == "eps" else ("technique" if key.startswith("eps") else "reference")
        )
        config = {"method": f"training-{key}", "steps": cfg.train_steps, "batch": cfg.train_batch}
        rows.append(Row(f"train-{key}", config, role, values, intervals, spread, seeds))  # type: ignore[arg-type]
    return rows


def _best(rows: dict[str, Row], metric: str) -> Row:
    same = [e for e in ESTIMATORS if e.group == SAME_EPS and e.batch_factor == 1]
    return max((rows[f"var-{e.key}"] for e in same if e.key != "eps-iid"),
               key=lambda r: r.values[metric])  # fmt: skip


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Run the three measurements and the sample quality; write the figures into ``out``."""
    from reference.harness import real_reference_row

    ctx = Context.make()
    runs = training_runs(ctx, cfg, progress=True)
    quality = paired_quality(ctx, runs, cfg)
    loss = teacher_loss_study(ctx, cfg, progress=True)
    grads = gradient_study(ctx, {"eps": runs["eps"].model, "edm": runs["edm"].model}, cfg, True)
    vrows, trows = variance_rows(loss, grads, cfg), training_rows(runs, quality, cfg)
    figures = [
        Figure(f"{SLUG}-variance.png", "variance"),
        Figure(f"{SLUG}-mechanism.png", "mechanism"),
        Figure(f"{SLUG}-training.png", "training"),
    ]
    variance_figure(vrows, out / figures[0].file)
    mechanism_figure(ctx, loss, out / figures[1].file)
    training_figure(runs, out / figures[2].file)
    by_id = {r.id: r for r in vrows + trows}
    best_loss, best_grad = _best(by_id, "loss_var_reduction"), _best(by_id, "grad_var_reduction")
    ratio = quality.table.ratio(HEADLINE.removeprefix("train-"), "eps", "fd_digits")
    aims = [
        aim("loss-variance", best_loss.values["loss_var_reduction"], 2.0, ">=",
            interval=best_loss.intervals["loss_var_reduction"], row=best_loss.id,
            against="var-eps-iid", best=best_loss.id),
        aim("gradient-variance", best_grad.values["grad_var_reduction"], 2.0, ">=",
            interval=best_grad.intervals["grad_var_reduction"], row=best_grad.id,
            against="var-eps-iid", best=best_grad.id),
    ]  # fmt: skip
    return Measurement(
        settings=settings_of(
            cfg, sigma_data=round(ctx.edm.sigma_data, 4), edm_p_mean=-1.2, edm_p_std=1.2
        ),
        metrics=METRICS,
        rows=[*vrows, *trows, real_reference_row(cfg.fdd_n)],
        headline=Headline(
            HEADLINE,
            quality_metric="fd_digits",
            quality_ratio=ratio.value,
            quality_interval=ratio.interval,
        ),
        aims=aims,
        notes=notes_of(ctx, cfg, loss, by_id, grads, quality),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Loss-estimator variance of the eps objective on the zoo teacher: a table and a figure."""
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
