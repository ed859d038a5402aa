"""The variance measurements of the benchmark, each a function of a
[`Context`][reference.stochastic_reparameterization.studies.Context] and a config.

1. **Training runs** ([`training_runs`][reference.stochastic_reparameterization.training_runs]): a
   tiny U-Net from scratch per scheme
   (`SCHEMES`), same seeds and budget.
2. **Loss-estimator variance on the trained zoo teacher** (forward passes only): repeated
   minibatches of the same objective under different sampling schemes
   (`ESTIMATORS`), and the variance
   decomposition that says which term each trick removes.
3. **Gradient-estimator variance** of the same estimators on the tiny U-Nets of step 1.

``s`` is the benchmark's [`Config`][reference.stochastic_reparameterization.bench.Config] (any
object with its size fields).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from reference.data import load_digits_tensors

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
from .training import TrainScheme
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
)

SHAPE = (1, 16, 16)
SAME_EPS = "eps"
"""Group of the estimators of the eps objective (L_simple, uniform t)."""
SAME_EDM = "edm"
"""Group of the estimators of EDM's objective (log-normal sigma)."""
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
    s: Any,
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


def teacher_loss_study(ctx: Context, s: Any, progress: bool = False) -> LossStudy:
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
    ctx: Context, models: dict[str, torch.nn.Module], s: Any, progress: bool = False
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
