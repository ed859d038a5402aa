"""The notes of the benchmark: what the variance ratios mean, as message ids with numbers."""

from __future__ import annotations

from typing import Any

from reference.harness.results import Note, Row, note
from reference.harness.seeds import quality_note
from reference.harness.stats import paired_ratio

from .studies import Context, LossStudy
from .training_runs import Quality
from .variance import GradientMoments, variance_ratio_ci


def noise_ratio(m: GradientMoments) -> float | None:
    """Gradient noise-to-signal ``tr Cov(g) / |E g|^2`` (``None`` when ``|E g|^2 <= 0``)."""
    signal = m.mean_norm_sq()
    return m.trace_cov() / signal if signal > 0 else None


def per_run_ratios(quality: Quality, key: str, base: str) -> list[float]:
    """The paired FDD ratio ``key / base`` over the noise seeds, separately for every training
    run (run ``j`` of both schemes started from the same training seed)."""
    runs = zip(quality.fdd[key], quality.fdd[base], strict=True)
    return [paired_ratio(a, b).value for a, b in runs]


def notes_of(
    ctx: Context,
    s: Any,
    loss: LossStudy,
    rows: dict[str, Row],
    grads: dict[str, GradientMoments],
    quality: Quality,
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
            fdd_n=s.fdd_n,
            ddim_steps=s.ddim_steps,
            target=rows["train-eps"].values["heldout_eps_mse"],
        ),
        quality_note(s.fdd_n, s.seeds),
        note(
            "training-seeds",
            runs=s.train_seeds,
            per_run=per_run_ratios(quality, "eps-is-ld-anti", "eps"),
        ),
        note("reweighting", batch=s.batch),
        note("sigma-data", sigma_data=ctx.edm.sigma_data),
    ]
    return notes
