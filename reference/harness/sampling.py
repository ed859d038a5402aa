"""A small, readable sampling loop shared by every baseline, technique and control.

Idea
====
A diffusion sampler alternates two things: evaluate the denoiser on the current noisy sample,
then let a *scheduler* (DDPM, DDIM, DPM-Solver, ...) turn that prediction into the next, less
noisy sample. Keeping the loop in one place means a technique and its baseline differ only in
what the technique changes, and "same sampler at the same NFE" controls are one call away.

The denoiser is any callable ``eps_fn(x_t, t, labels) -> eps`` (an `EpsFn`):

* ``x_t``: the current sample ``[N, C, H, W]`` (already passed through
  ``scheduler.scale_model_input``);
* ``t``: a 1-D tensor ``[N]`` with the scheduler's timestep for every row;
* ``labels``: int64 ``[N]``, digits 0-9 or `NULL_CLASS` (10) for
  "no label". It is never ``None``: unconditional sampling passes the null class everywhere.

It returns the predicted noise epsilon (the zoo's diffusion models are epsilon-prediction models,
Ho et al. 2020, arXiv:2006.11239). `model_eps_fn` wraps a diffusers ``UNet2DModel`` or
``DiTTransformer2DModel``.

Classifier-free guidance (Ho & Salimans 2022, arXiv:2207.12598) is built in:
``eps = eps_uncond + s * (eps_cond - eps_uncond)`` with ``s = guidance_scale``; the conditional and
the unconditional rows are evaluated in **one** batched call, so it costs one call per step but
twice the rows (see `NFECounter`). ``guidance_scale=1`` means plain conditional sampling.

Pitfalls
========
* The loop runs under ``torch.no_grad()``; a denoiser that needs gradients (classifier guidance)
  must open ``torch.enable_grad()`` itself.
* Schedulers keep state (multistep solvers remember earlier outputs): build a fresh scheduler per
  call (`reference.zoo.teacher_scheduler` does), never share one between two loops.
* Fix the initial noise with `make_noise` so that a technique and its baseline start from
  identical ``x_T``; per-sample deviation metrics (MSE/PSNR) are only meaningful then.

In production the same loop is ``diffusers.DiffusionPipeline.__call__`` (e.g. ``DDIMPipeline``,
``DiTPipeline``); the schedulers used here are the diffusers ones.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

import torch

from reference.data import NULL_CLASS

EpsFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""``eps_fn(x_t, t, labels) -> eps``: the denoiser protocol of `sample`."""

IMAGE_SHAPE = (1, 16, 16)
"""Shape of one pixel-space sample of the zoo (channels, height, width)."""
LATENT_SHAPE = (4, 4, 4)
"""Shape of one latent of the zoo VAE (channels, height, width)."""


def make_noise(n: int, seed: int, shape: tuple[int, ...] = IMAGE_SHAPE) -> torch.Tensor:
    """Return ``n`` standard-normal samples of ``shape`` drawn from a generator seeded by ``seed``.

    The same ``(n, seed, shape)`` always gives the same tensor, and the first ``k`` rows of
    ``make_noise(n, seed)`` equal ``make_noise(k, seed)``, so sample sets nest.
    """
    gen = torch.Generator().manual_seed(seed)
    return torch.randn((n, *shape), generator=gen, dtype=torch.float32)


def class_labels(n: int, num_classes: int = 10) -> torch.Tensor:
    """Labels ``0, 1, ..., 9, 0, 1, ...`` of length ``n`` (balanced classes)."""
    return torch.arange(n, dtype=torch.long) % num_classes


def model_eps_fn(model: torch.nn.Module) -> EpsFn:
    """Wrap a diffusers ``UNet2DModel`` or ``DiTTransformer2DModel`` as an `EpsFn`."""

    def eps_fn(x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return model(x_t, t, class_labels=labels, return_dict=False)[0]

    return eps_fn


ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)


def frozen(model: ModuleT) -> ModuleT:
    """``model`` in eval mode with every parameter's ``requires_grad`` off (a teacher, a
    classifier or a network under measurement); the same module, returned for chaining."""
    model.requires_grad_(False)
    return model.eval()


@dataclass
class NFECounter:
    """An `EpsFn` wrapper that counts how often the denoiser is called.

    ``nfe`` counts calls (one per sampler step for DDIM, two for Heun-type steps; a classifier-free
    guided step is one batched call). ``rows`` counts evaluated batch rows, so CFG shows up as
    twice the rows of unguided sampling. ``calls`` is an alias of ``nfe``.
    """

    eps_fn: EpsFn
    nfe: int = 0
    rows: int = 0

    def __call__(self, x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        self.rows += int(x_t.shape[0])
        return self.eps_fn(x_t, t, labels)

    @property
    def calls(self) -> int:
        return self.nfe


def count_nfe(eps_fn: EpsFn) -> NFECounter:
    """Return a counting wrapper around ``eps_fn``; read ``.nfe`` / ``.rows`` after sampling."""
    return NFECounter(eps_fn)


def guided_eps(
    eps_fn: EpsFn,
    x_t: torch.Tensor,
    t: torch.Tensor,
    labels: torch.Tensor,
    guidance_scale: float,
) -> torch.Tensor:
    """One classifier-free guided prediction; plain ``eps_fn`` when ``guidance_scale == 1``."""
    if guidance_scale == 1.0:
        return eps_fn(x_t, t, labels)
    null = torch.full_like(labels, NULL_CLASS)
    eps = eps_fn(torch.cat([x_t, x_t]), torch.cat([t, t]), torch.cat([labels, null]))
    eps_cond, eps_uncond = eps.chunk(2)
    return eps_uncond + guidance_scale * (eps_cond - eps_uncond)


def _step_kwargs(scheduler: object, generator: torch.Generator | None) -> dict[str, object]:
    params = inspect.signature(scheduler.step).parameters  # type: ignore[attr-defined]
    kwargs: dict[str, object] = {}
    if "generator" in params and generator is not None:
        kwargs["generator"] = generator
    return kwargs


@torch.no_grad()
def sample(
    eps_fn: EpsFn,
    scheduler: object,
    noise: torch.Tensor,
    *,
    steps: int = 50,
    labels: torch.Tensor | None = None,
    guidance_scale: float = 1.0,
    seed: int = 0,
    clamp: bool = True,
    callback: Callable[[int, torch.Tensor, torch.Tensor], None] | None = None,
) -> torch.Tensor:
    """Run a diffusers ``scheduler`` for ``steps`` steps from ``noise`` with denoiser ``eps_fn``.

    Args:
        eps_fn: the denoiser, see `EpsFn` (wrap it in `count_nfe` to count calls).
        scheduler: a **fresh** diffusers scheduler (``set_timesteps`` is called here).
        noise: initial ``x_T`` from `make_noise`; scaled by ``init_noise_sigma``.
        steps: number of scheduler steps (``num_inference_steps``).
        labels: int64 ``[N]`` class labels; ``None`` = unconditional (null class everywhere).
        guidance_scale: classifier-free guidance scale ``s`` (1 = none); needs ``labels``.
        seed: seeds the generator of stochastic schedulers (DDPM, ancestral samplers).
        clamp: clamp the result to [-1, 1] (pixel space); pass ``False`` for latents.
        callback: optional ``callback(i, t, x)`` after each step (for trajectories, caching stats).

    Returns:
        ``x_0`` with the shape of ``noise``.
    """
    n = noise.shape[0]
    if labels is None:
        if guidance_scale != 1.0:
            raise ValueError("sample: guidance_scale != 1 needs class labels")
        labels = torch.full((n,), NULL_CLASS, dtype=torch.long)
    if labels.shape != (n,):
        raise ValueError(f"sample: labels must have shape ({n},), got {tuple(labels.shape)}")
    scheduler.set_timesteps(steps)  # type: ignore[attr-defined]
    generator = torch.Generator().manual_seed(seed)
    kwargs = _step_kwargs(scheduler, generator)
    x = noise * scheduler.init_noise_sigma  # type: ignore[attr-defined]
    for i, t in enumerate(scheduler.timesteps):  # type: ignore[attr-defined]
        x_in = scheduler.scale_model_input(x, t)  # type: ignore[attr-defined]
        t_batch = t.expand(n) if t.dim() == 0 else t
        eps = guided_eps(eps_fn, x_in, t_batch, labels, guidance_scale)
        x = scheduler.step(eps, t, x, **kwargs).prev_sample  # type: ignore[attr-defined]
        if callback is not None:
            callback(i, t, x)
    return x.clamp(-1.0, 1.0) if clamp else x


@lru_cache(maxsize=8)
def _teacher_samples(
    n: int, steps: int, guidance_scale: float, seed: int, scheduler: str, conditional: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    from reference import zoo

    labels = class_labels(n) if conditional else torch.full((n,), NULL_CLASS, dtype=torch.long)
    x = sample(
        model_eps_fn(zoo.load_teacher()),
        zoo.teacher_scheduler(scheduler),
        make_noise(n, seed),
        steps=steps,
        labels=labels if conditional else None,
        guidance_scale=guidance_scale,
        seed=seed,
    )
    return x, labels


def teacher_samples(
    n: int,
    steps: int = 50,
    *,
    guidance_scale: float = 1.0,
    seed: int = 0,
    scheduler: str = "DDIMScheduler",
    conditional: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The standard baseline: ``(samples, labels)`` of the zoo teacher, cached in-process.

    ``n`` samples from ``make_noise(n, seed)`` with balanced labels `class_labels` (or the
    null class when ``conditional=False``), ``steps`` steps of ``scheduler`` (a diffusers class
    name) and classifier-free guidance ``guidance_scale``. Returns copies.
    """
    x, labels = _teacher_samples(n, steps, float(guidance_scale), seed, scheduler, conditional)
    return x.clone(), labels.clone()
