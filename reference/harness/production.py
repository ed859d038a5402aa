"""The public shape of every inference-time technique on diffusers' production classes.

Idea
====
diffusers' own hooks share one shape: a frozen ``XConfig`` and ``apply_x(module, config)``
(``apply_first_block_cache``, ``apply_taylorseer_cache``, ...). Every reference technique that
acts at inference time offers the same shape, so an engineer with a Stable Diffusion, DiT, PixArt,
SD3 or Flux model changes one call:

.. code-block:: python

    handle = apply_deepcache(pipe.unet, DeepCacheConfig(interval=3))
    ...                     # sample as usual
    handle.remove()         # the original model, bit for bit

This module holds the parts they share:

* `denoiser` finds the network inside a pipeline (``pipe.unet`` or ``pipe.transformer``), so
  ``apply_x(pipe, config)`` and ``apply_x(pipe.unet, config)`` are the same call;
* `require` refuses a class a technique does not support, in one line naming the class and the
  supported ones, *before* anything is changed (`UnsupportedModel`, a ``TypeError``);
* `Applied` is the handle every ``apply_x`` returns: ``remove()`` undoes it, and it is also a
  context manager that removes on exit;
* `RunHandle` is the `Applied` of a technique that keeps state across the steps of one sampling
  run (caching, forecasting): ``reset()``, an automatic reset when the timestep goes *up* (a
  sampler walks the timesteps down, so a larger one starts a new run), and live counters;
  `timestep_reader` reads the timestep of a call, `refuse_kwargs` refuses arguments a technique
  cannot serve.

Pitfalls
========
* Supported classes are named by class name, not imported: importing every diffusers model class
  to test ``isinstance`` costs seconds, and a subclass of a supported class is not necessarily
  laid out like it.
* ``remove()`` must restore the original modules, not copies: a caller may hold references.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


class UnsupportedModel(TypeError):
    """A technique was applied to a model class it does not support (message: one line)."""


def denoiser(target: Any) -> nn.Module:
    """The denoising network of ``target``: itself if it is a module, else the pipeline's
    ``unet`` or ``transformer``."""
    if isinstance(target, nn.Module):
        return target
    for name in ("unet", "transformer"):
        module = getattr(target, name, None)
        if isinstance(module, nn.Module):
            return module
    raise UnsupportedModel(
        f"{type(target).__name__} is neither a model nor a pipeline with a unet or transformer"
    )


def require(model: nn.Module, supported: Iterable[str], technique: str) -> str:
    """``model``'s class name if it is in ``supported``; else `UnsupportedModel`, one line."""
    names = tuple(supported)
    name = type(model).__name__
    if name not in names:
        raise UnsupportedModel(
            f"{technique} does not support {name}; supported: {', '.join(names)}"
        )
    return name


def check_config(config: object, expected: type, technique: str) -> None:
    """``TypeError``, one line, unless ``config`` is an ``expected`` (before any change)."""
    if not isinstance(config, expected):
        raise TypeError(f"{technique}: expected a {expected.__name__}, got {type(config).__name__}")


_HELD: weakref.WeakKeyDictionary[nn.Module, set[str]] = weakref.WeakKeyDictionary()
"""The techniques that hold state on a model now (`refuse_twice`, `hold`)."""


def refuse_twice(model: nn.Module, technique: str) -> None:
    """``ValueError``, one line, if ``technique`` is already applied to ``model``: two handles
    would wrap the same forwards and remove each other's."""
    if technique in _HELD.get(model, ()):
        raise ValueError(f"{technique}: already applied to this model; remove() the first handle")


def checked_denoiser(
    target: Any, supported: Iterable[str], config: object, expected: type, technique: str
) -> nn.Module:
    """The network ``technique`` is about to change: `denoiser` of ``target``, checked before
    anything changes (`require`, `check_config`, `refuse_twice`)."""
    model = denoiser(target)
    require(model, supported, technique)
    check_config(config, expected, technique)
    refuse_twice(model, technique)
    return model


def hold(applied: Applied, model: nn.Module, technique: str) -> None:
    """Mark ``technique`` applied to ``model`` until ``applied`` is removed."""
    _HELD.setdefault(model, set()).add(technique)
    applied.on_remove(lambda: _HELD.get(model, set()).discard(technique))


@dataclass
class Applied:
    """What ``apply_x`` returns: the changed model, and how to undo the change."""

    model: nn.Module
    technique: str
    _undo: list[Callable[[], None]] = field(default_factory=list, repr=False)
    state: dict[str, Any] = field(default_factory=dict, repr=False)
    removed: bool = False

    def on_remove(self, undo: Callable[[], None]) -> None:
        """Register one undo step; steps run in reverse order of registration."""
        self._undo.append(undo)

    def remove(self) -> nn.Module:
        """Undo the technique (idempotent) and return the original model."""
        while self._undo:
            self._undo.pop()()
        self.removed = True
        return self.model

    def __enter__(self) -> Applied:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def replace_forward(applied: Applied, module: nn.Module, forward: Callable[..., Any]) -> None:
    """Give ``module`` an instance-level ``forward``; `Applied.remove` restores the class one."""
    had = "forward" in vars(module)
    previous = vars(module).get("forward")
    module.forward = forward  # type: ignore[method-assign]

    def undo() -> None:
        if had:
            module.forward = previous  # type: ignore[method-assign]
        else:
            del module.forward

    applied.on_remove(undo)


def replace_child(applied: Applied, parent: nn.Module, name: str, child: nn.Module) -> None:
    """Swap ``parent.<name>`` for ``child``; `Applied.remove` puts the original back."""
    original = getattr(parent, name)
    setattr(parent, name, child)
    applied.on_remove(lambda: setattr(parent, name, original))


def _nothing() -> None:
    return None


@dataclass
class RunHandle(Applied):
    """`Applied` for a technique whose state belongs to one sampling run.

    ``reset()`` forgets it (``_forget``), as does ``remove()``; ``state`` counts ``calls`` and
    ``full_calls`` since the last reset, keeps ``computed`` (whether the latest call ran the
    whole network) and ``last_timestep``.
    """

    _forget: Callable[[], None] = field(default=_nothing, repr=False)

    def __post_init__(self) -> None:
        self.state.update(calls=0, full_calls=0, computed=None, last_timestep=None)
        self.on_remove(self._forget)

    def reset(self) -> None:
        """Forget the kept state: the next call is call 0 of a new run."""
        self._forget()
        self.state.update(calls=0, full_calls=0, computed=None, last_timestep=None)

    def begin_call(self, timestep: float | None) -> int:
        """Count one call at ``timestep`` (resetting first if it went up); its index in the run."""
        last = self.state["last_timestep"]
        if timestep is not None and last is not None and timestep > last:
            self.reset()
        self.state["last_timestep"] = timestep
        self.state["calls"] += 1
        return self.state["calls"] - 1

    def end_call(self, computed: bool) -> None:
        """Record whether the call ran the whole network."""
        self.state["computed"] = computed
        self.state["full_calls"] += int(computed)


def timestep_reader(model: nn.Module) -> Callable[[tuple[Any, ...], dict[str, Any]], float | None]:
    """A function reading the timestep of a ``model(...)`` call from its arguments.

    Every production class names it ``timestep``, at a position that differs per class (second
    for the U-Nets and DiT, third for PixArt, fourth for SD3 and Flux). The first element is read:
    a batch (the two halves of classifier-free guidance) shares one timestep.
    """
    names = list(inspect.signature(type(model).forward).parameters)[1:]  # without self
    position = names.index("timestep") if "timestep" in names else None

    def read(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float | None:
        value = kwargs.get("timestep")
        if value is None and position is not None and len(args) > position:
            value = args[position]
        if value is None:
            return None
        return float(torch.as_tensor(value).reshape(-1)[0])

    return read


def refuse_kwargs(
    kwargs: dict[str, Any], names: Iterable[str], technique: str, what: str = ""
) -> None:
    """``ValueError``, one line, naming the first of ``names`` that a call passes (not ``None``):
    an argument the technique cannot serve (a ControlNet residual, a layer skip); ``what`` says
    what such an argument is, in the message."""
    for name in names:
        if kwargs.get(name) is not None:
            raise ValueError(f"{technique}: {name}{what} is not supported")
