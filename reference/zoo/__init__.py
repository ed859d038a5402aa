"""The tiny model zoo: every reference implementation runs on these models.

All models are trained on the 16x16 digits of `reference.data` by
``scripts/train_zoo.py`` on a CPU in minutes; their weights (safetensors, float32) and a
manifest (configuration, seed, steps, batch, learning rate, final loss, training time, command,
sha256 of every file, library versions) are committed under ``reference/zoo/``. Loading never
touches the network; a missing or corrupted file raises `ZooError` naming the file and
the command that rebuilds it.

==================  ==============================  ==========================================
name                class                           role
==================  ==============================  ==========================================
``teacher``         ``diffusers.UNet2DModel``       pixel-space class-conditional denoiser
``dit``             ``diffusers.DiTTransformer2DModel``  the same task with a transformer
``classifier``      `DigitsClassifier`      clean classifier, FDD features
``noisy_classifier``  `NoisyDigitsClassifier`  ``p(y | x_t, t)``, guidance
``vae``             ``diffusers.AutoencoderKL``     16x16x1 <-> 4x4x4 latents
``latent_teacher``  ``diffusers.UNet2DModel``       class-conditional denoiser on latents
==================  ==============================  ==========================================

Conventions shared by the diffusion models: epsilon prediction, the 1000-step cosine schedule
of `teacher_scheduler_config`, labels 0-9 plus the null class 10 (trained with label
dropout, so one set of weights serves conditional, unconditional and classifier-free guided
sampling). Every loader returns a fresh module in ``eval()`` mode with ``requires_grad`` left
on, so techniques may modify or fine-tune it without affecting other callers.

Technique modules add their students (distilled, pruned, MoE ...) through
the registry (`reference.registry.zoo_extension_modules`); see
`reference.zoo.specs` for how.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from .specs import BUILTIN_MODELS, SCHEDULER_CONFIG, SPECS, ZooSpec, load_extensions
from .store import ZOO_DIR, ZooError, read_manifest, rebuild_command, verified_weights

__all__ = [
    "BUILTIN_MODELS",
    "LATENT_SCHEDULER_OVERRIDES",
    "SPECS",
    "ZOO_DIR",
    "ZooError",
    "ZooSpec",
    "decode_latents",
    "encode_images",
    "latent_scheduler",
    "load",
    "load_classifier",
    "load_dit",
    "load_extensions",
    "load_latent_teacher",
    "load_noisy_classifier",
    "load_teacher",
    "load_vae",
    "manifest_entry",
    "model_names",
    "teacher_scheduler",
    "teacher_scheduler_config",
    "weight_files",
]


def model_names(include_extensions: bool = True) -> list[str]:
    """Names of the zoo models in training order: built-ins, then technique students."""
    return list(load_extensions()) if include_extensions else list(BUILTIN_MODELS)


def manifest_entry(name: str, zoo_dir: Path | None = None) -> dict[str, Any]:
    """The manifest record of ``name`` (configuration, training facts, sha256, extras)."""
    entry = read_manifest(zoo_dir)["models"].get(name)
    if entry is None:
        raise ZooError(f"zoo model {name!r} has no manifest entry; run: {rebuild_command(name)}")
    return entry


def weight_files(*names: str, zoo_dir: Path | None = None) -> list[Path]:
    """The weight files of zoo models ``names`` (for ``provenance``: results go stale when the
    models they measured are retrained), e.g. ``weight_files("teacher", "classifier")``."""
    files = []
    for name in names:
        files += [
            (zoo_dir or ZOO_DIR) / "weights" / f for f in manifest_entry(name, zoo_dir)["weights"]
        ]
    return files


def load(name: str, zoo_dir: Path | None = None) -> nn.Module:
    """Build zoo model ``name`` from its manifest configuration and load its verified weights."""
    from .store import load_state_dict

    spec = SPECS.get(name) or load_extensions().get(name)
    if spec is None:
        raise ZooError(f"unknown zoo model {name!r}; known: {', '.join(SPECS)}")
    entry, path = verified_weights(name, zoo_dir)
    model = spec.build_model(entry["config"])
    try:
        model.load_state_dict(load_state_dict(path))
    except (RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise ZooError(
            f"{path}: weights do not fit the configuration ({first}); "
            f"rebuild with: {rebuild_command(name)}"
        ) from None
    return model.eval()


def load_teacher(zoo_dir: Path | None = None) -> nn.Module:
    """The pixel-space ``UNet2DModel`` (16x16x1, labels 0-9 + null 10), eval mode."""
    return load("teacher", zoo_dir)


def load_dit(zoo_dir: Path | None = None) -> nn.Module:
    """The pixel-space ``DiTTransformer2DModel`` (patch 2, 64 tokens), eval mode."""
    return load("dit", zoo_dir)


def load_classifier(zoo_dir: Path | None = None) -> nn.Module:
    """The clean `DigitsClassifier` (``features(x)``, ``forward(x)``), eval mode."""
    return load("classifier", zoo_dir)


def load_noisy_classifier(zoo_dir: Path | None = None) -> nn.Module:
    """The time-conditioned `NoisyDigitsClassifier` ``(x_t, t) -> logits``."""
    return load("noisy_classifier", zoo_dir)


def load_vae(zoo_dir: Path | None = None) -> nn.Module:
    """The ``AutoencoderKL``; ``vae.config.scaling_factor`` is the measured latent scale."""
    return load("vae", zoo_dir)


def load_latent_teacher(zoo_dir: Path | None = None) -> nn.Module:
    """The latent-space ``UNet2DModel`` (4x4x4 scaled latents, labels 0-9 + null 10)."""
    return load("latent_teacher", zoo_dir)


def teacher_scheduler_config() -> dict[str, Any]:
    """``DDPMScheduler`` arguments of the zoo's noise schedule (1000 steps, cosine, epsilon).

    Every zoo diffusion model (teacher, dit, latent_teacher) was trained with this schedule;
    pass it to any diffusers scheduler's ``from_config`` (unknown keys are ignored).
    """
    return dict(SCHEDULER_CONFIG)


def teacher_scheduler(cls: type | str = "DDIMScheduler", **overrides: Any) -> Any:
    """A fresh diffusers scheduler of class ``cls`` (object or name) on the zoo's schedule.

    ``teacher_scheduler()`` is DDIM (eta = 0 by default in ``step``);
    ``teacher_scheduler("DPMSolverMultistepScheduler", solver_order=2)`` etc.
    """
    import diffusers

    klass = getattr(diffusers, cls) if isinstance(cls, str) else cls
    return klass.from_config({**SCHEDULER_CONFIG, **overrides})


LATENT_SCHEDULER_OVERRIDES: dict[str, Any] = {"clip_sample": False}
"""What differs when sampling latents: no clipping of the predicted ``x_0`` to [-1, 1]."""


def latent_scheduler(cls: type | str = "DDIMScheduler", **overrides: Any) -> Any:
    """A fresh scheduler for ``latent_teacher``: the zoo schedule with ``clip_sample=False``.

    Pitfall: the pixel models' schedule clips the predicted ``x_0`` to [-1, 1] (right for images,
    which live there). Scaled latents have unit variance and routinely exceed 1; clipping them at
    every step destroys the samples (the decoded "digits" become blurs of the wrong class).
    """
    return teacher_scheduler(cls, **{**LATENT_SCHEDULER_OVERRIDES, **overrides})


@torch.no_grad()
def encode_images(vae: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Images [-1, 1] ``[N,1,16,16]`` -> scaled latents ``[N,4,4,4]`` (posterior mean x scale)."""
    return vae.encode(x).latent_dist.mean * vae.config.scaling_factor


@torch.no_grad()
def decode_latents(vae: nn.Module, z: torch.Tensor) -> torch.Tensor:
    """Scaled latents ``[N,4,4,4]`` -> images ``[N,1,16,16]`` clamped to [-1, 1]."""
    return vae.decode(z / vae.config.scaling_factor).sample.clamp(-1.0, 1.0)
