"""Zoo spec and training of the latent consistency model (through the zoo trainer).

``consistency_latent`` is distilled from ``latent_teacher`` on the ``vae``'s latents of the training
digits: online network ``theta`` and target network ``theta-`` both start as copies of the teacher
(LCM's initialisation); after every optimizer step ``theta- <- mu theta- + (1 - mu) theta``. The
target network is what is saved (``storage_dtype`` float16, loaded back into float32). Both networks
live in one [`OnlineAndTarget`][reference.consistency_latent_diffusion.train.OnlineAndTarget] module
during training, so the zoo trainer's checkpoints hold the target too and an interrupted run resumes
exactly.
"""

from __future__ import annotations

import copy
import dataclasses

import torch
from torch import nn

from reference.data import NULL_CLASS, load_digits_tensors
from reference.harness.sampling import frozen
from reference.zoo.specs import LATENT_TEACHER_CONFIG, P_UNCOND, SCHEDULER_CONFIG, ZooSpec
from reference.zoo.training import TrainContext, TrainOutcome, fit

from .core import (
    HUBER_C,
    MAX_TIMESTEP,
    ORIGINAL_STEPS,
    SIGMA_DATA,
    TIMESTEP_SCALING,
    consistency_distillation_loss,
    ema_update,
)

ZOO_NAME = "consistency_latent"
TARGET_EMA = 0.95
"""``mu``: EMA decay of the target network (LCM's value)."""
STEPS = 3000
"""1500 steps left the 1- and 2-step samples far from the teacher's (FDD 150 / 60 against 10 for
the teacher's DDIM-50, 12.9 at 4 steps): the boundary condition propagates one skipping interval
at a time through the 50-step grid, so the few-step end converges last."""
BATCH = 128
LR = 2e-4


class OnlineAndTarget(nn.Module):
    """The online network (trained) and the target network (EMA, no gradients) side by side."""

    def __init__(self, teacher: nn.Module) -> None:
        super().__init__()
        self.online = copy.deepcopy(teacher)
        self.target = copy.deepcopy(teacher)
        for p in self.online.parameters():
            p.requires_grad_(True)
        for p in self.target.parameters():
            p.requires_grad_(False)


def _eps(model: nn.Module):  # type: ignore[no-untyped-def]
    def eps_fn(z: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return model(z, t, class_labels=labels, return_dict=False)[0]

    return eps_fn


def clean_latents(vae: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Posterior mean and std of the training digits (scaled latents are ``(mu + std n) s``)."""
    with torch.no_grad():
        post = vae.encode(x).latent_dist
    return post.mean, post.std


def train_consistency(ctx: TrainContext) -> TrainOutcome:
    """Latent consistency distillation of ``latent_teacher`` (guidance-free, null class kept)."""
    vae = ctx.load("vae")
    teacher = frozen(ctx.load("latent_teacher"))
    x, y = load_digits_tensors("train")
    mean, std = clean_latents(vae, x)
    scale = float(vae.config.scaling_factor)
    alphas_cumprod = _alphas_cumprod()
    teacher_eps = _eps(teacher)

    def batch_loss(model: nn.Module, step: int) -> torch.Tensor:
        if step > 0:  # the target follows the online weights of the previous optimizer step
            ema_update(model.target, model.online, TARGET_EMA)
        idx = torch.randint(len(y), (ctx.batch,))
        z0 = (mean[idx] + std[idx] * torch.randn_like(mean[idx])) * scale
        labels = y[idx].clone()
        labels[torch.rand(ctx.batch) < P_UNCOND] = NULL_CLASS
        return consistency_distillation_loss(
            _eps(model.online), _eps(model.target), teacher_eps, z0, labels, alphas_cumprod
        )

    shas = [next(iter(ctx.entry(n)["weights"].values()))["sha256"] for n in ctx.spec.requires]
    sub = dataclasses.replace(ctx, config={**ctx.config, "parents": shas})
    pair, loss = fit(sub, OnlineAndTarget(teacher), batch_loss)
    ema_update(pair.target, pair.online, TARGET_EMA)  # the update after the last step
    ctx.train_seconds = sub.train_seconds
    extra = {
        "technique": "latent consistency distillation (Song et al. 2023, arXiv:2303.01469; "
        "Luo et al. 2023, arXiv:2310.04378)",
        "teacher": "latent_teacher",
        "solver": "DDIM",
        "original_steps": ORIGINAL_STEPS,
        "skipping_step": 1000 // ORIGINAL_STEPS,
        "max_timestep": MAX_TIMESTEP,
        "target_ema": TARGET_EMA,
        "huber_c": HUBER_C,
        "sigma_data": SIGMA_DATA,
        "timestep_scaling": TIMESTEP_SCALING,
        "guidance": "none (w = 1); label dropout keeps the null class",
        "p_uncond": P_UNCOND,
        "saved": "target network",
        "vae_scaling_factor": scale,
        "scheduler": dict(SCHEDULER_CONFIG),
    }
    return TrainOutcome(pair.target, loss, extra=extra)


def _alphas_cumprod() -> torch.Tensor:
    from reference.zoo import teacher_scheduler

    return teacher_scheduler().alphas_cumprod.clone()


ZOO_SPECS: dict[str, ZooSpec] = {
    ZOO_NAME: ZooSpec(
        name=ZOO_NAME,
        description="latent consistency model distilled from latent_teacher (LCM-style)",
        architecture="diffusers.UNet2DModel",
        config=LATENT_TEACHER_CONFIG,
        build="reference.zoo.specs:build_unet",
        train="reference.consistency_latent_diffusion.train:train_consistency",
        steps=STEPS,
        batch=BATCH,
        lr=LR,
        requires=("vae", "latent_teacher"),
        storage_dtype="float16",
    )
}
"""The consistency model as a zoo model."""
