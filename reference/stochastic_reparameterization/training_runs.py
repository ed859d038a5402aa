"""Training runs: a tiny U-Net from scratch per scheme, scored on common yardsticks.

Every scheme of `SCHEMES` trains with the
same training seeds (initial weights, data order, noise draws) and budget; after it, held-out
eps-MSE and x0-MSE curves, and the relative variance and gradient noise-to-signal ratio of each
run's *own* minibatch objective on its own network (the reweighting comparison).
[`sampler_of`][reference.stochastic_reparameterization.training_runs.sampler_of] and
[`RunScores`][reference.stochastic_reparameterization.training_runs.RunScores] are how the
benchmark's comparison samples and scores every trained model over paired noise seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from reference.data import load_digits_tensors

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


def sampler_of(ctx: Context, run: TrainingRun, n: int, steps: int) -> Callable[[int], torch.Tensor]:
    """``sample(seed)``: ``[runs, n, 1, 16, 16]``, every training run of the scheme sampled from
    the same noise ``make_noise(n, seed)`` with ``steps`` DDIM steps on the clipped ODE
    (`reference.harness.ode`, the sampler every ported benchmark uses), unconditionally (the
    tiny U-Nets have no class input). Every scheme gets the same noise on a seed: paired."""
    from reference.harness import make_noise
    from reference.harness.ode import solve

    p = ctx.param(run.scheme.parameterization)

    def sample(seed: int) -> torch.Tensor:
        noise = make_noise(n, seed)
        with torch.no_grad():
            return torch.stack([solve(eps_fn_of(m, p), noise, steps=steps) for m in run.models])

    return sample


QUALITY = ("fd_digits", "kid_digits")
"""What the held-out score says of unconditional samples. Its accuracy and within-class
diversity read the labels the samples were drawn with, and these samples have none."""


@dataclass
class RunScores:
    """The comparison's ``score`` for samples of several training runs (`sampler_of`): the
    held-out score (`reference.harness.scores.held_out_score`) of every run, averaged over the
    runs (a seed's value), with every run's FDD kept per seed, ``fdd[variant][run][seed]``.

    The held-out score is given class-balanced labels in drawing order (``n / 10`` per class).
    For unconditional i.i.d. samples those labels are a random partition, so the class-weighted
    KID stays unbiased: each block mean of the generated side estimates the same kernel mean,
    and (6) of `reference.harness.scores` becomes MMD² between the samples' distribution and the
    class-balanced mixture of real digits. The FDD does not read labels."""

    n: int
    fdd: dict[str, list[list[float]]] = field(default_factory=dict)

    def __call__(self, x: torch.Tensor, same_seed: Mapping[str, Any]) -> dict[str, float]:
        from reference.harness.scores import held_out_score

        one = held_out_score(self.n)
        key = next(k for k, v in same_seed.items() if v is x)  # the variant being scored
        per_run = [one(xj, same_seed) for xj in x]
        runs = self.fdd.setdefault(key, [[] for _ in per_run])
        for j, r in enumerate(per_run):
            runs[j].append(r["fd_digits"])
        return {m: sum(r[m] for r in per_run) / len(per_run) for m in QUALITY}
