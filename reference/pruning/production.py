"""Structured pruning of diffusers' production U-Nets: ``StructuredPruningConfig`` +
``apply_structured_pruning(target, config)``.

Idea
====
Remove a fraction of the channels of every coupled group of a ``UNet2DModel`` or
``UNet2DConditionModel`` (the SD 1.x/2.x/SDXL layout) and return a physically smaller dense
model, as Diff-Pruning did for Stable Diffusion: DepGraph finds which tensor dimensions must
shrink together (a convolution's outputs, its consumers' inputs, the GroupNorm between them, the
residual additions, the decoder's skip concatenations, the timestep-embedding width every ResNet
block reads, the attention heads), and a Taylor importance computed with the diffusion loss ranks
the channels. The U-Net surgery is that of [`prune_unet`][reference.pruning.structured.prune_unet],
generalised to any U-Net class and to inputs without class labels (text conditioning).

Math
====
Diffusion loss on calibration batches (Ho et al. 2020, Eqs. (4) and (14)), ``t < t_max``::

    x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps                                   (1)
    L   = || eps - eps_theta(x_t, t, c) ||^2                                        (2)

First-order Taylor importance of a group ``g`` of coupled weights (Molchanov et al. 2019,
arXiv:1906.10771), the criterion of Diff-Pruning::

    I(g) = | sum_{w in g} w * dL/dw |                                               (3)

A layer ``C_in -> C_out`` costs ``~ C_in C_out`` multiply-adds; removing a fraction ``p`` of every
group leaves ``~ (1 - p)^2`` of them                                                (4)

and the attention temperature ``1 / sqrt(d_head)`` is kept by scaling the query projection by
``sqrt(d_new / d_old)``
([`sync_diffusers_attributes`][reference.pruning.structured.sync_diffusers_attributes]).

Why a copy and no ``remove()``
==============================
Pruning changes tensor shapes: parameters are replaced by smaller ones and every consumer's
weights are sliced. Undoing it in place would mean keeping a full copy of the original anyway,
so the function prunes a deep copy and returns it; the caller's model is never touched and
*is* the way back (``pipe.unet = pruned`` to use it, the old object to undo).

Sources
=======
* Fang, Ma and Wang, "Structural Pruning for Diffusion Models" (Diff-Pruning), NeurIPS 2023,
  arXiv:2305.10924.
* Fang et al., "DepGraph: Towards Any Structural Pruning", CVPR 2023, arXiv:2301.12900
  (``torch_pruning``).
* Ho, Jain and Abbeel, "Denoising Diffusion Probabilistic Models", NeurIPS 2020,
  arXiv:2006.11239.

Pitfalls
========
* Without ``calibration`` the Taylor importance uses Gaussian stand-in data (random latents,
  random text embeddings): a proxy that only ranks channels by their effect on noise prediction
  for unstructured inputs. Pass a ``calibration`` callable that returns the diffusion loss on
  your data, as Diff-Pruning does, for a ranking that means something.
* A pruned model needs fine-tuning before its samples are usable (Diff-Pruning fine-tunes).
* Cross-attention keys and values read the text encoder's width, which is a model input: their
  input width never shrinks, only their output (head) width.
* Transformers are refused: their residual stream receives a fixed, non-parameter position
  embedding (a buffer DepGraph does not shrink) and AdaLN modulation vectors cut by ``chunk``
  into per-block shifts and scales. ``torch_pruning`` 1.6's DepGraph run on them as on a U-Net
  fails (tried on the tiny models: DiT and SD3 prune to models whose forward fails on a size
  mismatch with the position embedding; PixArt and Flux raise index errors while pruning), and
  Diff-Pruning covers U-Nets only.
* Tiny widths prune coarsely: a GroupNorm's groups stay equal-sized, so with 2 channels per
  group a ratio of 0.3 removes one of the two (half the width).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from reference.harness.production import UnsupportedModel, denoiser, require
from reference.zoo.shapes import example_inputs

from .api import check_ranking
from .structured import head_dims, importance, sync_diffusers_attributes

SUPPORTED = ("UNet2DModel", "UNet2DConditionModel")
TECHNIQUE = "structured pruning"
REFUSED = {
    "DiTTransformer2DModel": "AdaLN-Zero transformer",
    "PixArtTransformer2DModel": "AdaLN-single transformer",
    "SD3Transformer2DModel": "MMDiT transformer",
    "FluxTransformer2DModel": "MMDiT transformer with rotary embeddings",
}
REASON = (
    "DepGraph does not prune a transformer's residual stream consistently (torch_pruning 1.6 on "
    "the tiny models: DiT and SD3 come out with a position-embedding buffer wider than the "
    "pruned stream, PixArt and Flux fail while pruning), and Diff-Pruning covers U-Nets"
)

Calibration = Callable[[nn.Module], torch.Tensor]
"""``loss(model)``: one calibration batch's diffusion loss (2), to be back-propagated."""


@dataclass(frozen=True)
class StructuredPruningConfig:
    """What [`apply_structured_pruning`][reference.pruning.production.apply_structured_pruning]
    removes and how it ranks channels.

    ``ratio``: fraction of the channels of every coupled group. ``importance``: ``taylor`` (3),
    ``l1`` or ``random``. ``ignore_output``: keep ``conv_out`` (the predicted noise) whole.
    ``calibration``: ``loss(model)`` called ``calibration_steps`` times for Taylor importance;
    ``None`` uses (1)-(2) on Gaussian stand-in data of ``calibration_batch`` samples at
    ``t < t_max``. ``round_to``: keep channel counts multiples of it (GPU-friendly widths).
    """

    ratio: float = 0.3
    importance: str = "taylor"
    ignore_output: bool = True
    calibration: Calibration | None = None
    calibration_steps: int = 2
    calibration_batch: int = 2
    t_max: int = 1000
    round_to: int | None = None
    seed: int = 0

    def validate(self) -> None:
        """One-line ``ValueError`` for a knob out of range."""
        check_ranking(self.ratio, self.importance, "importance")
        if min(self.calibration_steps, self.calibration_batch, self.t_max) < 1:
            raise ValueError("calibration_steps, calibration_batch and t_max must be >= 1")


def _refuse(model: nn.Module) -> None:
    """`require`, with the reason appended for the transformers."""
    try:
        require(model, SUPPORTED, TECHNIQUE)
    except UnsupportedModel as exc:
        kind = REFUSED.get(type(model).__name__)
        if kind is None:
            raise
        raise UnsupportedModel(f"{exc} ({kind}: {REASON})") from None


def stand_in_loss(batch: int, t_max: int, seed: int) -> Calibration:
    """The diffusion loss (1)-(2) on Gaussian stand-in ``x_0`` and conditioning (a DDPM
    linear schedule of 1000 steps), fresh noise and timesteps on every call."""
    from diffusers import DDPMScheduler

    scheduler = DDPMScheduler(num_train_timesteps=1000)
    gen = torch.Generator().manual_seed(seed)

    def loss(model: nn.Module) -> torch.Tensor:
        seed = int(torch.randint(1 << 30, (1,), generator=gen, device="cpu"))
        inputs = example_inputs(model, batch, seed=seed)  # beside the model's weights
        x0 = inputs.pop("sample")
        eps = torch.randn(x0.shape, generator=gen, device="cpu").to(x0)
        t = torch.randint(0, t_max, (batch,), generator=gen, device="cpu").to(x0.device)
        x_t = scheduler.add_noise(x0, eps, t)  # (1)
        inputs["timestep"] = t
        prediction = model(x_t, **inputs)[0]
        return F.mse_loss(prediction, eps)  # (2)

    return loss


def accumulate_taylor_gradients(model: nn.Module, loss: Calibration, steps: int) -> None:
    """Sum ``steps`` calibration losses' gradients into ``.grad`` (the ``dL/dw`` of (3))."""
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        for _ in range(steps):
            loss(model).backward()


def _num_heads(model: nn.Module) -> dict[nn.Module, int]:
    """Head count of every attention projection, so DepGraph shrinks each head alike."""
    from diffusers.models.attention_processor import Attention

    return {
        getattr(attn, p): attn.heads
        for attn in model.modules()
        if isinstance(attn, Attention)
        for p in ("to_q", "to_k", "to_v")
    }


def _forward(model: nn.Module, inputs: dict[str, Any]) -> torch.Tensor:
    return model(**inputs)[0]


def apply_structured_pruning(
    target: Any, config: StructuredPruningConfig | None = None
) -> nn.Module:
    """A pruned copy of ``target``'s U-Net (``target``: a U-Net or its pipeline); the original
    is left untouched (see "Why a copy and no remove()")."""
    import torch_pruning as tp

    config = config or StructuredPruningConfig()
    original = denoiser(target)
    _refuse(original)
    config.validate()
    model = copy.deepcopy(original).eval()
    old_heads = head_dims(model)
    if config.importance == "taylor":
        loss = config.calibration or stand_in_loss(
            config.calibration_batch, config.t_max, config.seed
        )
        accumulate_taylor_gradients(model, loss, config.calibration_steps)
    pruner = tp.pruner.BasePruner(
        model,
        example_inputs(model, batch=2),
        importance(config.importance),  # (3) for "taylor"
        pruning_ratio=config.ratio,
        ignored_layers=[model.conv_out] if config.ignore_output else [],
        num_heads=_num_heads(model),
        round_to=config.round_to,
        forward_fn=_forward,
    )
    with torch.no_grad():
        pruner.step()
    model.zero_grad(set_to_none=True)
    sync_diffusers_attributes(model, old_heads)
    return model.eval()
