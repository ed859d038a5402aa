"""What a stack runs: the zoo models (loaded once, transformed copies built once), the samplers,
and the `Pipeline` whose five slots `reference.stacking.compose` fills.

A `Pipeline` evaluates ``sampler(wrappers(caching(network(model))))`` from given noise:

    model     which network (teacher, pruned teacher, distilled or consistency student)
    network   transforms of that module: low rank -> fusion -> compile, each on a copy
    caching   how the module becomes a denoiser call (DeepCache, or the plain forward)
    wrappers  guidance, then forecasting, around that call
    sampler   the solver and its steps (DDIM-50 by default; a student brings its own)

Samplers. The teacher's samplers solve the harness's clipped ODE (`reference.harness.ode`,
eqs. (1)-(3) there): every sampler approximates one equation, so DDIM converges to the same
solution as DPM-Solver++ as it takes more steps, and quality ratios against DDIM-50 are not
biased by a baseline that drifts (diffusers' DDIM with ``clip_sample`` keeps the raw predicted
noise in its update and drifts away). A distilled student runs on its own DDIM grid, the
consistency model on its multistep consistency sampler; both are part of those techniques.

Pitfall: stateful pieces (DeepCache's cache, the forecaster's history, a multistep scheduler)
are built fresh for every run, so two runs never share state.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

if TYPE_CHECKING:
    from .settings import Config as Settings

EpsFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


# --------------------------------------------------------------------------- models


class Models:
    """The zoo models a study needs, loaded once, and their transformed copies, built once."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._base: dict[str, nn.Module] = {}
        self._built: dict[tuple[str, ...], nn.Module] = {}
        self._extra: dict[str, Any] = {}
        self.compile_seconds = 0.0

    def base(self, name: str) -> nn.Module:
        """``teacher``, ``pruned_teacher``, ``student<k>`` or ``consistency``, frozen."""
        if name not in self._base:
            self._base[name] = _load(name).requires_grad_(False).eval()
        return self._base[name]

    def get(
        self, name: str, transforms: tuple[str, ...], calibrate: Callable[[nn.Module], Any]
    ) -> nn.Module:
        """``name`` with ``transforms`` applied in order, each on a copy of the previous."""
        key = (name, *transforms)
        if key not in self._built:
            model = (
                self.base(name) if not transforms else self.get(name, transforms[:-1], calibrate)
            )
            if transforms:
                model = self._transform(model, transforms[-1], calibrate)
            self._built[key] = model
        return self._built[key]

    def _transform(self, model: nn.Module, how: str, calibrate: Callable) -> nn.Module:
        if how == "lowrank":
            return _low_rank(model, self.settings.lowrank_budget, calibrate)
        out = copy.deepcopy(model)
        if how == "fusion":
            from reference.conv_fusion import fuse_unet_attention

            fuse_unet_attention(out)
            return out
        from .compile import compile_blocks

        return compile_blocks(out, self.settings.compile_backend)

    def vae(self) -> nn.Module:
        from reference import zoo

        return self._once("vae", lambda: zoo.load_vae().requires_grad_(False).eval())

    def classifier(self) -> nn.Module:
        from reference import zoo

        return self._once("clf", lambda: zoo.load_noisy_classifier().requires_grad_(False).eval())

    def alphas_cumprod(self) -> torch.Tensor:
        from reference import zoo

        return self._once("acp", lambda: zoo.teacher_scheduler().alphas_cumprod)

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._extra:
            self._extra[key] = make()
        return self._extra[key]


def _load(name: str) -> nn.Module:
    from reference import zoo

    if name.startswith("student"):
        from reference.timestep_distillation import load_student

        return load_student(int(name.removeprefix("student")))
    if name == "consistency":
        from reference.consistency_latent_diffusion import load_consistency_model

        return load_consistency_model()
    return zoo.load(name)


def unet_conv_targets(unet: nn.Module) -> tuple[str, ...]:
    """The 3x3 convolutions of every ResnetBlock2D (low rank's targets on a U-Net)."""
    from diffusers.models.resnet import ResnetBlock2D

    return tuple(
        f"{name}.{conv}"
        for name, m in unet.named_modules()
        if isinstance(m, ResnetBlock2D)
        for conv in ("conv1", "conv2")
    )


def _low_rank(model: nn.Module, budget: float, calibrate: Callable) -> nn.Module:
    from reference.low_rank_inference import (
        LowRankConfig,
        apply_low_rank,
        calibrate_second_moments,
    )

    targets = unet_conv_targets(model)
    moments = calibrate_second_moments(model, targets, calibrate)
    out, _plan = apply_low_rank(model, LowRankConfig(targets, budget=budget), moments)
    return out.requires_grad_(False).eval()


# --------------------------------------------------------------------------- samplers


@dataclass(frozen=True)
class DiffusersSampler:
    """``steps`` steps of a named sampler on the clipped ODE (`reference.harness.ode.solve`)."""

    name: str
    steps: int

    def run(self, eps: EpsFn, noise: torch.Tensor, labels: torch.Tensor, seed: int, models: Models):
        from reference.harness.ode import solve

        return solve(eps, noise, sampler=self.name, steps=self.steps, labels=labels)


@dataclass(frozen=True)
class GridSampler:
    """The distilled student's own deterministic DDIM grid (`GridDDIMScheduler`)."""

    steps: int

    def run(self, eps: EpsFn, noise: torch.Tensor, labels: torch.Tensor, seed: int, models: Models):
        from reference import zoo
        from reference.harness import sample
        from reference.timestep_distillation import GridDDIMScheduler

        scheduler = GridDDIMScheduler(zoo.teacher_scheduler_config())
        return sample(eps, scheduler, noise, steps=self.steps, labels=labels)


@dataclass(frozen=True)
class ConsistencySampler:
    """Multistep consistency sampling in latent space, then the VAE decode (part of the cost)."""

    steps: int

    def run(self, eps: EpsFn, noise: torch.Tensor, labels: torch.Tensor, seed: int, models: Models):
        from reference import zoo
        from reference.consistency_latent_diffusion import consistency_sample

        z = consistency_sample(eps, noise, labels, models.alphas_cumprod(), self.steps, seed=seed)
        return zoo.decode_latents(models.vae(), z)


Sampler = DiffusersSampler | GridSampler | ConsistencySampler


def _plain_eps(model: nn.Module) -> EpsFn:
    from reference.harness import model_eps_fn

    return model_eps_fn(model)


@dataclass
class Pipeline:
    """A stack ready to run; see the module docstring for the slots."""

    members: tuple[str, ...]
    sampler: Sampler
    model_name: str = "teacher"
    space: Literal["pixel", "latent"] = "pixel"
    transforms: tuple[str, ...] = ()
    network_eps: Callable[[nn.Module], EpsFn] = _plain_eps
    wrappers: tuple[Callable[[EpsFn, Models], EpsFn], ...] = field(default_factory=tuple)

    @property
    def noise_shape(self) -> tuple[int, ...]:
        from reference.harness import IMAGE_SHAPE, LATENT_SHAPE

        return LATENT_SHAPE if self.space == "latent" else IMAGE_SHAPE

    def model(self, models: Models) -> nn.Module:
        """The final network (built and cached on first use)."""
        from reference.harness import class_labels, make_noise, model_eps_fn

        def calibrate(m: nn.Module) -> Any:
            n = models.settings.lowrank_calib_n
            noise = make_noise(n, 1_000_003, self.noise_shape)
            return self.sampler.run(model_eps_fn(m), noise, class_labels(n), 1, models)

        return models.get(self.model_name, self.transforms, calibrate)

    def run(
        self, models: Models, noise: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """Pixel samples in [-1, 1] of this stack from ``noise`` (fresh stateful parts)."""
        eps = self.network_eps(self.model(models))
        for wrap in self.wrappers:
            eps = wrap(eps, models)
        with torch.no_grad():
            return self.sampler.run(eps, noise, labels, seed, models)
