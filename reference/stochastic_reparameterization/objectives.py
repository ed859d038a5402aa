"""Parameterizations of the denoiser and the weighting each one puts on the same error.

All models here live on the zoo's discrete variance-preserving schedule: ``x_t = alpha_t x_0 +
sigma_t eps`` with ``alpha_t = sqrt(abar_t)``, ``sigma_t = sqrt(1 - abar_t)``, ``t = 0..T-1``
and ``SNR_t = alpha_t^2 / sigma_t^2``. A network output ``o`` is read in one of four ways:

===========  =====================================  ======================================
name         the network predicts                   native loss = w(t) ||x_0 - x0_hat||^2
===========  =====================================  ======================================
``eps``      the noise ``eps`` (Ho et al. 2020)      ``w = SNR_t``
``x0``       the clean image ``x_0``                 ``w = 1``
``v``        ``v = alpha_t eps - sigma_t x_0``       ``w = 1 + SNR_t = 1 / sigma_t^2``
``edm``      ``F`` in ``D = c_skip x + c_out F``     ``w = lambda(sigma) = SNR_t + 1/sigma_data^2``
===========  =====================================  ======================================

The right column is the point: for a fixed ``(x_0, t, eps)`` every parameterization's squared
error is the *same* x0-error times a different function of ``t``. Choosing a parameterization
therefore (a) reweights the noise levels of the objective and (b) changes the scale of the
network's target, hence the conditioning of the optimisation; it does not change the minimiser
of a perfectly flexible model (the posterior mean ``E[x_0 | x_t]``).

EDM (Karras et al. 2022, arXiv:2206.00364) works with ``x = x_0 + sigma n``; on a VP schedule
``x = x_t / alpha_t`` and ``sigma = sigma_t / alpha_t = SNR_t^(-1/2)``. Its preconditioning
``c_in = 1/sqrt(sigma^2 + sigma_data^2)``, ``c_skip = sigma_data^2 / (sigma^2 + sigma_data^2)``,
``c_out = sigma sigma_data / sqrt(sigma^2 + sigma_data^2)`` makes the network's input and its
training target ``(x_0 - c_skip x) / c_out`` unit-variance at every noise level, and the loss
weight ``lambda = 1 / c_out^2`` makes every level contribute an error of the same scale.
EDM conditions its network on ``c_noise = ln(sigma) / 4``; here every network is conditioned on
the discrete ``t``, a monotone function of ``sigma`` (the same information).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PARAMETERIZATIONS = ("eps", "x0", "v", "edm")


def _expand(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.reshape(-1, *([1] * (like.dim() - 1))).to(like.dtype)


@dataclass(frozen=True)
class NoiseSchedule:
    """A discrete VP schedule given by ``abar[t]`` (float64), ``t = 0..T-1``."""

    abar: torch.Tensor

    @classmethod
    def zoo(cls) -> NoiseSchedule:
        """The zoo's 1000-step cosine schedule (the teacher's training schedule)."""
        from reference.zoo import teacher_scheduler

        return cls(teacher_scheduler("DDPMScheduler").alphas_cumprod.to(torch.float64))

    @property
    def T(self) -> int:
        return int(self.abar.numel())

    def alpha(self, t: torch.Tensor) -> torch.Tensor:
        return self.abar[t].sqrt()

    def sigma(self, t: torch.Tensor) -> torch.Tensor:
        return (1.0 - self.abar[t]).sqrt()

    def snr(self, t: torch.Tensor) -> torch.Tensor:
        return self.abar[t] / (1.0 - self.abar[t])

    def edm_sigma(self, t: torch.Tensor) -> torch.Tensor:
        """EDM's noise level ``sigma = sigma_t / alpha_t`` of VP step ``t``."""
        return self.snr(t).rsqrt()

    def add_noise(self, x0: torch.Tensor, eps: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``x_t = alpha_t x_0 + sigma_t eps``."""
        return _expand(self.alpha(t), x0) * x0 + _expand(self.sigma(t), x0) * eps


@dataclass(frozen=True)
class EDMPreconditioning:
    """Karras et al.'s ``c_skip, c_out, c_in, c_noise`` and loss weight ``lambda(sigma)``."""

    sigma_data: float

    def c_skip(self, sigma: torch.Tensor) -> torch.Tensor:
        return self.sigma_data**2 / (sigma**2 + self.sigma_data**2)  # EDM Table 1: c_skip

    def c_out(self, sigma: torch.Tensor) -> torch.Tensor:
        return sigma * self.sigma_data / (sigma**2 + self.sigma_data**2).sqrt()  # Table 1: c_out

    def c_in(self, sigma: torch.Tensor) -> torch.Tensor:
        return 1.0 / (sigma**2 + self.sigma_data**2).sqrt()  # EDM Table 1: c_in

    def c_noise(self, sigma: torch.Tensor) -> torch.Tensor:
        return sigma.log() / 4.0  # EDM Table 1: c_noise

    def loss_weight(self, sigma: torch.Tensor) -> torch.Tensor:
        """``lambda(sigma) = (sigma^2 + sigma_data^2) / (sigma sigma_data)^2 = 1 / c_out^2``."""
        return (sigma**2 + self.sigma_data**2) / (sigma * self.sigma_data) ** 2  # Table 1: lambda


def sigma_data_of(x: torch.Tensor) -> float:
    """EDM's ``sigma_data`` for data ``x``: the root mean square ``sqrt(E[x^2])``.

    Karras et al. derive ``c_skip`` and ``c_out`` from ``E[y^2] = sigma_data^2`` and use 0.5 for
    images in [-1, 1]; the digits have a large constant background, so the RMS is measured.
    """
    return float(x.double().square().mean().sqrt())


@dataclass(frozen=True)
class Parameterization:
    """How a network output is read: ``name`` in
    `PARAMETERIZATIONS`."""

    name: str
    schedule: NoiseSchedule
    edm: EDMPreconditioning

    def __post_init__(self) -> None:
        if self.name not in PARAMETERIZATIONS:
            known = ", ".join(PARAMETERIZATIONS)
            raise ValueError(f"unknown parameterization {self.name!r}; choose from {known}")

    def x0_weight(self, t: torch.Tensor) -> torch.Tensor:
        """``w(t)`` with native loss ``= w(t) ||x_0 - x0_hat||^2`` (float64, shape of ``t``)."""
        s = self.schedule.snr(t)
        return {
            "eps": s,
            "x0": torch.ones_like(s),
            "v": 1.0 + s,
            "edm": self.edm.loss_weight(self.schedule.edm_sigma(t)),
        }[self.name]

    def eps_error_weight(self, t: torch.Tensor) -> torch.Tensor:
        """``w(t) / SNR_t``: native loss of this parameterization per unit of eps-error.

        For an eps-network, ``||eps - eps_hat||^2 = SNR_t ||x_0 - x0_hat||^2``, so the native loss
        of parameterization ``p`` evaluated on the same denoiser is ``p.eps_error_weight(t)`` times
        the eps-error (``1`` for ``eps``, ``1 + 1/SNR`` for ``v``, ``1/SNR`` for ``x0``).
        """
        return self.x0_weight(t) / self.schedule.snr(t)

    def network_input(self, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """What the network sees: ``x_t`` (EDM: ``c_in(sigma) x`` with ``x = x_t / alpha_t``)."""
        if self.name != "edm":
            return x_t
        sigma = self.schedule.edm_sigma(t)
        return x_t * _expand(self.edm.c_in(sigma) / self.schedule.alpha(t), x_t)

    def target(self, x0: torch.Tensor, eps: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The network's regression target for ``x_t = alpha_t x0 + sigma_t eps``."""
        a, s = _expand(self.schedule.alpha(t), x0), _expand(self.schedule.sigma(t), x0)
        if self.name == "eps":
            return eps
        if self.name == "x0":
            return x0
        if self.name == "v":
            return a * eps - s * x0  # Salimans & Ho 2022, Sec. 4: v = alpha eps - sigma x0
        sigma = self.schedule.edm_sigma(t)
        x = (a * x0 + s * eps) / a
        # EDM Eq. (8): the effective target of F, (y - c_skip (y + n)) / c_out
        return (x0 - _expand(self.edm.c_skip(sigma), x0) * x) / _expand(self.edm.c_out(sigma), x0)

    def to_x0(self, out: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The clean-image estimate ``x0_hat`` implied by network output ``out``."""
        a, s = _expand(self.schedule.alpha(t), x_t), _expand(self.schedule.sigma(t), x_t)
        if self.name == "eps":
            return (x_t - s * out) / a  # Ho et al. 2020, Eq. (15): predicted x0
        if self.name == "x0":
            return out
        if self.name == "v":
            return a * x_t - s * out  # x0 = alpha x_t - sigma v (Salimans & Ho 2022)
        sigma = self.schedule.edm_sigma(t)
        return (  # EDM Eq. (7): D = c_skip x + c_out F(c_in x; c_noise)
            _expand(self.edm.c_skip(sigma), x_t) * x_t / a
            + _expand(self.edm.c_out(sigma), x_t) * out
        )

    def to_eps(self, out: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The noise estimate ``eps_hat = (x_t - alpha_t x0_hat) / sigma_t`` (for samplers)."""
        if self.name == "eps":
            return out
        a, s = _expand(self.schedule.alpha(t), x_t), _expand(self.schedule.sigma(t), x_t)
        if self.name == "v":
            return s * x_t + a * out
        return (x_t - a * self.to_x0(out, x_t, t)) / s

    def loss_per_example(
        self, out: torch.Tensor, x0: torch.Tensor, eps: torch.Tensor, t: torch.Tensor
    ) -> torch.Tensor:
        """Native squared error, averaged over pixels: ``mean (out - target)^2`` per row."""
        return (out - self.target(x0, eps, t)).square().flatten(1).mean(1)
