"""The registry of zoo models: ``SPECS[name] -> ZooSpec`` (configuration + build + train).

Adding a model (e.g. a distilled or pruned student)
===================================================
1. Write ``build(config: dict) -> nn.Module`` (constructs the architecture, untrained) and
   ``train(ctx: TrainContext) -> TrainOutcome`` (see `reference.zoo.training`; most models
   only define a ``batch_loss(model, step)`` and call `fit`).
   Refer to them as ``"reference.my_module:build_student"`` strings so that nothing is imported
   before it is needed.
2. Put ``ZOO_SPECS = {"my_student": ZooSpec(..., requires=("teacher",))}`` in a module of your
   technique (``requires`` lists the zoo models that training loads with ``ctx.load``), and name
   that submodule as the technique's ``zoo_specs`` in `reference.registry`.
   `load_extensions` merges it into `SPECS` on first use.
3. ``python scripts/train_zoo.py --only my_student`` trains it, writes
   ``reference/zoo/weights/my_student.safetensors`` and its manifest entry; commit both.
4. Load it anywhere with ``reference.zoo.load("my_student")``.

Keep students tiny: the whole zoo must train in well under half an hour on 2 CPU cores and all
weights together stay below 26 MB (25 MB until the mixture-of-experts study added its dense
twin with the MoE's total parameters, 1.4 MB in float16).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from reference.data import NULL_CLASS, load_digits_tensors
from reference.registry import zoo_extension_modules

from .training import TrainContext, TrainOutcome, fit

BuildFn = Callable[[dict[str, Any]], nn.Module]
TrainFn = Callable[[TrainContext], TrainOutcome]

SCHEDULER_CONFIG: dict[str, Any] = {
    "num_train_timesteps": 1000,
    "beta_schedule": "squaredcos_cap_v2",
    "prediction_type": "epsilon",
    "clip_sample": True,
    "clip_sample_range": 1.0,
}
"""The noise schedule of every zoo diffusion model (``DDPMScheduler`` arguments).

Cosine schedule of Nichol & Dhariwal 2021 (arXiv:2102.09672): on small images the linear DDPM
schedule destroys the signal too early, the cosine one spends more steps at useful noise levels.
"""

P_UNCOND = 0.15
"""Label dropout probability: how often a training label is replaced by the null class 10."""
EMA_DECAY = 0.995


@dataclass(frozen=True)
class ZooSpec:
    """One zoo model: architecture configuration, how to build it and how to train it."""

    name: str
    description: str
    architecture: str
    config: dict[str, Any]
    build: BuildFn | str
    train: TrainFn | str
    steps: int
    batch: int
    lr: float
    seed: int = 0
    requires: tuple[str, ...] = field(default=())
    hparams: dict[str, Any] = field(default_factory=dict)
    """Training-only hyper-parameters (e.g. a loss weight): part of the checkpoint key and the
    manifest, read by ``train`` as ``ctx.spec.hparams``."""
    storage_dtype: str = "float32"
    """Dtype of the committed floating-point tensors ("float32" or "float16"). Loading copies them
    into the float32 model, so float16 halves the file at a rounding of ~1e-3 relative per weight;
    technique students use it to keep the zoo under its 26 MB budget."""

    def build_model(self, config: dict[str, Any] | None = None) -> nn.Module:
        return _resolve(self.build)(dict(self.config if config is None else config))

    def train_model(self, ctx: TrainContext) -> TrainOutcome:
        return _resolve(self.train)(ctx)


def _resolve(fn: Callable[..., Any] | str) -> Callable[..., Any]:
    if callable(fn):
        return fn
    module, _, attr = fn.partition(":")
    return getattr(importlib.import_module(module), attr)


def noise_scheduler() -> Any:
    from diffusers import DDPMScheduler

    return DDPMScheduler(**SCHEDULER_CONFIG)


# --------------------------------------------------------------------------- builders


def build_unet(config: dict[str, Any]) -> nn.Module:
    from diffusers import UNet2DModel

    return UNet2DModel(**config)


def build_dit(config: dict[str, Any]) -> nn.Module:
    """``DiTTransformer2DModel`` with its built-in label dropout switched off.

    diffusers' DiT embeds labels with ``LabelEmbedding(num_classes, dropout_prob=0.1)``: the table
    has ``num_embeds_ada_norm + 1`` rows, the last being the null class (here 10), and in training
    mode every block would drop labels independently. The zoo trainer does its own label dropout
    (the same for all blocks), so the built-in one is disabled; eval behaviour is unchanged.
    """
    from diffusers import DiTTransformer2DModel
    from diffusers.models.embeddings import LabelEmbedding

    model = DiTTransformer2DModel(**config)
    for module in model.modules():
        if isinstance(module, LabelEmbedding):
            module.dropout_prob = 0.0
    return model


def build_vae(config: dict[str, Any]) -> nn.Module:
    from diffusers import AutoencoderKL

    return AutoencoderKL(**config)


def build_classifier(config: dict[str, Any]) -> nn.Module:
    from .nets import DigitsClassifier

    return DigitsClassifier(**config)


def build_noisy_classifier(config: dict[str, Any]) -> nn.Module:
    from .nets import NoisyDigitsClassifier

    return NoisyDigitsClassifier(**config)


# --------------------------------------------------------------------------- training


def _diffusion_batch_loss(
    x0_of: Callable[[torch.Tensor], torch.Tensor], labels: torch.Tensor, batch: int
) -> Callable[[nn.Module, int], torch.Tensor]:
    """Epsilon-prediction loss ``|| eps - eps_theta(x_t, t, y) ||^2`` with label dropout.

    ``x0_of(idx)`` returns the clean training examples with indices ``idx``.
    """
    sched = noise_scheduler()
    num_t = SCHEDULER_CONFIG["num_train_timesteps"]

    def batch_loss(model: nn.Module, step: int) -> torch.Tensor:
        idx = torch.randint(len(labels), (batch,))
        x0, y = x0_of(idx), labels[idx].clone()
        y[torch.rand(batch) < P_UNCOND] = NULL_CLASS
        noise = torch.randn_like(x0)
        t = torch.randint(0, num_t, (batch,))
        x_t = sched.add_noise(x0, noise, t)
        eps = model(x_t, t, class_labels=y, return_dict=False)[0]
        return F.mse_loss(eps, noise)

    return batch_loss


def _diffusion_extra() -> dict[str, Any]:
    return {"scheduler": dict(SCHEDULER_CONFIG), "p_uncond": P_UNCOND, "ema_decay": EMA_DECAY}


def train_pixel_diffusion(ctx: TrainContext) -> TrainOutcome:
    """Teacher U-Net and DiT: epsilon prediction on 16x16 digits, EMA weights saved."""
    x, y = load_digits_tensors("train")
    model = ctx.spec.build_model(ctx.config)
    batch_loss = _diffusion_batch_loss(lambda idx: x[idx], y, ctx.batch)
    ema, loss = fit(ctx, model, batch_loss, ema_decay=EMA_DECAY)
    return TrainOutcome(ema, loss, extra=_diffusion_extra())


def random_shift(x: torch.Tensor, pad: int = 1) -> torch.Tensor:
    """Translate each image by up to ``pad`` pixels (background value -1 fills the border)."""
    n, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), value=-1.0)
    dy = torch.randint(0, 2 * pad + 1, (n,))
    dx = torch.randint(0, 2 * pad + 1, (n,))
    rows = (dy[:, None] + torch.arange(h))[:, :, None]
    cols = (dx[:, None] + torch.arange(w))[:, None, :]
    return padded[torch.arange(n)[:, None, None], 0, rows, cols].unsqueeze(1)


@torch.no_grad()
def _accuracy(
    logits_fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, y: torch.Tensor
) -> float:
    return float((logits_fn(x).argmax(1) == y).float().mean())


def train_classifier(ctx: TrainContext) -> TrainOutcome:
    """Cross-entropy on clean digits with +-1 pixel random shifts."""
    x, y = load_digits_tensors("train")
    model = ctx.spec.build_model(ctx.config)

    def batch_loss(m: nn.Module, step: int) -> torch.Tensor:
        idx = torch.randint(len(x), (ctx.batch,))
        return F.cross_entropy(m(random_shift(x[idx])), y[idx])

    model, loss = fit(ctx, model, batch_loss, weight_decay=1e-4)
    xt, yt = load_digits_tensors("test")
    return TrainOutcome(model, loss, extra={"test_accuracy": _accuracy(model, xt, yt)})


def train_noisy_classifier(ctx: TrainContext) -> TrainOutcome:
    """Cross-entropy on ``x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps`` for uniform ``t``."""
    x, y = load_digits_tensors("train")
    sched = noise_scheduler()
    num_t = SCHEDULER_CONFIG["num_train_timesteps"]
    model = ctx.spec.build_model(ctx.config)

    def batch_loss(m: nn.Module, step: int) -> torch.Tensor:
        idx = torch.randint(len(x), (ctx.batch,))
        t = torch.randint(0, num_t, (ctx.batch,))
        x0 = random_shift(x[idx])
        x_t = sched.add_noise(x0, torch.randn_like(x0), t)
        return F.cross_entropy(m(x_t, t), y[idx])

    model, loss = fit(ctx, model, batch_loss, weight_decay=1e-4)
    xt, yt = load_digits_tensors("test")
    gen = torch.Generator().manual_seed(1234)
    noise = torch.randn(xt.shape, generator=gen)
    acc = {}
    for t_val in (0, 250, 500, 750, 999):
        t = torch.full((len(xt),), t_val, dtype=torch.long)
        acc[str(t_val)] = _accuracy(lambda v, t=t: model(v, t), sched.add_noise(xt, noise, t), yt)
    return TrainOutcome(
        model, loss, extra={"test_accuracy_at_t": acc, "scheduler": SCHEDULER_CONFIG}
    )


def train_vae(ctx: TrainContext) -> TrainOutcome:
    """Reconstruction MSE + ``kl_weight`` x KL(q(z|x) || N(0, I)); then the latent scale.

    Only a slight KL penalty is used (as in latent diffusion, Rombach et al. 2022,
    arXiv:2112.10752): the zoo's first VAE, trained with 1e-4, had two of its four latent
    channels collapsed to the prior (posterior std ~1, no information), and diffusion on such
    latents mostly learns noise. With 1e-6 every channel carries information.
    The scaling factor is ``1 / std`` of posterior samples of the training set, as Stable
    Diffusion does (Rombach et al. 2022, arXiv:2112.10752), so that scaled latents have unit
    variance like the diffusion prior expects.
    """
    x, _ = load_digits_tensors("train")
    kl_weight = float(ctx.spec.hparams["kl_weight"])
    model = ctx.spec.build_model(ctx.config)

    def batch_loss(m: nn.Module, step: int) -> torch.Tensor:
        idx = torch.randint(len(x), (ctx.batch,))
        post = m.encode(x[idx]).latent_dist
        rec = m.decode(post.sample()).sample
        return F.mse_loss(rec, x[idx]) + kl_weight * post.kl().mean()

    model, loss = fit(ctx, model, batch_loss)
    with torch.no_grad():
        post = model.encode(x).latent_dist
        gen = torch.Generator().manual_seed(0)
        z = post.mean + post.std * torch.randn(post.mean.shape, generator=gen)
        scale = float(1.0 / z.std())
        xt, _ = load_digits_tensors("test")
        rec = model.decode(model.encode(xt).latent_dist.mean).sample.clamp(-1, 1)
        mse = float(F.mse_loss(rec, xt))
    extra = {
        "kl_weight": kl_weight,
        "posterior_std_per_channel": [round(float(v), 4) for v in post.std.mean((0, 2, 3))],
        "latent_shape": list(z.shape[1:]),
        "test_reconstruction_mse": mse,
        "test_reconstruction_psnr_db": float(10 * torch.log10(torch.tensor(4.0 / mse))),
    }
    return TrainOutcome(model, loss, extra=extra, config_updates={"scaling_factor": scale})


def train_latent_diffusion(ctx: TrainContext) -> TrainOutcome:
    """Epsilon prediction on scaled VAE latents (posterior samples drawn fresh every step)."""
    vae = ctx.load("vae")
    x, y = load_digits_tensors("train")
    with torch.no_grad():
        post = vae.encode(x).latent_dist
        mean, std = post.mean, post.std
    scale = float(vae.config.scaling_factor)

    def x0_of(idx: torch.Tensor) -> torch.Tensor:
        # A fresh posterior sample every step: z = (mu + sigma * n) * scale.
        return (mean[idx] + std[idx] * torch.randn_like(mean[idx])) * scale

    model = ctx.spec.build_model(ctx.config)
    batch_loss = _diffusion_batch_loss(x0_of, y, ctx.batch)
    ema, loss = fit(ctx, model, batch_loss, ema_decay=EMA_DECAY)
    extra = _diffusion_extra() | {
        "vae_scaling_factor": scale,
        "sampling_scheduler": {**SCHEDULER_CONFIG, "clip_sample": False},
    }
    return TrainOutcome(ema, loss, extra=extra)


# --------------------------------------------------------------------------- the registry

TEACHER_CONFIG: dict[str, Any] = {
    "sample_size": 16,
    "in_channels": 1,
    "out_channels": 1,
    "block_out_channels": [32, 64, 64],
    "layers_per_block": 1,
    "down_block_types": ["DownBlock2D", "DownBlock2D", "AttnDownBlock2D"],
    "up_block_types": ["AttnUpBlock2D", "UpBlock2D", "UpBlock2D"],
    "attention_head_dim": 32,
    "norm_num_groups": 8,
    "num_class_embeds": 11,
}

DIT_CONFIG: dict[str, Any] = {
    "sample_size": 16,
    "patch_size": 2,
    "in_channels": 1,
    "out_channels": 1,
    "num_layers": 4,
    "num_attention_heads": 3,
    "attention_head_dim": 32,
    "num_embeds_ada_norm": 10,
    "norm_num_groups": 8,
}

VAE_CONFIG: dict[str, Any] = {
    "in_channels": 1,
    "out_channels": 1,
    "down_block_types": ["DownEncoderBlock2D"] * 3,
    "up_block_types": ["UpDecoderBlock2D"] * 3,
    "block_out_channels": [16, 32, 32],
    "layers_per_block": 1,
    "latent_channels": 4,
    "norm_num_groups": 8,
    "sample_size": 16,
}

LATENT_TEACHER_CONFIG: dict[str, Any] = {
    "sample_size": 4,
    "in_channels": 4,
    "out_channels": 4,
    "block_out_channels": [32, 64],
    "layers_per_block": 1,
    "down_block_types": ["DownBlock2D", "AttnDownBlock2D"],
    "up_block_types": ["AttnUpBlock2D", "UpBlock2D"],
    "attention_head_dim": 32,
    "norm_num_groups": 8,
    "num_class_embeds": 11,
}

CLASSIFIER_CONFIG: dict[str, Any] = {"channels": [32, 64], "feature_dim": 64, "num_classes": 10}

SPECS: dict[str, ZooSpec] = {
    spec.name: spec
    for spec in [
        ZooSpec(
            name="classifier",
            description="Conv-BN-ReLU digits classifier; features() define the FDD metric",
            architecture="reference.zoo.nets.DigitsClassifier",
            config=CLASSIFIER_CONFIG,
            build=build_classifier,
            train=train_classifier,
            steps=600,
            batch=128,
            lr=2e-3,
        ),
        ZooSpec(
            name="teacher",
            description="class-conditional pixel U-Net (null class 10), epsilon prediction",
            architecture="diffusers.UNet2DModel",
            config=TEACHER_CONFIG,
            build=build_unet,
            train=train_pixel_diffusion,
            steps=1000,
            batch=128,
            lr=1e-3,
        ),
        ZooSpec(
            name="dit",
            description="class-conditional DiT, patch 2 (64 tokens), epsilon prediction",
            architecture="diffusers.DiTTransformer2DModel",
            config=DIT_CONFIG,
            build=build_dit,
            train=train_pixel_diffusion,
            steps=1200,
            batch=128,
            lr=1e-3,
        ),
        ZooSpec(
            name="noisy_classifier",
            description="time-conditioned classifier p(y | x_t, t) for classifier guidance",
            architecture="reference.zoo.nets.NoisyDigitsClassifier",
            config={**CLASSIFIER_CONFIG, "time_dim": 64},
            build=build_noisy_classifier,
            train=train_noisy_classifier,
            steps=800,
            batch=128,
            lr=2e-3,
        ),
        ZooSpec(
            name="vae",
            description="AutoencoderKL 16x16x1 -> 4x4x4 latent, scaling_factor = 1/std",
            architecture="diffusers.AutoencoderKL",
            config=VAE_CONFIG,
            build=build_vae,
            train=train_vae,
            steps=1000,
            batch=128,
            lr=1e-3,
            hparams={"kl_weight": 1e-6},
        ),
        ZooSpec(
            name="latent_teacher",
            description="class-conditional U-Net on the VAE's 4x4x4 latents, epsilon prediction",
            architecture="diffusers.UNet2DModel",
            config=LATENT_TEACHER_CONFIG,
            build=build_unet,
            train=train_latent_diffusion,
            steps=1500,
            batch=128,
            lr=1e-3,
            requires=("vae",),
            storage_dtype="float16",  # keeps the zoo under 26 MB with the technique students
        ),
    ]
}
"""All zoo models by name, in training order (dependencies first)."""

BUILTIN_MODELS: tuple[str, ...] = tuple(SPECS)
"""The zoo's own models (the harness depends on them)."""


_LOADED_EXTENSIONS: set[str] = set()


def load_extensions() -> dict[str, ZooSpec]:
    """Merge the ``ZOO_SPECS`` of every registered technique's ``zoo_specs`` module into
    `SPECS` (see `reference.registry.zoo_extension_modules`).

    Idempotent; returns `SPECS`. A registered module that fails to import or lacks
    ``ZOO_SPECS`` raises ``ZooError`` (the registry is the contract: nothing is skipped).
    """
    from .store import ZooError

    for module in zoo_extension_modules():
        if module in _LOADED_EXTENSIONS:
            continue
        try:
            specs = importlib.import_module(module).ZOO_SPECS
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise ZooError(
                f"{module}: zoo extension failed ({type(exc).__name__}: {first})"
            ) from None
        for name, spec in specs.items():
            if name in BUILTIN_MODELS or (name in SPECS and SPECS[name] is not spec):
                raise ZooError(f"{module}: zoo model {name!r} is already registered")
            SPECS[name] = spec
        _LOADED_EXTENSIONS.add(module)
    return SPECS
