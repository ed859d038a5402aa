"""Training runs: a tiny U-Net from scratch per scheme, scored on common yardsticks.

Every scheme of `SCHEMES` trains with the
same training seeds (initial weights, data order, noise draws) and budget; after it, held-out
eps-MSE and x0-MSE curves, and the relative variance and gradient noise-to-signal ratio of each
run's *own* minibatch objective on its own network (the reweighting comparison).
[`paired_quality`][reference.stochastic_reparameterization.training_runs.paired_quality] scores the
sample quality of every trained model over paired noise seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from reference.data import load_digits_tensors
from reference.harness import make_noise, sample
from reference.harness.seeds import SeedTable

from .samplers import LossSecondMomentHistory, draw
from .studies import SCHEMES, SHAPE, Context
from .training import Curve, Heldout, TrainScheme, eps_fn_of, train
from .variance import GradientMoments, gradient_moments, objective_pmf


@dataclass
class TrainingRun:
    """One scheme trained with several seeds: EMA models, curves; own-objective moments."""

    scheme: TrainScheme
    models: list[torch.nn.Module]
    curves: list[Curve]
    own: GradientMoments

    @property
    def model(self) -> torch.nn.Module:
        return self.models[0]

    def mean_curve(self, field: str) -> list[float]:
        """The yardstick ``field`` averaged over seeds at every evaluation."""
        values = torch.tensor([getattr(c, field) for c in self.curves], dtype=torch.float64)
        return values.mean(0).tolist()


def own_objective_moments(
    ctx: Context, run_model: torch.nn.Module, scheme: TrainScheme, s: Any
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


def training_runs(ctx: Context, s: Any, progress: bool = False) -> dict[str, TrainingRun]:
    """Train every scheme; score the yardsticks and the own-objective noise."""
    from tqdm.auto import tqdm

    x_test, _ = load_digits_tensors("test")
    heldout = Heldout.make(x_test[: s.heldout_images], ctx.schedule.T, s.heldout_repeats)
    runs = {}
    total = len(SCHEMES) * s.train_steps * s.train_seeds
    bar = tqdm(total=total, desc="training runs", disable=not progress)
    for scheme in SCHEMES:
        p = ctx.param(scheme.parameterization)
        models, curves = [], []
        for seed in range(s.train_seeds):
            model, curve = train(
                scheme, p, ctx.x_train, heldout, (ctx.uniform, ctx.edm_q),
                steps=s.train_steps, batch=s.train_batch, eval_every=s.eval_every, seed=seed,
                history_shape=(s.is_bins, s.is_history), on_step=lambda: bar.update(1),
            )  # fmt: skip
            models.append(model)
            curves.append(curve)
        own = own_objective_moments(ctx, models[0], scheme, s)
        runs[scheme.key] = TrainingRun(scheme, models, curves, own)
    bar.close()
    return runs


def examples_to_reach(run: TrainingRun, level: float) -> int | None:
    """First evaluated example count at which the seed-mean held-out eps-MSE is <= ``level``."""
    for n, v in zip(run.curves[0].examples, run.mean_curve("eps_mse"), strict=True):
        if v <= level:
            return n
    return None


@dataclass
class Quality:
    """Sample quality over noise seeds: the table (a seed's value is the mean over a scheme's
    training runs) and every run's FDD per noise seed, ``fdd[scheme][run][seed]``."""

    table: SeedTable
    fdd: dict[str, list[list[float]]]


def paired_quality(ctx: Context, runs: dict[str, TrainingRun], s: Any) -> Quality:
    """FDD, KID and diversity of DDIM samples of every trained model over the noise seeds
    ``s.seeds``: on each seed every model samples ``s.fdd_n`` unconditional images from the same
    noise ``make_noise(s.fdd_n, seed)`` (paired across schemes and training runs)."""
    from reference.harness import over_seeds, quality_report
    from reference.zoo import teacher_scheduler

    fdd: dict[str, list[list[float]]] = {k: [[] for _ in r.models] for k, r in runs.items()}

    def sampler(key: str) -> Any:
        p = ctx.param(runs[key].scheme.parameterization)

        def run(seed: int) -> list[torch.Tensor]:
            noise = make_noise(s.fdd_n, seed)
            return [
                sample(eps_fn_of(m, p), teacher_scheduler(), noise, steps=s.ddim_steps, seed=seed)
                for m in runs[key].models
            ]

        return run

    def measure(key: str, xs: list[torch.Tensor], same: Any) -> dict[str, float]:
        reports = [quality_report(x) for x in xs]
        for j, r in enumerate(reports):
            fdd[key][j].append(r["fd_digits"])
        return {m: sum(r[m] for r in reports) / len(reports) for m in reports[0]}

    table = over_seeds({k: sampler(k) for k in runs}, measure, s.seeds, desc="sample quality")
    return Quality(table, fdd)
