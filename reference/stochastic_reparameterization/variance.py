"""Measuring the variance of minibatch estimators of a diffusion objective and of its gradient.

An *estimator* is an objective (which parameterization's weighting, and its own noise-level
distribution ``p``) plus a way of drawing the minibatch
([`Sampling`][reference.stochastic_reparameterization.samplers.Sampling]). Two kinds of comparison
are made, and they must not be confused:

* **Same objective, different sampling** - pure variance reduction. ``E[J_hat]`` is identical,
  so the variance ratio says directly how many fewer examples reach the same precision.
* **Different objectives** - reweighting. The expected loss and gradient change, so raw
  variances are on different scales; they are compared scale-free, by the relative variance
  ``Var(J_hat) / E[J_hat]^2`` of the loss and the gradient noise-to-signal ratio
  ``tr Cov(g) / |E g|^2`` (the "simple noise scale" of McCandlish et al. 2018, arXiv:1812.06162,
  divided by the batch size: how many examples a step needs before noise stops dominating).

The loss variance is measured on the trained zoo teacher (forward passes only); the gradient
variance on a small U-Net, from the full parameter gradient of every draw: its covariance trace
(sum of per-parameter variances, accumulated in float64) and the variance of its projection on a
fixed random unit direction; 16 random directions form a sketch of the trace whose draws can be
bootstrapped for a confidence interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .objectives import Parameterization
from .samplers import Draw, Sampling, TimestepProposal, draw

LossFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""``(index, t, eps) -> per-example native loss`` of a network on the training examples
``index`` noised with ``eps`` at ``t`` (the function holds the data and, if any, the labels)."""
ModelFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""``(network_input, t, index) -> network output`` (``index`` lets it look up class labels)."""


@dataclass(frozen=True)
class Estimator:
    """An objective (parameterization weighting) estimated with a minibatch sampling scheme."""

    key: str
    name: str
    objective: str
    sampling: Sampling
    group: str
    batch_factor: int = 1


def objective_pmf(objective: str, uniform: TimestepProposal, edm: TimestepProposal) -> torch.Tensor:
    """The objective's own noise-level distribution ``p``: EDM's log-normal or uniform."""
    return edm.pmf if objective == "edm" else uniform.pmf


def estimate(d: Draw, per_example: torch.Tensor, p_t: torch.Tensor) -> torch.Tensor:
    """``J_hat = mean_i p(t_i) / q(t_i) * l_i`` (float64 scalar; differentiable in ``l``)."""
    return (p_t[d.t] / d.q * per_example.double()).mean()


def native_loss_fn(model_fn: ModelFn, p: Parameterization, x_data: torch.Tensor) -> LossFn:
    """Per-example native loss of parameterization ``p`` for a network ``model_fn``."""

    def fn(index: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        x0 = x_data[index]
        x_t = p.schedule.add_noise(x0, eps, t)
        out = model_fn(p.network_input(x_t, t), t, index)
        return p.loss_per_example(out, x0, eps, t)

    return fn


def loss_draws(
    loss_fn: LossFn,
    n_data: int,
    shape: tuple[int, ...],
    sampling: Sampling,
    proposal: TimestepProposal,
    batch: int,
    draws: int,
    generator: torch.Generator,
    chunk: int = 8,
) -> list[tuple[Draw, torch.Tensor]]:
    """``draws`` minibatches and their per-example losses (``chunk`` draws per forward pass)."""
    out: list[tuple[Draw, torch.Tensor]] = []
    while len(out) < draws:
        ds = [
            draw(sampling, proposal, n_data, batch, shape, generator)
            for _ in range(min(chunk, draws - len(out)))
        ]
        cat = torch.cat
        errors = loss_fn(
            cat([d.index for d in ds]), cat([d.t for d in ds]), cat([d.eps for d in ds])
        )
        out += list(zip(ds, errors.split(batch), strict=True))
    return out


@dataclass(frozen=True)
class VarianceStats:
    """Mean and variance of ``R`` independent estimates, with a bootstrap of the variance."""

    mean: float
    var: float
    draws: int

    @property
    def relative_var(self) -> float:
        """``Var / mean^2`` (scale-free; NaN when the mean is 0)."""
        return self.var / self.mean**2 if self.mean else float("nan")


def variance_stats(values: torch.Tensor) -> VarianceStats:
    v = values.double()
    return VarianceStats(float(v.mean()), float(v.var(unbiased=True)), int(v.numel()))


def variance_ratio_ci(
    base: torch.Tensor, other: torch.Tensor, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``Var(base) / Var(other)`` and its 95% percentile-bootstrap interval (draws resampled)."""
    gen = torch.Generator().manual_seed(seed)
    b, o = base.double(), other.double()
    ib = torch.randint(len(b), (resamples, len(b)), generator=gen)
    io = torch.randint(len(o), (resamples, len(o)), generator=gen)
    ratios = b[ib].var(1) / o[io].var(1)
    ratios = ratios[torch.isfinite(ratios)]
    lo, hi = torch.quantile(ratios, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return float(b.var() / o.var()), lo, hi


# --------------------------------------------------------------------------- decomposition


@dataclass(frozen=True)
class Decomposition:
    """Where the per-example variance of a loss comes from (from iid and antithetic draws).

    ``between_t``: ``Var_t(E[l | t])`` (removed by stratifying t); ``within_t``: the rest;
    ``odd_eps``: the variance of the part of ``l`` that is odd in ``eps`` (cancelled by
    antithetic pairs); ``is_gain``: ``Var_uniform / Var_q*`` predicted for the optimal
    proposal ``q* ∝ p sqrt(E[l_t^2])`` from binned second moments.
    """

    total: float
    between_t: float
    within_t: float
    odd_eps: float
    is_gain: float


def decompose(
    iid_terms: tuple[torch.Tensor, torch.Tensor],
    antithetic_terms: torch.Tensor,
    T: int,
    bins: int = 50,
) -> Decomposition:
    """Variance decomposition of per-example losses.

    ``iid_terms``: (t, l) of all examples of iid uniform draws; ``antithetic_terms``: ``[P, 2]``
    losses of antithetic pairs (same ``x_0`` and ``t``, noise ``eps`` and ``-eps``).
    """
    t, loss = iid_terms[0], iid_terms[1].double()
    b = t * bins // T
    counts = torch.bincount(b, minlength=bins).double()
    if bool((counts < 2).any()):
        raise ValueError("decompose: every timestep bin needs at least two examples")
    sums = torch.bincount(b, weights=loss, minlength=bins)
    means = sums / counts
    second = torch.bincount(b, weights=loss.square(), minlength=bins) / counts
    share = counts / counts.sum()
    total = float(loss.var(unbiased=False))
    between = float((share * (means - loss.mean()).square()).sum())
    odd = float(((antithetic_terms[:, 0] - antithetic_terms[:, 1]).double() / 2).square().mean())
    j = float(loss.mean())
    var_q = float((share * second.sqrt()).sum()) ** 2 - j**2
    return Decomposition(total, between, total - between, odd, total / var_q if var_q > 0 else 0.0)


# --------------------------------------------------------------------------- gradients


@dataclass
class GradientMoments:
    """Running moments of flattened gradients (float64) and their projections.

    ``directions``: ``[K, n]`` fixed random unit vectors; row 0 gives the single-projection
    variance, all rows a sketch of the trace for bootstrap intervals
    ([`trace_ratio_ci`][reference.stochastic_reparameterization.variance.trace_ratio_ci]).
    """

    directions: torch.Tensor
    count: int = 0
    total: torch.Tensor | None = None
    total_sq: torch.Tensor | None = None

    def __post_init__(self) -> None:
        self.projections: list[torch.Tensor] = []
        self.losses: list[float] = []

    def add(self, grad: torch.Tensor, loss: float) -> None:
        g = grad.double()
        self.total = g.clone() if self.total is None else self.total + g
        self.total_sq = g.square() if self.total_sq is None else self.total_sq + g.square()
        self.projections.append(self.directions @ g)
        self.losses.append(loss)
        self.count += 1

    def trace_cov(self) -> float:
        """``tr Cov(g) = sum_j Var(g_j)`` over parameters (unbiased)."""
        if self.count < 2 or self.total is None or self.total_sq is None:
            raise ValueError("trace_cov needs at least two gradients")
        n = self.count
        return float(((self.total_sq - self.total.square() / n) / (n - 1)).sum())

    def mean_norm_sq(self) -> float:
        """Unbiased ``|E g|^2 = |mean g|^2 - tr Cov(g) / R``."""
        assert self.total is not None
        return float((self.total / self.count).square().sum()) - self.trace_cov() / self.count

    def sketch(self) -> torch.Tensor:
        """``[R, K]`` projections of every draw on the fixed directions."""
        return torch.stack(self.projections)

    def projection_var(self) -> float:
        """Variance of the projection on the first fixed random direction."""
        return float(self.sketch()[:, 0].var())


def trace_ratio_ci(
    base: GradientMoments, other: GradientMoments, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95% bootstrap interval of ``tr Cov(base) / tr Cov(other)`` from the projection sketches."""
    gen = torch.Generator().manual_seed(seed)
    a, b = base.sketch(), other.sketch()
    ia = torch.randint(len(a), (resamples, len(a)), generator=gen)
    ib = torch.randint(len(b), (resamples, len(b)), generator=gen)
    ratios = a[ia].var(1).sum(-1) / b[ib].var(1).sum(-1)
    ratios = ratios[torch.isfinite(ratios)]
    lo, hi = torch.quantile(ratios, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return lo, hi


def flat_grad(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None])


def random_directions(model: torch.nn.Module, k: int = 16, seed: int = 0) -> torch.Tensor:
    """``k`` fixed random unit vectors in parameter space (float64, ``[k, n]``)."""
    n = sum(p.numel() for p in model.parameters())
    v = torch.randn(k, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return v / v.norm(dim=1, keepdim=True)


def gradient_moments(
    model: torch.nn.Module,
    losses_of_draw: Callable[[torch.Generator], dict[str, torch.Tensor]],
    keys: Sequence[str],
    draws: int,
    generator: torch.Generator,
) -> dict[str, GradientMoments]:
    """Moments of the gradient of each loss ``losses_of_draw(generator)[key]`` over ``draws``.

    Several estimators that share a draw (the same minibatch, different weightings) are
    differentiated from one forward pass.
    """
    directions = random_directions(model)
    moments = {k: GradientMoments(directions) for k in keys}
    for _ in range(draws):
        losses = losses_of_draw(generator)
        for i, key in enumerate(keys):
            model.zero_grad(set_to_none=True)
            losses[key].backward(retain_graph=i < len(keys) - 1)
            moments[key].add(flat_grad(model), float(losses[key].detach()))
    model.zero_grad(set_to_none=True)
    return moments
