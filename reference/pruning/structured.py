"""Structured channel pruning of a diffusers ``UNet2DModel`` with Torch-Pruning's DepGraph.

See [`reference.pruning`][reference.pruning] for the idea, the math and the pitfalls.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

Criterion = Literal["l1", "taylor", "random"]
CRITERIA: tuple[str, ...] = ("l1", "taylor", "random")


def _attention_blocks(model: nn.Module) -> list[nn.Module]:
    from diffusers.models.attention_processor import Attention

    return [m for m in model.modules() if isinstance(m, Attention)]


def head_dims(model: nn.Module) -> dict[str, int]:
    """``{attention block name: head dimension}`` of every diffusers ``Attention`` block."""
    from diffusers.models.attention_processor import Attention

    return {
        n: m.to_q.out_features // m.heads
        for n, m in model.named_modules()
        if isinstance(m, Attention)
    }


# --------------------------------------------------------------------------- importance


def diffusion_loss(
    model: nn.Module,
    x0: torch.Tensor,
    labels: torch.Tensor,
    *,
    t_max: int = 1000,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The epsilon-prediction loss ``||eps - eps_theta(x_t, t, y)||^2`` at ``t < t_max``.

    The objective the zoo teacher was trained with (Ho et al. 2020, arXiv:2006.11239, Eq. (14)
    with ``x_t`` from Eq. (4)), on the
    zoo's cosine schedule; ``t_max`` restricts the timesteps (Diff-Pruning drops the noisiest
    steps from its Taylor importance because their gradients carry little information).
    """
    from reference.zoo.specs import noise_scheduler

    noise = torch.randn(x0.shape, generator=generator)
    t = torch.randint(0, t_max, (x0.shape[0],), generator=generator)
    x_t = noise_scheduler().add_noise(x0, noise, t)  # Eq. (4): sqrt(abar) x0 + sqrt(1 - abar) eps
    eps = model(x_t, t, class_labels=labels, return_dict=False)[0]
    return F.mse_loss(eps, noise)  # Eq. (14): L_simple = ||eps - eps_theta(x_t, t)||^2


def accumulate_gradients(
    model: nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]], t_max: int = 1000
) -> int:
    """Sum the diffusion-loss gradients of ``batches`` into ``.grad`` (for Taylor importance).

    Returns the number of batches. Gradients are zeroed first.
    """
    model.zero_grad(set_to_none=True)
    gen = torch.Generator().manual_seed(0)
    n = 0
    with torch.enable_grad():
        for x0, y in batches:
            diffusion_loss(model, x0, y, t_max=t_max, generator=gen).backward()
            n += 1
    return n


def importance(criterion: str) -> Any:
    """The Torch-Pruning importance estimator of ``criterion``.

    * ``"l1"``: group L1 norm of the weights attached to each channel (Li et al. 2016,
      arXiv:1608.08710), averaged over the coupled layers of a DepGraph group.
    * ``"taylor"``: first-order Taylor estimate of the loss change when a channel is removed,
      ``|sum_w w * dL/dw|`` per weight summed over the channel (Molchanov et al. 2019,
      arXiv:1906.10771), the criterion of Diff-Pruning (Fang et al. 2023, arXiv:2305.10924); needs
      gradients from [`accumulate_gradients`][reference.pruning.structured.accumulate_gradients].
    * ``"random"``: a sanity baseline.
    """
    import torch_pruning as tp

    if criterion == "l1":
        return tp.importance.MagnitudeImportance(p=1)
    if criterion == "taylor":
        return tp.importance.TaylorImportance()
    if criterion == "random":
        return tp.importance.RandomImportance()
    raise ValueError(f"unknown pruning criterion {criterion!r}; choose from {', '.join(CRITERIA)}")


# --------------------------------------------------------------------------- the pruning


def _example_inputs(model: nn.Module) -> dict[str, torch.Tensor]:
    size = model.config.sample_size
    size = size if isinstance(size, int) else size[0]
    return {
        "sample": torch.zeros(2, model.config.in_channels, size, size),
        "timestep": torch.tensor([1, 500]),
        "class_labels": torch.tensor([0, 1]),
    }


def _forward(model: nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(**inputs, return_dict=False)[0]


@torch.no_grad()
def sync_diffusers_attributes(model: nn.Module, old_head_dims: dict[str, int]) -> None:
    """Update the bookkeeping attributes diffusers keeps next to the weights, after pruning.

    Torch-Pruning shrinks tensors; diffusers blocks also store channel counts
    (``Downsample2D.channels`` is asserted in ``forward``) and ``Attention`` derives its
    softmax temperature from the *current* head size: ``F.scaled_dot_product_attention``
    scales logits by ``1 / sqrt(d_head)``. Removing half of each head's dimensions would
    silently sharpen every attention map by ``sqrt(2)``, so the query projection is rescaled
    by ``sqrt(d_new / d_old)`` to keep the original ``1 / sqrt(d_old)`` temperature.
    """
    from diffusers.models.attention_processor import Attention
    from diffusers.models.downsampling import Downsample2D
    from diffusers.models.resnet import ResnetBlock2D
    from diffusers.models.upsampling import Upsample2D

    for name, m in model.named_modules():
        if isinstance(m, Downsample2D | Upsample2D) and getattr(m, "conv", None) is not None:
            m.channels, m.out_channels = m.conv.in_channels, m.conv.out_channels
        elif isinstance(m, ResnetBlock2D):
            m.in_channels, m.out_channels = m.conv1.in_channels, m.conv2.out_channels
        elif isinstance(m, Attention):
            d_new = m.to_q.out_features // m.heads
            m.inner_dim = m.inner_kv_dim = m.to_q.out_features
            m.query_dim = m.to_q.in_features
            m.out_dim = m.to_out[0].out_features
            d_old = old_head_dims.get(name, d_new)
            if d_new != d_old:
                factor = math.sqrt(d_new / d_old)
                m.to_q.weight.mul_(factor)
                if m.to_q.bias is not None:
                    m.to_q.bias.mul_(factor)


@dataclass
class PruneReport:
    """Parameter counts before/after and the resulting buildable configuration."""

    ratio: float
    criterion: str
    params_before: int
    params_after: int
    config: dict[str, Any]


def prune_unet(
    unet: nn.Module,
    ratio: float,
    criterion: str = "l1",
    *,
    calibration: Iterable[tuple[torch.Tensor, torch.Tensor]] | None = None,
    t_max: int = 1000,
) -> tuple[nn.Module, PruneReport]:
    """Remove ``ratio`` of the channels of every coupled group of a ``UNet2DModel``.

    Uses Torch-Pruning's ``BasePruner`` (DepGraph, Fang et al. 2023, arXiv:2301.12900), which
    groups every tensor dimension that must shrink together: a convolution's output channels,
    the next layers' input channels, the GroupNorm between them (its groups are kept intact:
    the same number of channels leaves every group), the residual additions, the skip
    concatenations of the decoder, the time/class embedding width that every ResNet block's
    ``time_emb_proj`` reads, and the attention projections (``num_heads`` keeps the head count
    and shrinks each head). ``conv_out`` is ignored (its outputs are the predicted noise).

    The input model is not modified. Returns the smaller dense model and a report whose ``config``
    rebuilds the same architecture
    ([`build_pruned_unet`][reference.pruning.structured.build_pruned_unet]).
    """
    import torch_pruning as tp

    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"pruning ratio must be in [0, 1), got {ratio}")
    scorer = importance(criterion)
    model = copy.deepcopy(unet).eval()
    before = sum(p.numel() for p in model.parameters())
    old_heads = head_dims(model)
    if criterion == "taylor":
        if calibration is None:
            raise ValueError("Taylor importance needs calibration batches")
        accumulate_gradients(model, calibration, t_max)
    num_heads = {
        lin: attn.heads
        for attn in _attention_blocks(model)
        for lin in (attn.to_q, attn.to_k, attn.to_v)
    }
    pruner = tp.pruner.BasePruner(
        model,
        _example_inputs(model),
        scorer,
        pruning_ratio=ratio,
        ignored_layers=[model.conv_out],
        num_heads=num_heads,
        forward_fn=_forward,
    )
    with torch.no_grad():
        pruner.step()
    model.zero_grad(set_to_none=True)
    sync_diffusers_attributes(model, old_heads)
    config = pruned_config(model)
    return model.eval(), PruneReport(
        ratio, criterion, before, sum(p.numel() for p in model.parameters()), config
    )


# --------------------------------------------------------------------------- rebuilding


def pruned_config(model: nn.Module) -> dict[str, Any]:
    """A configuration from which
    [`build_pruned_unet`][reference.pruning.structured.build_pruned_unet] rebuilds ``model``'s
    shapes.

    The ``UNet2DModel`` configuration with the new ``block_out_channels``, head size and embedding
    width, plus ``time_proj_dim`` (the parameter-free sinusoidal timestep embedding keeps its
    original width; only the layers after it shrink). The attention temperature needs no entry:
    [`sync_diffusers_attributes`][reference.pruning.structured.sync_diffusers_attributes] folded it
    into the query weights.
    """
    cfg = {k: v for k, v in dict(model.config).items() if not k.startswith("_")}
    cfg["block_out_channels"] = [int(b.resnets[-1].conv2.out_channels) for b in model.down_blocks]
    attn = _attention_blocks(model)
    if attn:
        cfg["attention_head_dim"] = int(attn[0].to_q.out_features // attn[0].heads)
    cfg["time_embedding_dim"] = int(model.time_embedding.linear_2.out_features)
    return {"unet": cfg, "time_proj_dim": int(model.time_embedding.linear_1.in_features)}


def build_pruned_unet(config: dict[str, Any]) -> nn.Module:
    """Build the (untrained) architecture described by
    [`pruned_config`][reference.pruning.structured.pruned_config]."""
    from diffusers import UNet2DModel
    from diffusers.models.embeddings import Timesteps

    model = UNet2DModel(**config["unet"])
    proj_dim = int(config.get("time_proj_dim", model.time_embedding.linear_1.in_features))
    if proj_dim != model.time_embedding.linear_1.in_features:
        model.time_proj = Timesteps(proj_dim, model.config.flip_sin_to_cos, model.config.freq_shift)
        model.time_embedding.linear_1 = nn.Linear(
            proj_dim, model.time_embedding.linear_1.out_features
        )
    return model


def rebuild(model: nn.Module, config: dict[str, Any]) -> nn.Module:
    """``build_pruned_unet(config)`` loaded with ``model``'s weights (strict: shapes must fit)."""
    built = build_pruned_unet(config)
    built.load_state_dict(model.state_dict(), strict=True)
    return built.eval()


# --------------------------------------------------------------------------- counting


def count_macs(model: nn.Module, batch: int = 1) -> int:
    """FLOPs of one forward at ``batch`` (harness ``count_flops``: matmul and conv only)."""
    from reference.harness import count_flops

    inputs = _example_inputs(model)
    inputs = {k: v[:1].repeat(batch, *([1] * (v.dim() - 1))) for k, v in inputs.items()}
    with torch.no_grad():
        return count_flops(lambda: _forward(model, inputs))


def calibration_batches(
    n_batches: int, batch: int, seed: int = 0
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n_batches`` random ``(x0, labels)`` batches of training digits (10% null labels)."""
    from reference.harness import NULL_CLASS, load_digits_tensors

    x, y = load_digits_tensors("train")
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        idx = torch.randint(len(x), (batch,), generator=gen)
        labels = y[idx].clone()
        labels[torch.rand(batch, generator=gen) < 0.1] = NULL_CLASS
        out.append((x[idx], labels))
    return out


ForwardFn = Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor]
