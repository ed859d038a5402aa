"""The benchmark: estimator variance on the zoo teacher and a tiny U-Net, and training curves.

Three measurements, run in this order:

1. **Training runs** (:mod:`~.training`): a tiny U-Net from scratch per scheme, same seed and
   budget; held-out eps-MSE and x0-MSE curves, FDD of DDIM samples after the budget, and at the
   end the relative variance of each run's *own* loss estimator and its gradient
   noise-to-signal ratio (the reweighting comparison, on each scheme's own network).
2. **Loss-estimator variance on the trained zoo teacher** (forward passes only): many repeated
   minibatches of the same objective under different sampling schemes (pure variance
   reduction), for the eps objective and for EDM's objective, plus the variance decomposition
   that says which term each trick removes.
3. **Gradient-estimator variance** of the same estimators on the eps-trained tiny U-Net from
   step 1: trace of the gradient covariance and variance of a fixed random projection.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from reference.harness import (
    BenchmarkResult,
    Headline,
    MetricSpec,
    Row,
    aim,
    fdd_floor,
    frechet_digits_distance,
    load_digits_tensors,
    make_noise,
    metrics,
    output_dir,
    provenance,
    sample,
)

from .objectives import EDMPreconditioning, NoiseSchedule, Parameterization, sigma_data_of
from .samplers import (
    Draw,
    LossSecondMomentHistory,
    Sampling,
    TimestepProposal,
    draw,
    edm_proposal,
    uniform_proposal,
)
from .training import Curve, Heldout, TrainScheme, eps_fn_of, train
from .variance import (
    Decomposition,
    Estimator,
    GradientMoments,
    LossFn,
    decompose,
    estimate,
    gradient_moments,
    loss_draws,
    native_loss_fn,
    objective_pmf,
    trace_ratio_ci,
    variance_ratio_ci,
)

SLUG = "stochastic-reparameterization"
SHAPE = (1, 16, 16)

SAME_EPS = "same objective: eps (L_simple)"
SAME_EDM = "same objective: EDM"
ESTIMATORS = (
    Estimator("eps-iid", "eps, uniform t (baseline)", "eps", Sampling(), SAME_EPS),
    Estimator("eps-ld", "eps, low-discrepancy t", "eps", Sampling(stratified=True), SAME_EPS),
    Estimator("eps-anti", "eps, antithetic eps", "eps", Sampling(antithetic=True), SAME_EPS),
    Estimator(
        "eps-ld-anti", "eps, low-discrepancy t + antithetic eps", "eps",
        Sampling(stratified=True, antithetic=True), SAME_EPS,
    ),
    Estimator("eps-is", "eps, importance-sampled t", "eps", Sampling("importance"), SAME_EPS),
    Estimator(
        "eps-is-ld-anti", "eps, importance t + low-discrepancy + antithetic", "eps",
        Sampling("importance", True, True), SAME_EPS,
    ),
    Estimator("eps-2x", "eps, uniform t, batch x2 (control)", "eps", Sampling(), SAME_EPS, 2),
    Estimator("edm-uniform", "EDM objective, uniform t, weighted (tiny EDM U-Net)", "edm",
              Sampling(), SAME_EDM),
    Estimator("edm-iid", "EDM objective, log-normal sigma (EDM; tiny EDM U-Net)", "edm",
              Sampling("edm"), SAME_EDM),
    Estimator(
        "edm-ld-anti", "EDM objective, log-normal + low-discrepancy + antithetic (tiny EDM U-Net)",
        "edm",
        Sampling("edm", True, True), SAME_EDM,
    ),
)  # fmt: skip
GROUP_BASELINE = {SAME_EPS: "eps-iid", SAME_EDM: "edm-iid"}

SCHEMES = (
    TrainScheme("eps", "Training: eps, uniform t (baseline)", "eps", Sampling()),
    TrainScheme("eps-ld", "Training: eps, low-discrepancy t", "eps", Sampling(stratified=True)),
    TrainScheme("eps-is-ld-anti", "Training: eps, importance t + low-discrepancy + antithetic",
                "eps", Sampling("importance", True, True)),
    TrainScheme("v", "Training: v-prediction, uniform t", "v", Sampling()),
    TrainScheme("x0", "Training: x0-prediction, uniform t", "x0", Sampling()),
    TrainScheme("edm", "Training: EDM preconditioning, log-normal sigma", "edm", Sampling("edm")),
)  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """Sizes of one run: variance draws, batch, training budget, FDD sample count."""

    batch: int
    loss_draws: int
    grad_draws: int
    own_draws: int
    train_steps: int
    train_batch: int
    eval_every: int
    fdd_n: int
    ddim_steps: int
    is_bins: int = 50
    is_history: int = 10
    heldout_images: int = 300
    heldout_repeats: int = 4
    seeds: int = 2


def settings(quick: bool) -> Settings:
    if quick:
        return Settings(
            8, 6, 4, 3, 6, 8, 3, 20, 5, 4, 2, heldout_images=40, heldout_repeats=1, seeds=1
        )
    return Settings(32, 200, 128, 48, 400, 32, 40, 300, 50)


@dataclass
class Context:
    """What every measurement needs: schedule, parameterizations, proposals, data."""

    schedule: NoiseSchedule
    edm: EDMPreconditioning
    uniform: TimestepProposal
    edm_q: TimestepProposal
    x_train: torch.Tensor
    y_train: torch.Tensor

    @classmethod
    def make(cls) -> Context:
        schedule = NoiseSchedule.zoo()
        x, y = load_digits_tensors("train")
        return cls(
            schedule,
            EDMPreconditioning(sigma_data_of(x)),
            uniform_proposal(schedule.T),
            edm_proposal(schedule),
            x,
            y,
        )

    def param(self, name: str) -> Parameterization:
        return Parameterization(name, self.schedule, self.edm)

    def proposal(self, sampling: Sampling, importance: TimestepProposal | None) -> TimestepProposal:
        if sampling.proposal == "importance":
            if importance is None:
                raise ValueError("importance sampling needs a warmed-up loss history")
            return importance
        return self.edm_q if sampling.proposal == "edm" else self.uniform


GroupKey = tuple[Sampling, int, str]


def draw_groups(estimators: Iterable[Estimator]) -> dict[GroupKey, list[Estimator]]:
    """Estimators that can share minibatches (same sampling, batch size and network), in order."""
    groups: dict[GroupKey, list[Estimator]] = {}
    for e in estimators:
        groups.setdefault((e.sampling, e.batch_factor, e.objective), []).append(e)
    return groups


def importance_from(
    draws: Sequence[tuple[Draw, torch.Tensor]],
    T: int,
    s: Settings,
) -> TimestepProposal:
    """Improved-DDPM proposal from the per-example losses of iid draws (the loss history)."""
    history = LossSecondMomentHistory(T, s.is_bins, s.is_history)
    for d, loss in draws:
        history.update(d.t, loss)
    if not history.warm:
        raise ValueError("too few draws to fill the importance-sampling history")
    return history.proposal()


# --------------------------------------------------------------------------- 2. teacher losses


@dataclass
class LossStudy:
    """Repeated estimates on the teacher, the variance decomposition, the IS proposal used."""

    values: dict[str, torch.Tensor]
    decomposition: Decomposition
    importance: TimestepProposal
    per_t: tuple[torch.Tensor, torch.Tensor]


def teacher_loss_study(ctx: Context, s: Settings, progress: bool = False) -> LossStudy:
    """Repeated minibatch estimates of the eps-objective estimators on the zoo teacher."""
    from tqdm.auto import tqdm

    from reference import zoo

    teacher = zoo.load_teacher()

    @torch.no_grad()
    def model_fn(x_in: torch.Tensor, t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return teacher(x_in, t, class_labels=ctx.y_train[index], return_dict=False)[0]

    loss_fn = native_loss_fn(model_fn, ctx.param("eps"), ctx.x_train)
    gen = torch.Generator().manual_seed(0)
    values: dict[str, torch.Tensor] = {}
    importance: TimestepProposal | None = None
    iid: list[tuple[Draw, torch.Tensor]] = []
    anti: list[tuple[Draw, torch.Tensor]] = []
    eps_group = [e for e in ESTIMATORS if e.group == SAME_EPS and e.batch_factor == 1]
    for (sampling, _, _), members in tqdm(
        draw_groups(eps_group).items(), desc="teacher loss draws", disable=not progress
    ):
        q = ctx.proposal(sampling, importance)
        ds = loss_draws(loss_fn, len(ctx.x_train), SHAPE, sampling, q, s.batch, s.loss_draws, gen)
        for e in members:
            values[e.key] = torch.stack([estimate(d, loss, ctx.uniform.pmf) for d, loss in ds])
        if sampling == Sampling():
            iid = ds
            importance = importance_from(ds, ctx.schedule.T, s)
        if sampling == Sampling(antithetic=True):
            anti = ds
    # the batch-x2 control: the mean of two independent iid minibatches
    pairs = values["eps-iid"][: len(values["eps-iid"]) // 2 * 2].reshape(-1, 2)
    values["eps-2x"] = pairs.mean(1)
    t_all = torch.cat([d.t for d, _ in iid])
    l_all = torch.cat([loss for _, loss in iid])
    half = s.batch // 2
    pairs_l = torch.cat([torch.stack([loss[:half], loss[half:]], 1) for _, loss in anti])
    dec = decompose((t_all, l_all), pairs_l, ctx.schedule.T, s.is_bins)
    assert importance is not None
    return LossStudy(values, dec, importance, (t_all, l_all))


# --------------------------------------------------------------------------- 3. gradients


def tiny_gradient_study(
    ctx: Context, models: dict[str, torch.nn.Module], s: Settings, progress: bool = False
) -> dict[str, GradientMoments]:
    """Gradient (and loss) moments of every estimator on the tiny U-Net trained for its objective.

    ``models[objective]``: the network the objective's estimators are evaluated on (the eps
    baseline run for the eps objective, the EDM run for EDM's objective).
    """
    from tqdm.auto import tqdm

    moments: dict[str, GradientMoments] = {}
    importance: TimestepProposal | None = None
    for (sampling, factor, objective), members in tqdm(
        draw_groups(ESTIMATORS).items(), desc="gradient draws", disable=not progress
    ):
        model = models[objective].train()
        p = ctx.param(objective)
        p_t = objective_pmf(objective, ctx.uniform, ctx.edm_q)
        q = ctx.proposal(sampling, importance)
        loss_fn = native_loss_fn(
            lambda x, t, i, m=model: m(x, t, return_dict=False)[0], p, ctx.x_train
        )
        seen: list[tuple[Draw, torch.Tensor]] = []

        def losses_of_draw(
            gen: torch.Generator,
            spec: tuple[Sampling, int, TimestepProposal] = (sampling, factor, q),
            members: list[Estimator] = members,
            loss_fn: LossFn = loss_fn,
            p_t: torch.Tensor = p_t,
            seen: list[tuple[Draw, torch.Tensor]] = seen,
        ) -> dict[str, torch.Tensor]:
            d = draw(spec[0], spec[2], len(ctx.x_train), s.batch * spec[1], SHAPE, gen)
            per_example = loss_fn(d.index, d.t, d.eps)
            seen.append((d, per_example.detach()))
            return {e.key: estimate(d, per_example, p_t) for e in members}

        gen = torch.Generator().manual_seed(1)
        keys = [e.key for e in members]
        moments |= gradient_moments(model, losses_of_draw, keys, s.grad_draws, gen)
        model.eval()
        if (sampling, factor, objective) == (Sampling(), 1, "eps"):
            importance = importance_from(seen, ctx.schedule.T, s)
    return moments


# --------------------------------------------------------------------------- 1. training


@dataclass
class TrainingRun:
    """One scheme trained with several seeds: EMA models, curves, FDDs; own-objective moments."""

    scheme: TrainScheme
    models: list[torch.nn.Module]
    curves: list[Curve]
    fdds: list[float]
    own: GradientMoments

    @property
    def model(self) -> torch.nn.Module:
        return self.models[0]

    def mean_curve(self, field: str) -> list[float]:
        """The yardstick ``field`` averaged over seeds at every evaluation."""
        values = torch.tensor([getattr(c, field) for c in self.curves], dtype=torch.float64)
        return values.mean(0).tolist()


def own_objective_moments(
    ctx: Context, run_model: torch.nn.Module, scheme: TrainScheme, s: Settings
) -> GradientMoments:
    """Loss and gradient moments of a trained run's *own* minibatch objective."""
    p = ctx.param(scheme.parameterization)
    p_t = objective_pmf(p.name, ctx.uniform, ctx.edm_q)
    q = ctx.proposal(scheme.sampling, None) if scheme.sampling.proposal != "importance" else None
    history = LossSecondMomentHistory(ctx.schedule.T, s.is_bins, s.is_history)
    run_model.train()
    gen = torch.Generator().manual_seed(2)

    def loss_of(gen: torch.Generator) -> dict[str, torch.Tensor]:
        proposal = q if q is not None else history.proposal()
        d = draw(scheme.sampling, proposal, len(ctx.x_train), s.batch, SHAPE, gen)
        x0 = ctx.x_train[d.index]
        x_t = ctx.schedule.add_noise(x0, d.eps, d.t)
        out = run_model(p.network_input(x_t, d.t), d.t, return_dict=False)[0]
        per_example = p.loss_per_example(out, x0, d.eps, d.t)
        history.update(d.t, per_example)
        return {"own": ((p_t[d.t] / d.q).to(out.dtype) * per_example).mean()}

    if scheme.sampling.proposal == "importance":
        with torch.no_grad():
            while not history.warm:
                loss_of(gen)
    moments = gradient_moments(run_model, loss_of, ["own"], s.own_draws, gen)["own"]
    run_model.eval()
    return moments


def training_runs(ctx: Context, s: Settings, progress: bool = False) -> dict[str, TrainingRun]:
    """Train every scheme; score the yardsticks, the FDD and the own-objective noise."""
    from tqdm.auto import tqdm

    from reference.zoo import teacher_scheduler

    x_test, _ = load_digits_tensors("test")
    heldout = Heldout.make(x_test[: s.heldout_images], ctx.schedule.T, s.heldout_repeats)
    noise = make_noise(s.fdd_n, seed=0)
    runs = {}
    total = len(SCHEMES) * s.train_steps * s.seeds
    bar = tqdm(total=total, desc="training runs", disable=not progress)
    for scheme in SCHEMES:
        p = ctx.param(scheme.parameterization)
        models, curves, fdds = [], [], []
        for seed in range(s.seeds):
            model, curve = train(
                scheme, p, ctx.x_train, heldout, (ctx.uniform, ctx.edm_q),
                steps=s.train_steps, batch=s.train_batch, eval_every=s.eval_every, seed=seed,
                history_shape=(s.is_bins, s.is_history), on_step=lambda: bar.update(1),
            )  # fmt: skip
            samples = sample(eps_fn_of(model, p), teacher_scheduler(), noise, steps=s.ddim_steps)
            models.append(model)
            curves.append(curve)
            fdds.append(frechet_digits_distance(samples))
        own = own_objective_moments(ctx, models[0], scheme, s)
        runs[scheme.key] = TrainingRun(scheme, models, curves, fdds, own)
    bar.close()
    return runs


# --------------------------------------------------------------------------- the result


METRICS = metrics(
    loss_var_reduction=MetricSpec("Loss-estimator variance reduction vs baseline", "x", "higher"),
    grad_var_reduction=MetricSpec("Gradient variance reduction (covariance trace)", "x", "higher"),
    proj_var_reduction=MetricSpec("Gradient variance reduction (random projection)", "x", "higher"),
    loss_rel_var=MetricSpec("Relative variance of the loss estimate, Var/mean^2", "", "lower"),
    grad_noise_ratio=MetricSpec("Gradient noise-to-signal tr Cov(g) / |E g|^2", "", "lower"),
    heldout_eps_mse=MetricSpec("Held-out eps-MSE after the budget (uniform t)", "", "lower"),
    heldout_x0_mse=MetricSpec("Held-out clipped-x0 MSE after the budget (uniform t)", "", "lower"),
    fd_digits=MetricSpec("Fréchet distance (digits classifier)", "", "lower"),
)  # fmt: skip


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


def variance_rows(loss: LossStudy, grads: dict[str, GradientMoments]) -> list[Row]:
    rows = []
    for e in ESTIMATORS:
        base = GROUP_BASELINE[e.group]
        lv, lb = loss_values(e.key, loss, grads), loss_values(base, loss, grads)
        values: dict[str, float | None] = {
            "loss_var_reduction": float(lb.var() / lv.var()),
            "grad_var_reduction": grads[base].trace_cov() / grads[e.key].trace_cov(),
            "proj_var_reduction": grads[base].projection_var() / grads[e.key].projection_var(),
            "loss_rel_var": float(lv.var() / lv.mean() ** 2),
        }
        rows.append(Row(f"Estimator: {e.name}", role_of(e), values))  # type: ignore[arg-type]
    return rows


def noise_ratio(m: GradientMoments) -> float | None:
    signal = m.mean_norm_sq()
    return m.trace_cov() / signal if signal > 0 else None


def iqr(values: Sequence[float]) -> float:
    """Inter-quartile range (inclusive quartiles; half the range for two values)."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def training_rows(runs: dict[str, TrainingRun]) -> list[Row]:
    rows = []
    for key, r in runs.items():
        losses = torch.tensor(r.own.losses, dtype=torch.float64)
        eps_final = [c.eps_mse[-1] for c in r.curves]
        x0_final = [c.x0_mse[-1] for c in r.curves]
        values: dict[str, float | None] = {
            "loss_rel_var": float(losses.var() / losses.mean() ** 2),
            "grad_noise_ratio": noise_ratio(r.own),
            "heldout_eps_mse": statistics.mean(eps_final),
            "heldout_x0_mse": statistics.mean(x0_final),
            "fd_digits": statistics.mean(r.fdds),
        }
        spread = {"heldout_eps_mse": iqr(eps_final), "heldout_x0_mse": iqr(x0_final)}
        spread["fd_digits"] = iqr(r.fdds)
        role = (
            "baseline" if key == "eps" else ("technique" if key.startswith("eps") else "reference")
        )
        rows.append(Row(r.scheme.name, role, values, spread))  # type: ignore[arg-type]
    return rows


# --------------------------------------------------------------------------- figures


def _figure(width: float, height: float, ncols: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols)


def mechanism_figure(ctx: Context, loss: LossStudy, path: Path) -> Path:
    """Left: per-t eps-loss of the teacher and the proposals; right: the weightings."""
    import numpy as np

    fig, (left, right) = _figure(10.0, 4.0, 2)
    t, per_example = loss.per_t
    bins = 50
    b = (t * bins // ctx.schedule.T).numpy()
    l64 = per_example.double().numpy()
    full = [i for i in range(bins) if (b == i).any()]
    centers = (np.array(full) + 0.5) * ctx.schedule.T / bins
    mean = np.array([l64[b == i].mean() for i in full])
    rms = np.array([np.sqrt((l64[b == i] ** 2).mean()) for i in full])
    left.plot(centers, mean, "o-", ms=3, label="E[l | t] (teacher eps-loss)")
    left.plot(centers, rms, "s--", ms=3, label="sqrt(E[l^2 | t])")
    left.set_yscale("log")
    left.set_xlabel("timestep t")
    left.set_ylabel("per-example eps-MSE")
    twin = left.twinx()
    steps = np.arange(ctx.schedule.T)
    twin.plot(steps, loss.importance.pmf.numpy() * ctx.schedule.T, color="#c44e52", lw=1,
              label="importance q(t) x T")  # fmt: skip
    twin.plot(steps, ctx.edm_q.pmf.numpy() * ctx.schedule.T, color="#55a868", lw=1,
              label="EDM log-normal p(t) x T")  # fmt: skip
    twin.set_ylabel("proposal density (uniform = 1)")
    lines = left.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    left.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper right")
    left.set_title("Where the loss and the proposals put their mass")
    tt = torch.arange(ctx.schedule.T)
    for name in ("eps", "v", "x0", "edm"):
        w = ctx.param(name).eps_error_weight(tt)
        if name == "edm":
            w = w * ctx.edm_q.pmf * ctx.schedule.T
        right.plot(steps, w.numpy(), label=name)
    right.set_yscale("log")
    right.set_ylim(1e-4, 1e6)
    right.set_xlabel("timestep t")
    right.set_ylabel("weight per unit of eps-error (uniform t)")
    right.set_title("Each parameterization reweights the same error")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def variance_figure(rows: Sequence[Row], path: Path) -> Path:
    """Loss and gradient variance reduction of every estimator (log scale; 2x line)."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, ScalarFormatter

    fig, (left, right) = _figure(11.0, 0.42 * len(rows) + 1.8, 2)
    names = [r.name.removeprefix("Estimator: ") for r in rows]
    y = np.arange(len(rows))
    for ax, key, title in (
        (left, "loss_var_reduction", "Loss estimator\n(eps: zoo teacher; EDM: tiny EDM U-Net)"),
        (right, "grad_var_reduction", "Gradient estimator, trace of covariance\n(tiny U-Nets)"),
    ):
        vals = [float(r.values[key] or 1.0) for r in rows]
        colors = ["#4c72b0" if v >= 1 else "#c44e52" for v in vals]
        ax.barh(y, vals, color=colors)
        ax.set_xscale("log")
        ticks = [
            t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if min(vals) / 1.5 <= t <= max(vals) * 1.5
        ]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axvline(1.0, color="black", lw=0.8)
        ax.axvline(2.0, color="#8c8c8c", ls="--", lw=1)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("Var(group baseline) / Var(estimator)")
        ax.grid(axis="x", alpha=0.3)
        ax.invert_yaxis()
    left.set_yticks(y, labels=names, fontsize=8)
    right.set_yticks(y, labels=[])
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def training_figure(runs: dict[str, TrainingRun], path: Path) -> Path:
    """Held-out eps-MSE and x0-MSE against examples seen: seed mean, min-max band."""
    fig, (left, right) = _figure(10.0, 4.0, 2)
    for key, r in runs.items():
        x = r.curves[0].examples
        for ax, field in ((left, "eps_mse"), (right, "x0_mse")):
            values = torch.tensor([getattr(c, field) for c in r.curves], dtype=torch.float64)
            (line,) = ax.plot(x, values.mean(0).tolist(), marker=".", label=key)
            if len(r.curves) > 1:
                ax.fill_between(x, values.min(0).values.tolist(), values.max(0).values.tolist(),
                                color=line.get_color(), alpha=0.15)  # fmt: skip
    for ax, what in ((left, "eps-MSE"), (right, "clipped x0-MSE")):
        ax.set_yscale("log")
        ax.set_xlabel("training examples seen")
        ax.set_ylabel(f"held-out {what} (uniform t, EMA weights)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    seeds = len(next(iter(runs.values())).curves)
    fig.suptitle(
        f"Tiny U-Net from scratch: same budget, {seeds} seed(s) per scheme (band: min-max)"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


# --------------------------------------------------------------------------- benchmark


def examples_to_reach(run: TrainingRun, level: float) -> int | None:
    """First evaluated example count at which the seed-mean held-out eps-MSE is <= ``level``."""
    for n, v in zip(run.curves[0].examples, run.mean_curve("eps_mse"), strict=True):
        if v <= level:
            return n
    return None


def notes_of(
    ctx: Context,
    s: Settings,
    loss: LossStudy,
    rows: dict[str, Row],
    runs: dict[str, TrainingRun],
    grads: dict[str, GradientMoments],
) -> list[str]:
    d = loss.decomposition
    base = loss.values["eps-iid"]
    v = {k: r.values for k, r in rows.items()}
    ci = {
        k: variance_ratio_ci(base, loss.values[k])
        for k in ("eps-ld", "eps-anti", "eps-is", "eps-2x")
    }
    keys = ("eps-ld", "eps-anti", "eps-ld-anti", "eps-is", "eps-is-ld-anti", "eps-2x")
    grad_ci = {k: trace_ratio_ci(grads["eps-iid"], grads[k]) for k in keys}
    ratio = noise_ratio(grads["eps-iid"])
    noise_txt = "not measurable (|E g|^2 <= 0)" if ratio is None else f"{ratio:.2f}"
    b_noise_txt = "unknown" if ratio is None else f"{s.batch * ratio:.0f}"
    target = runs["eps"].mean_curve("eps_mse")[-1]
    reach = {k: examples_to_reach(r, target) for k, r in runs.items()}
    budget = s.train_steps * s.train_batch
    return [
        f"Two kinds of comparison. Rows 'Estimator: eps, ...' estimate the SAME objective (the "
        f"zoo's eps-MSE with uniform t), so their variance ratios are pure variance reduction at "
        f"equal batch size {s.batch} ({s.loss_draws} repeated minibatches on the zoo teacher, "
        f"{s.grad_draws} on the tiny U-Net). Rows 'Estimator: EDM objective, ...' do the same "
        "for EDM's objective (baseline: EDM's own log-normal sampling). Rows 'Training: ...' "
        "change the objective (reweighting): their losses are on different scales and are "
        "compared only scale-free (relative variance, gradient noise-to-signal) and on common "
        "yardsticks (held-out eps-MSE and x0-MSE with uniform t, FDD).",
        f"Sanity check of the method: averaging two independent minibatches (batch x2) should "
        f"halve the variance; measured {ci['eps-2x'][0]:.2f}x "
        f"(95% bootstrap interval {ci['eps-2x'][1]:.2f}-{ci['eps-2x'][2]:.2f}).",
        f"Mechanism (teacher, per-example eps-loss): between-timestep variance Var_t(E[l|t]) is "
        f"{d.between_t / d.total:.0%} of the total; low-discrepancy t removes it, predicted "
        f"{d.total / d.within_t:.2f}x, measured {ci['eps-ld'][0]:.2f}x "
        f"[{ci['eps-ld'][1]:.2f}, {ci['eps-ld'][2]:.2f}]. The part odd in eps carries "
        f"{d.odd_eps / d.total:.0%} of the variance; antithetic pairs cancel it but halve the "
        f"distinct (x0, t), predicted {d.total / (2 * (d.total - d.odd_eps)):.2f}x, measured "
        f"{ci['eps-anti'][0]:.2f}x [{ci['eps-anti'][1]:.2f}, {ci['eps-anti'][2]:.2f}]. "
        f"Importance sampling q ∝ sqrt(E[l_t^2]) flattens the loss across t: predicted "
        f"{d.is_gain:.2f}x for the optimal proposal, measured {ci['eps-is'][0]:.2f}x "
        f"[{ci['eps-is'][1]:.2f}, {ci['eps-is'][2]:.2f}] with a {s.is_history}-loss history "
        f"in each of {s.is_bins} timestep bins.",
        f"EDM's objective on the EDM-trained tiny U-Net: estimating it with uniform t and "
        f"weights p_EDM(t) T instead of EDM's log-normal sampling multiplies the loss variance by "
        f"{1 / v['edm-uniform']['loss_var_reduction']:.2f} and the gradient variance by "
        f"{1 / v['edm-uniform']['grad_var_reduction']:.2f} (> 1: the log-normal is the better "
        f"proposal for its own objective); low-discrepancy + antithetic sampling on top: variance "
        f"reduction {v['edm-ld-anti']['loss_var_reduction']:.2f}x (loss) and "
        f"{v['edm-ld-anti']['grad_var_reduction']:.2f}x (gradient).",
        "Gradient estimator of the eps objective (tiny U-Net after the eps baseline's training "
        "run), reduction of the covariance trace [95% bootstrap interval from a 16-direction "
        "sketch]: "
        + ", ".join(
            f"{k} {v[k]['grad_var_reduction']:.2f}x [{grad_ci[k][0]:.2f}, {grad_ci[k][1]:.2f}]"
            for k in grad_ci
        )
        + f". Read as a decomposition of the gradient's variance: between-timestep share "
        f"{max(0.0, 1 - 1 / v['eps-ld']['grad_var_reduction']):.0%} (1 - 1/LD gain), part odd "
        f"in eps {max(0.0, 1 - 1 / (2 * v['eps-anti']['grad_var_reduction'])):.0%} "
        f"(1 - 1/(2 x antithetic gain)); for the teacher's loss the between-timestep share is "
        f"{d.between_t / d.total:.0%}."
        f" Its noise-to-signal ratio tr Cov(g)/|E g|^2 at batch {s.batch} is "
        f"{noise_txt}: the gradient noise scale B_noise = B tr Cov/|E g|^2 (McCandlish et al.) is "
        f"{b_noise_txt} examples; variance reduction speeds training up only while the batch is "
        "below it.",
        f"Training: {s.train_steps} steps of batch {s.train_batch} ({budget} examples) per run, "
        f"Adam lr 2e-3, EMA 0.99 weights evaluated, {s.seeds} seed(s) per scheme (seed = initial "
        f"weights, data order and noise draws; every scheme sees the same seeds); FDD of "
        f"{s.fdd_n} DDIM-{s.ddim_steps} samples (FDD floor at that N: {fdd_floor(s.fdd_n):.2f}), "
        "per seed: "
        + "; ".join(f"{k} " + ", ".join(f"{f:.1f}" for f in r.fdds) for k, r in runs.items())
        + f". Examples needed to reach the baseline's final seed-mean held-out eps-MSE "
        f"({target:.4f}): "
        + ", ".join(f"{k} {'never' if n is None else n}" for k, n in reach.items())
        + ". Differences smaller than the seed-to-seed spread (the rows' spread) are noise.",
        "Reweighting, scale-free (rows 'Training: ...', each run's own minibatch objective and "
        "sampling on its own network after the budget): relative loss variance Var/mean^2 and "
        "gradient noise-to-signal tr Cov(g)/|E g|^2; times the batch the latter is the number of "
        "examples a step needs before its noise stops dominating: "
        + ", ".join(
            f"{k} {'n/a' if noise_ratio(r.own) is None else f'{s.batch * noise_ratio(r.own):.0f}'}"
            for k, r in runs.items()
        )
        + ".",
        f"sigma_data (RMS of the training pixels) = {ctx.edm.sigma_data:.3f}; every network is "
        "conditioned on the discrete t instead of EDM's c_noise = ln(sigma)/4 (a monotone "
        "function of the same noise level).",
    ]


def benchmark(quick: bool = False, progress: bool = False) -> BenchmarkResult:
    """Run the three measurements; write the figures; return the result."""
    s = settings(quick)
    load = os.getloadavg()[0]
    ctx = Context.make()
    runs = training_runs(ctx, s, progress)
    loss = teacher_loss_study(ctx, s, progress)
    grads = tiny_gradient_study(
        ctx, {"eps": runs["eps"].model, "edm": runs["edm"].model}, s, progress
    )
    vrows = variance_rows(loss, grads)
    trows = training_rows(runs)
    out = output_dir(quick)
    figures = [f"{SLUG}-variance.png", f"{SLUG}-mechanism.png", f"{SLUG}-training.png"]
    variance_figure(vrows, out / figures[0])
    mechanism_figure(ctx, loss, out / figures[1])
    training_figure(runs, out / figures[2])
    by_key = {e.key: r for e, r in zip(ESTIMATORS, vrows, strict=True)}
    same = [
        e for e in ESTIMATORS if e.group == SAME_EPS and e.batch_factor == 1 and e.key != "eps-iid"
    ]
    best_loss = max(same, key=lambda e: by_key[e.key].values["loss_var_reduction"])
    best_grad = max(same, key=lambda e: by_key[e.key].values["grad_var_reduction"])
    fdd = {k: statistics.mean(r.fdds) for k, r in runs.items()}
    return BenchmarkResult(
        slug=SLUG,
        module="reference.stochastic_reparameterization",
        title="Parameterization and noise/timestep sampling: estimator variance and training",
        quick=quick,
        settings={
            "batch": s.batch,
            "loss_draws": s.loss_draws,
            "grad_draws": s.grad_draws,
            "own_draws": s.own_draws,
            "train_steps": s.train_steps,
            "train_batch": s.train_batch,
            "fdd_n": s.fdd_n,
            "ddim_steps": s.ddim_steps,
            "sigma_data": round(ctx.edm.sigma_data, 4),
            "edm_p_mean": -1.2,
            "edm_p_std": 1.2,
            "importance_bins": s.is_bins,
            "importance_history": s.is_history,
            "threads": torch.get_num_threads(),
            "load_average": round(load, 2),
        },
        metrics=METRICS,
        rows=vrows + trows,
        headline=Headline(
            quality_ratio=fdd["eps-is-ld-anti"] / fdd["eps"],
            quality_metric="fd_digits",
        ),
        aims=[
            aim(
                f">= 2x lower loss-estimator variance than eps + uniform t, same objective "
                f"(best: {best_loss.name})",
                by_key[best_loss.key].values["loss_var_reduction"],
                2.0,
            ),
            aim(
                f">= 2x lower gradient-estimator variance (trace) than eps + uniform t, same "
                f"objective (best: {best_grad.name})",
                by_key[best_grad.key].values["grad_var_reduction"],
                2.0,
            ),
        ],
        notes=notes_of(ctx, s, loss, by_key, runs, grads),
        figures=figures,
        provenance=provenance(package_files()),
    )


def package_files() -> list[Path]:
    """The source files of this package (their sha256 go into the result's provenance)."""
    return sorted(Path(__file__).parent.glob("*.py"))
