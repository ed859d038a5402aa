"""Where a minibatch's randomness comes from: timestep proposals, stratification, antithetic noise.

A diffusion objective is an expectation over the data ``x_0``, the noise level ``t`` and the
noise ``eps``: ``J = E_{t ~ p} E_{x_0, eps} [ l(x_0, t, eps) ]`` where ``p`` is the objective's own
distribution over noise levels (uniform for DDPM-style objectives, EDM's log-normal). A minibatch
estimates ``J`` by

    J_hat = (1/B) sum_i  p(t_i) / q(t_i)  l(x_0^i, t_i, eps_i),    t_i ~ q,

which is unbiased for any proposal ``q`` that is positive wherever ``p`` is. The tricks here leave
``J`` unchanged and only lower the variance of ``J_hat``:

* **Low-discrepancy (stratified) timesteps** (Kingma et al. 2021, arXiv:2107.00630): one uniform
  ``u`` per batch and ``u_i = (u + i/B) mod 1``, mapped through the inverse CDF of ``q``. Each
  ``u_i`` is still uniform (unbiased), but the batch covers the noise levels evenly, which removes
  most of the *between-timestep* variance ``Var_t(E[l | t])``.
* **Importance sampling of t** (Nichol & Dhariwal 2021, arXiv:2102.09672, with the loss-second-
  moment history of their ``LossSecondMomentResampler``): ``q(t) ∝ p(t) sqrt(E[l_t^2])`` is the
  proposal that minimises ``E_q[(p/q)^2 l^2]``; ``E[l_t^2]`` is tracked with the last ``k``
  losses seen at each noise level, mixed with a little uniform mass. It pays off when a few
  noise levels have much larger losses than the rest.
* **Antithetic noise**: pairs ``(x_0, t, eps)`` and ``(x_0, t, -eps)``. Writing ``l = l_even +
  l_odd`` in ``eps``, the pair average cancels ``l_odd`` exactly; it helps when the odd part
  carries more than half of the variance (the price: half as many distinct ``x_0`` and ``t``).

EDM's log-normal ``ln sigma ~ N(P_mean, P_std^2)`` is the objective's own ``p`` for EDM; used as
a proposal for another objective it would be importance sampling too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .objectives import NoiseSchedule

PROPOSALS = ("uniform", "edm", "importance")


def low_discrepancy_uniforms(n: int, generator: torch.Generator) -> torch.Tensor:
    """``u_i = (u + i/n) mod 1`` with one ``u ~ U[0, 1)`` (float64): marginally uniform."""
    u = torch.rand((), generator=generator, dtype=torch.float64)
    return (u + torch.arange(n, dtype=torch.float64) / n) % 1.0


@dataclass(frozen=True)
class TimestepProposal:
    """A distribution ``q`` over ``t = 0..T-1`` given by its probabilities ``pmf`` (float64)."""

    name: str
    pmf: torch.Tensor

    def __post_init__(self) -> None:
        if self.pmf.dim() != 1 or bool((self.pmf < 0).any()):
            raise ValueError(f"proposal {self.name!r}: pmf must be a 1-D tensor of non-negatives")
        total = float(self.pmf.sum())
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"proposal {self.name!r}: pmf sums to {total}, not 1")

    def sample(self, n: int, generator: torch.Generator, stratified: bool = False) -> torch.Tensor:
        """``n`` timesteps by inverse-CDF sampling (low-discrepancy ``u`` when ``stratified``)."""
        if stratified:
            u = low_discrepancy_uniforms(n, generator)
        else:
            u = torch.rand(n, generator=generator, dtype=torch.float64)
        cdf = self.pmf.cumsum(0)
        return torch.searchsorted(cdf, u, right=True).clamp_(max=self.pmf.numel() - 1)


def uniform_proposal(T: int) -> TimestepProposal:
    return TimestepProposal("uniform", torch.full((T,), 1.0 / T, dtype=torch.float64))


def edm_proposal(
    schedule: NoiseSchedule, p_mean: float = -1.2, p_std: float = 1.2
) -> TimestepProposal:
    """EDM's log-normal ``ln sigma ~ N(p_mean, p_std^2)`` on the discrete steps of ``schedule``.

    Step ``t`` receives the normal mass of ``ln sigma`` between the midpoints to its neighbours
    (the first and last steps also take the tails), so sampling ``t`` from this pmf and reading
    ``sigma_t`` is the discrete version of EDM's training distribution.
    """
    t = torch.arange(schedule.T)
    log_sigma = schedule.edm_sigma(t).log()
    if not bool((log_sigma[1:] > log_sigma[:-1]).all()):
        raise ValueError("edm_proposal: the schedule's sigma must increase with t")
    mid = (log_sigma[1:] + log_sigma[:-1]) / 2
    edges = torch.cat([torch.tensor([-torch.inf]), mid, torch.tensor([torch.inf])]).double()
    cdf = torch.special.ndtr((edges - p_mean) / p_std)
    pmf = (cdf[1:] - cdf[:-1]).clamp_min(0.0)
    return TimestepProposal("edm", pmf / pmf.sum())


class LossSecondMomentHistory:
    """Importance sampling of ``t`` from a running history of losses (improved DDPM).

    The ``T`` steps are grouped into ``bins`` equal bins (``bins=T`` is Nichol & Dhariwal's
    per-step history); each bin keeps its last ``history`` losses. Until every bin is full the
    proposal is uniform; then ``q(bin) ∝ sqrt(mean(loss^2))``, mixed with ``uniform_prob`` of
    uniform mass, and spread evenly over the steps of the bin.
    """

    def __init__(self, T: int, bins: int = 50, history: int = 10, uniform_prob: float = 1e-3):
        if not 1 <= bins <= T:
            raise ValueError(f"bins must be between 1 and T={T}, got {bins}")
        if history < 1 or not 0.0 <= uniform_prob <= 1.0:
            raise ValueError("history must be >= 1 and uniform_prob in [0, 1]")
        self.T, self.bins, self.history, self.uniform_prob = T, bins, history, uniform_prob
        self._losses = torch.zeros(bins, history, dtype=torch.float64)
        self._count = torch.zeros(bins, dtype=torch.long)
        self._bin_of = torch.arange(T) * bins // T
        self._bin_size = torch.bincount(self._bin_of, minlength=bins).double()

    @property
    def warm(self) -> bool:
        return bool((self._count >= self.history).all())

    def update(self, t: torch.Tensor, losses: torch.Tensor) -> None:
        """Record per-example losses ``losses`` observed at timesteps ``t``."""
        for b, loss in zip(
            self._bin_of[t].tolist(), losses.detach().double().tolist(), strict=True
        ):
            self._losses[b, self._count[b] % self.history] = loss
            self._count[b] += 1

    def proposal(self) -> TimestepProposal:
        """The current proposal (uniform until every bin has ``history`` losses)."""
        if not self.warm:
            return uniform_proposal(self.T)
        w = self._losses.square().mean(1).sqrt()
        w = w / w.sum() * (1.0 - self.uniform_prob) + self.uniform_prob / self.bins
        pmf = (w / self._bin_size)[self._bin_of]
        return TimestepProposal("importance", pmf / pmf.sum())


@dataclass(frozen=True)
class Sampling:
    """How one minibatch is drawn: the timestep proposal and the two coupling tricks."""

    proposal: str = "uniform"
    stratified: bool = False
    antithetic: bool = False

    def __post_init__(self) -> None:
        if self.proposal not in PROPOSALS:
            raise ValueError(
                f"unknown proposal {self.proposal!r}; choose from {', '.join(PROPOSALS)}"
            )

    def label(self) -> str:
        parts = [
            {"uniform": "uniform t", "edm": "log-normal sigma", "importance": "IS t"}[self.proposal]
        ]
        if self.stratified:
            parts.append("low-discrepancy")
        if self.antithetic:
            parts.append("antithetic eps")
        return " + ".join(parts)


@dataclass(frozen=True)
class Draw:
    """One minibatch: data indices, timesteps, noise and the proposal probability of each t."""

    index: torch.Tensor
    t: torch.Tensor
    eps: torch.Tensor
    q: torch.Tensor


def draw(
    sampling: Sampling,
    proposal: TimestepProposal,
    n_data: int,
    batch: int,
    shape: tuple[int, ...],
    generator: torch.Generator,
) -> Draw:
    """Draw a minibatch of ``batch`` rows; antithetic rows come in pairs ``i`` and ``i + B/2``."""
    if sampling.antithetic and batch % 2:
        raise ValueError(f"antithetic sampling needs an even batch, got {batch}")
    m = batch // 2 if sampling.antithetic else batch
    index = torch.randint(n_data, (m,), generator=generator)
    t = proposal.sample(m, generator, sampling.stratified)
    eps = torch.randn((m, *shape), generator=generator)
    if sampling.antithetic:
        index, t, eps = torch.cat([index, index]), torch.cat([t, t]), torch.cat([eps, -eps])
    return Draw(index, t, eps, proposal.pmf[t])
