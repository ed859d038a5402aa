"""The notes of the benchmark: what the variance ratios mean, as message ids with numbers, and
the data of the mechanism and training charts, so that the site draws them in every language.

The mechanism chart's data (``mechanism`` note), per timestep bin ``b`` of ``T / bins`` steps
with centre ``t_b`` (`MECHANISM_BINS`; a bin without a draw is left out of the loss curves):

    mean_b   = mean of l_i over the draws with t_i in bin b      (E[l | t], the teacher)   (1)
    rms_b    = sqrt(mean of l_i² over the same draws)           (sqrt(E[l² | t]))         (2)
    q_b      = T · mean of q(t) over the timesteps of bin b     (uniform = 1)             (3)
    w_b      = w_p(round(t_b)), EDM's times T p_EDM(t)           (weight per eps-error)    (4)

(3) is the density of a proposal (importance sampling's, EDM's log-normal) relative to uniform
``t``; (4) is each parameterization's weight per unit of eps-error (EDM's sampled from its
log-normal, so its weight is multiplied by its density). The training chart's data
(``training`` note) is each scheme's held-out eps-MSE and x0-MSE curve, the mean over its
training runs at every evaluation.
"""

from __future__ import annotations

from typing import Any

import torch

from reference.harness.results import Note, Row, note
from reference.harness.seeds import quality_note
from reference.harness.stats import paired_ratio

from .studies import Context, LossStudy
from .training_runs import TrainingRun
from .variance import GradientMoments, variance_ratio_ci

MECHANISM_BINS = 50
"""Timestep bins of the mechanism chart (`mechanism_curves`)."""
PARAMETERIZATION_ORDER = ("eps", "v", "x0", "edm")


def noise_ratio(m: GradientMoments) -> float | None:
    """Gradient noise-to-signal ``tr Cov(g) / |E g|^2`` (``None`` when ``|E g|^2 <= 0``)."""
    signal = m.mean_norm_sq()
    return m.trace_cov() / signal if signal > 0 else None


def per_run_ratios(fdd: dict[str, list[list[float]]], key: str, base: str) -> list[float]:
    """The paired FDD ratio ``key / base`` over the noise seeds, separately for every training
    run (run ``j`` of both schemes started from the same training seed); ``fdd`` as
    `reference.stochastic_reparameterization.training_runs.RunScores` keeps it."""
    runs = zip(fdd[key], fdd[base], strict=True)
    return [paired_ratio(a, b).value for a, b in runs]


def mechanism_curves(ctx: Context, loss: LossStudy) -> dict[str, Any]:
    """The mechanism chart's data (1)-(4), as lists a note can keep."""
    T, bins = ctx.schedule.T, MECHANISM_BINS
    t, per_example = loss.per_t
    b = t * bins // T
    values = per_example.double()
    full = [i for i in range(bins) if bool((b == i).any())]
    centres = [(i + 0.5) * T / bins for i in range(bins)]
    mean = [float(values[b == i].mean()) for i in full]  # (1)
    rms = [float(values[b == i].square().mean().sqrt()) for i in full]  # (2)

    def binned(pmf: Any) -> list[float]:  # (3)
        return [float(pmf[i * T // bins : (i + 1) * T // bins].mean() * T) for i in range(bins)]

    at = torch.tensor([round(c) for c in centres])
    weights = []
    for name in PARAMETERIZATION_ORDER:  # (4)
        w = ctx.param(name).eps_error_weight(at).double()
        if name == "edm":
            w = w * ctx.edm_q.pmf[at] * T
        weights.append(w.tolist())
    return {
        "t_loss": [centres[i] for i in full],
        "loss_series": ["mean", "rms"],
        "loss": [mean, rms],
        "t": centres,
        "proposal_series": ["uniform", "importance", "edm"],
        "proposal": [[1.0] * bins, binned(loss.importance.pmf), binned(ctx.edm_q.pmf)],
        "weight_series": list(PARAMETERIZATION_ORDER),
        "weight": weights,
    }


def training_curves(runs: dict[str, TrainingRun]) -> dict[str, Any]:
    """The training chart's data: every scheme's seed-mean yardstick curves."""
    first = next(iter(runs.values()))
    return {
        "examples_seen": list(first.curves[0].examples),
        "schemes": list(runs),
        "eps_mse": [r.mean_curve("eps_mse") for r in runs.values()],
        "x0_mse": [r.mean_curve("x0_mse") for r in runs.values()],
    }


def notes_of(
    ctx: Context,
    s: Any,
    loss: LossStudy,
    rows: dict[str, Row],
    grads: dict[str, GradientMoments],
    runs: dict[str, TrainingRun],
    fdd: dict[str, list[list[float]]],
) -> list[Note]:
    d = loss.decomposition
    base = loss.values["eps-iid"]
    ci = {k: variance_ratio_ci(base, loss.values[k]) for k in ("eps-ld", "eps-anti", "eps-is")}
    ci["eps-2x"] = variance_ratio_ci(base, loss.values["eps-2x"])
    v = {k.removeprefix("var-"): r.values for k, r in rows.items() if k.startswith("var-")}
    ratio = noise_ratio(grads["eps-iid"])
    ld_grad, anti_grad = v["eps-ld"]["grad_var_reduction"], v["eps-anti"]["grad_var_reduction"]
    notes = [
        note("two-comparisons", batch=s.batch, loss_draws=s.loss_draws, grad_draws=s.grad_draws),
        note("batch-2x", ratio=ci["eps-2x"][0], lo=ci["eps-2x"][1], hi=ci["eps-2x"][2]),
        note(
            "mechanism",
            between=100 * d.between_t / d.total,
            ld_pred=d.total / d.within_t,
            ld=ci["eps-ld"][0],
            ld_lo=ci["eps-ld"][1],
            ld_hi=ci["eps-ld"][2],
            odd=100 * d.odd_eps / d.total,
            anti_pred=d.total / (2 * (d.total - d.odd_eps)),
            anti=ci["eps-anti"][0],
            anti_lo=ci["eps-anti"][1],
            anti_hi=ci["eps-anti"][2],
            imp_pred=d.is_gain,
            imp=ci["eps-is"][0],
            imp_lo=ci["eps-is"][1],
            imp_hi=ci["eps-is"][2],
            history=s.is_history,
            bins=s.is_bins,
            **mechanism_curves(ctx, loss),
        ),
        note(
            "edm-objective",
            loss_factor=1 / v["edm-uniform"]["loss_var_reduction"],
            grad_factor=1 / v["edm-uniform"]["grad_var_reduction"],
            loss_gain=v["edm-ld-anti"]["loss_var_reduction"],
            grad_gain=v["edm-ld-anti"]["grad_var_reduction"],
        ),
        note(
            "gradient-decomposition",
            between=100 * max(0.0, 1 - 1 / ld_grad),
            odd=100 * max(0.0, 1 - 1 / (2 * anti_grad)),
            between_teacher=100 * d.between_t / d.total,
        ),
        note("gradient-noise", ratio=ratio, batch=s.batch, b_noise=s.batch * ratio)
        if ratio is not None
        else note("gradient-noise-unmeasurable", batch=s.batch),
        note(
            "training",
            steps=s.train_steps,
            batch=s.train_batch,
            examples=s.train_steps * s.train_batch,
            seeds=s.train_seeds,
            fdd_n=s.n_quality,
            ddim_steps=s.steps,
            target=rows["train-eps"].values["heldout_eps_mse"],
            **training_curves(runs),
        ),
        quality_note(s.n_quality, s.seeds),
        note("held-out-reference"),
        note(
            "training-seeds",
            runs=s.train_seeds,
            per_run=per_run_ratios(fdd, "train-eps-is-ld-anti", "train-eps"),
        ),
        note("reweighting", batch=s.batch),
        note("sigma-data", sigma_data=ctx.edm.sigma_data),
    ]
    return notes
