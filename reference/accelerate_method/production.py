"""Step forecasting on diffusers' production classes (all six), in one call.

.. code-block:: python

    handle = apply_step_forecasting(pipe, ForecastConfig(interval=3, order=1, warmup=2))
    images = pipe(...).images     # the network runs on 2 + every 3rd call; the rest is forecast
    handle.remove()               # the original model, bit for bit

Idea
====
The denoiser output ``eps(x_t, t)`` changes slowly along a sampling trajectory. Call ``i`` of a
run (0-based) runs the network when

    i < w  or  (i - w) mod k = 0        (w = warmup, k = interval)                  (1)

([`is_full_step`][reference.accelerate_method.schedule.is_full_step]) and keeps its output with
its timestep. Every other call returns, without running the network, the polynomial of degree
``m = order`` through the last ``m + 1`` kept outputs, as a function of the timestep
([`newton_forecast`][reference.accelerate_method.forecast.newton_forecast]):

    eps(t) ~ f[t_0] + f[t_0, t_1] (t - t_0) + ... + f[t_0..t_m] (t - t_0)...(t - t_{m-1})   (2)

or TaylorSeer's finite-difference Taylor series
([`taylorseer_forecast`][reference.accelerate_method.forecast.taylorseer_forecast]), or the last
output (``method="reuse"``, order 0). ``k = 1`` runs the network at every call: exactly the plain
model. The whole model output is forecast, so one wrapper serves every class: ``UNet2DModel``,
``UNet2DConditionModel``, ``DiTTransformer2DModel``, ``PixArtTransformer2DModel``,
``SD3Transformer2DModel`` and ``FluxTransformer2DModel``.

diffusers' ``apply_taylorseer_cache`` with the root module as its only cache identifier
(``cache_identifiers=[""]``) forecasts the same output by the same series over call indices; with
``cache_interval=2`` and ``disable_cache_before_step=w + 1`` it runs the network at the calls of
(1), and the tests check agreement. At other intervals its schedule differs from (1): after its
warm-up it forecasts one call, then runs the network every ``k`` calls, so (1) has no
counterpart there.

Sources
=======
* Liu et al., "From Reusing to Forecasting: Accelerating Diffusion Models with TaylorSeers",
  ICCV 2025, arXiv:2503.06923 (finite-difference Taylor forecasts of features between full
  steps).

Pitfalls
========
* State: the kept outputs belong to one sampling run. `ForecastHandle` resets itself when the
  timestep goes up (samplers walk it downwards, so a larger one starts a new run) and offers
  ``reset()``.
* One call per denoising step: diffusers' pipelines batch classifier-free guidance into one
  call; a loop calling the network twice per step would mix the two halves' histories.
* Two calls at the same timestep (Heun-type samplers evaluate twice at one time): the later full
  output replaces the earlier one, so the nodes of (2) stay distinct.
* A call with another batch or latent size than the kept outputs runs the network and starts
  the history afresh.
* The forecast is returned in the container of the last full output (``(sample,)`` or the
  class's output object), so a run must not change ``return_dict`` midway.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reference.harness import production as adapters

from .forecast import METHODS, newton_forecast, taylorseer_forecast
from .schedule import check_schedule, is_full_step

CLASSES = (
    "UNet2DModel",
    "UNet2DConditionModel",
    "DiTTransformer2DModel",
    "PixArtTransformer2DModel",
    "SD3Transformer2DModel",
    "FluxTransformer2DModel",
)
"""Every production class: the forecast acts on the model output, whatever is inside."""


@dataclass(frozen=True)
class ForecastConfig:
    """Network at the first ``warmup`` calls and every ``interval``-th after, (1); forecasts of
    polynomial ``order`` by ``method`` (``newton``, ``taylorseer`` or ``reuse``) in between, (2)."""

    interval: int = 3
    order: int = 1
    warmup: int = 2
    method: str = "newton"

    def __post_init__(self) -> None:
        for name in ("interval", "order", "warmup"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"step forecasting: {name} must be an integer, got {value!r}")
        check_schedule(self.interval, self.warmup, self.order)
        if self.method not in METHODS:
            raise ValueError(f"step forecasting: method must be one of {', '.join(METHODS)}")


class _History:
    """The kept full outputs of this run: their timesteps (nodes) and values, newest last."""

    def __init__(self, order: int) -> None:
        self.size = order + 1
        self.clear()

    def clear(self) -> None:
        self.nodes: list[float] = []
        self.values: list[torch.Tensor] = []
        self.container: type | None = None
        self.input_shape: tuple[int, ...] | None = None

    def keep(self, at: float, value: torch.Tensor, container: type, shape: tuple[int, ...]) -> None:
        if shape != self.input_shape:  # another batch or latent size: start the history afresh
            self.clear()
            self.input_shape = shape
        if self.nodes and self.nodes[-1] == at:  # same timestep again: replace, keep nodes distinct
            self.nodes, self.values = self.nodes[:-1], self.values[:-1]
        self.nodes = [*self.nodes, at][-self.size :]
        self.values = [*self.values, value][-self.size :]
        self.container = container


class ForecastHandle(adapters.RunHandle):
    """`reference.harness.production.RunHandle` of step forecasting: ``reset()`` forgets the kept
    outputs; ``state["computed"]`` says whether the latest call ran the network."""


def _input_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
    for name in ("sample", "hidden_states"):  # the U-Nets' and the transformers' latent input
        if name in kwargs:
            return kwargs[name]
    return args[0]


def _sample_of(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out.sample


def _wrap(value: torch.Tensor, container: type | None) -> Any:
    return (value,) if container in (None, tuple) else container(sample=value)  # type: ignore[misc]


def apply_step_forecasting(target: Any, config: ForecastConfig) -> ForecastHandle:
    """Step forecasting on any of `CLASSES`, or a pipeline holding one (``pipe.unet`` or
    ``pipe.transformer``). Returns a `ForecastHandle` (``remove()``, ``reset()``, ``state``)."""
    model = adapters.checked_denoiser(target, CLASSES, config, ForecastConfig, "step forecasting")
    order = 0 if config.method == "reuse" else config.order
    history = _History(order)
    handle = ForecastHandle(model, "step forecasting", _forget=history.clear)
    adapters.replace_forward(handle, model, _forecasting_forward(handle, history, model, config))
    adapters.hold(handle, model, "step forecasting")
    return handle


def _forecasting_forward(
    handle: ForecastHandle, history: _History, model: nn.Module, config: ForecastConfig
) -> Callable[..., Any]:
    original = model.forward
    read_timestep = adapters.timestep_reader(model)
    forecast = taylorseer_forecast if config.method == "taylorseer" else newton_forecast

    def forward(*args: Any, **kwargs: Any) -> Any:
        at = read_timestep(args, kwargs)
        i = handle.begin_call(at)  # a timestep that went up resets: a new sampling run
        shape = tuple(_input_of(args, kwargs).shape)
        full = at is None or shape != history.input_shape or not history.values
        full = full or is_full_step(i, config.interval, config.warmup)  # (1)
        handle.end_call(full)
        if not full:
            return _wrap(forecast(history.nodes, history.values, at), history.container)  # (2)
        out = original(*args, **kwargs)
        if at is not None:
            history.keep(at, _sample_of(out), type(out), shape)
        return out

    return forward
