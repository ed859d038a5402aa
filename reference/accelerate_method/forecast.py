"""Forecasting the denoiser output between full computations.

[`newton_forecast`][reference.accelerate_method.forecast.newton_forecast] evaluates the polynomial
through the last ``m + 1`` cached outputs (Newton's divided differences over their timesteps);
[`taylorseer_forecast`][reference.accelerate_method.forecast.taylorseer_forecast] is TaylorSeer's
finite-difference Taylor series (Liu et al. 2025, arXiv:2503.06923).
[`StepForecaster`][reference.accelerate_method.forecast.StepForecaster] wraps any `EpsFn`;
[`apply_step_forecasting`][reference.accelerate_method.forecast.apply_step_forecasting] is the
public shape (a config dataclass and a function, like diffusers' ``apply_taylorseer_cache``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from reference.harness.sampling import EpsFn, model_eps_fn

from .schedule import check_schedule, is_full_step

METHODS = ("newton", "taylorseer", "reuse")


def newton_forecast(
    nodes: Sequence[float], values: Sequence[torch.Tensor], at: float
) -> torch.Tensor:
    """Evaluate at ``at`` the polynomial through ``(nodes[j], values[j])`` (Newton form).

    Degree ``len(nodes) - 1``; exact for polynomial trajectories of at most that degree.
    """
    if len(nodes) != len(values) or not nodes:
        raise ValueError("newton_forecast: need as many values as nodes, at least one")
    coef = list(values)  # divided differences, computed in place
    n = len(nodes)
    for level in range(1, n):
        for j in range(n - 1, level - 1, -1):
            # f[t_a..t_j] = (f[t_a+1..t_j] - f[t_a..t_j-1]) / (t_j - t_a),  a = j - level
            coef[j] = (coef[j] - coef[j - 1]) / (nodes[j] - nodes[j - level])
    # eps(t) ~ f[t_0] + f[t_0, t_1] (t - t_0) + ... + f[t_0..t_m] (t - t_0)...(t - t_{m-1})
    out = coef[n - 1]
    for j in range(n - 2, -1, -1):  # Horner on the Newton basis
        out = coef[j] + (at - nodes[j]) * out
    return out


def taylorseer_forecast(
    nodes: Sequence[float], values: Sequence[torch.Tensor], at: float
) -> torch.Tensor:
    """TaylorSeer's forecast (arXiv:2503.06923, eq. 6-8): finite-difference Taylor series.

    Derivatives of order ``i`` are estimated by recursive backward differences of the cached
    values divided by the node spacing (as ``diffusers``' ``TaylorSeerState.update`` does), then
    ``F(s + d) = sum_i F^(i) d^i / i!``. Exact for degree <= 1 only.
    """
    if len(nodes) != len(values) or not nodes:
        raise ValueError("taylorseer_forecast: need as many values as nodes, at least one")
    factors: list[torch.Tensor] = []
    for j in range(len(nodes)):  # replay the cache updates in order
        new = [values[j]]
        for i in range(len(factors)):
            # F^(i+1) ~ (F^(i)_new - F^(i)_old) / spacing: the i-th backward difference / k^i
            new.append((new[i] - factors[i]) / (nodes[j] - nodes[j - 1]))
        factors = new
    d = at - nodes[-1]
    # F(s + d) ~ sum_{i=0..m} F^(i) d^i / i!
    return sum(f * (d**i / math.factorial(i)) for i, f in enumerate(factors))


class StepForecaster:
    """An `EpsFn` that calls ``eps_fn`` on the steps of
    [`compute_mask`][reference.accelerate_method.schedule.compute_mask] only.

    Between full computations it forecasts the output from the last ``order + 1`` cached ones
    (fewer while the cache fills), as a function of the timestep ``t``. ``method``: ``"newton"``
    (interpolating polynomial), ``"taylorseer"`` (the paper's finite-difference Taylor series) or
    ``"reuse"`` (the last output, i.e. order 0). ``full_calls`` counts network evaluations.
    """

    def __init__(
        self,
        eps_fn: EpsFn,
        interval: int,
        *,
        order: int = 1,
        warmup: int = 1,
        method: str = "newton",
    ) -> None:
        check_schedule(interval, warmup, order)
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
        self.eps_fn, self.interval, self.warmup = eps_fn, interval, warmup
        self.order = 0 if method == "reuse" else order
        self.method = method
        self.step = 0
        self.full_calls = 0
        self.nodes: list[float] = []
        self.values: list[torch.Tensor] = []

    def is_full_step(self, i: int) -> bool:
        return is_full_step(i, self.interval, self.warmup)

    def __call__(self, x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        i, self.step = self.step, self.step + 1
        at = float(t.reshape(-1)[0])
        if self.is_full_step(i):
            out = self.eps_fn(x_t, t, labels)
            self.full_calls += 1
            self.nodes = [*self.nodes, at][-(self.order + 1) :]
            self.values = [*self.values, out][-(self.order + 1) :]
            return out
        forecast = taylorseer_forecast if self.method == "taylorseer" else newton_forecast
        return forecast(self.nodes, self.values, at)


@dataclass(frozen=True)
class StepForecastConfig:
    """Full computation every ``interval`` steps after ``warmup`` full ones; forecasts of
    polynomial ``order`` in between by ``method`` (``newton``, ``taylorseer`` or ``reuse``)."""

    interval: int = 2
    order: int = 1
    warmup: int = 1
    method: str = "newton"


def apply_step_forecasting(
    model: nn.Module | Callable[..., torch.Tensor], config: StepForecastConfig
) -> StepForecaster:
    """A fresh [`StepForecaster`][reference.accelerate_method.forecast.StepForecaster] (one per
    sampling run) around a diffusers ``UNet2DModel`` / DiT or any ``EpsFn``:

        eps = apply_step_forecasting(unet, StepForecastConfig(interval=2, order=2, warmup=2))
        x0 = sample(eps, zoo.teacher_scheduler(), noise, steps=50, labels=labels)
    """
    eps_fn = model_eps_fn(model) if isinstance(model, nn.Module) else model
    return StepForecaster(
        eps_fn, config.interval, order=config.order, warmup=config.warmup, method=config.method
    )


def forecasting_eps_fn(model: nn.Module, interval: int, **kwargs: object) -> StepForecaster:
    """``apply_step_forecasting(model, StepForecastConfig(interval, **kwargs))``."""
    return apply_step_forecasting(model, StepForecastConfig(interval, **kwargs))  # type: ignore[arg-type]
