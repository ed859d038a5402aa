"""Where to put the checkpoints: module, stage and sqrt(n)-segment policies for ``UNet2DModel``.

Three ways of checkpointing the same ``diffusers.UNet2DModel`` with
``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``:

* [`checkpoint_modules`][reference.gradient_checkpointing.policies.checkpoint_modules] - every
  module of the given types (``ResnetBlock2D``, ``Attention``) recomputes itself in the backward
  pass. Fine-grained: many small checkpoints, each keeps only its input.
* [`staged_forward`][reference.gradient_checkpointing.policies.staged_forward] - the U-Net written
  as a chain of **stages** (``conv_in``, each down block, the mid block, each up block, the output
  head), run through contiguous **segments** of stages; a segment keeps its inputs (the running
  feature map, the skip tensors it reads, the embedding) and recomputes everything inside. One
  segment per stage is "per down/up block"; ``round(sqrt(n))`` segments is Chen et al.'s schedule.
* ``unet.enable_gradient_checkpointing()`` - diffusers' own switch, which checkpoints the
  ``ResnetBlock2D`` calls inside each block (not the attention or resampling layers).

A U-Net is not a chain: the skip tensors produced by the down path are needed by the up path, so
they are kept whatever the segmentation (they are outputs of one segment and inputs of another).
That is why the U-Net gains less from coarse segments than the plain chain of
[`make_chain`][reference.gradient_checkpointing.policies.make_chain], where the ``sqrt(n)`` law
shows cleanly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

Skips = tuple[torch.Tensor, ...]
StageFn = Callable[[torch.Tensor, Skips, torch.Tensor], tuple[torch.Tensor, Skips]]


# --------------------------------------------------------------------------- module policy


def _checkpointed(forward: Callable[..., Any], preserve_rng_state: bool) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        if not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        # Tensor keyword arguments become positional ones: checkpoint saves positional tensors
        # as autograd saved tensors (visible to saved_tensors_hooks, hence to the harness's
        # counter) but keeps keyword arguments in a closure, invisible to any hook.
        keys = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
        rest = {k: v for k, v in kwargs.items() if k not in keys}

        def call(*flat: Any) -> Any:
            cut = len(flat) - len(keys)
            return forward(*flat[:cut], **rest, **dict(zip(keys, flat[cut:], strict=True)))

        return checkpoint(
            call,
            *args,
            *(kwargs[k] for k in keys),
            use_reentrant=False,
            preserve_rng_state=preserve_rng_state,
        )

    return run


def checkpoint_modules(
    model: nn.Module, types: tuple[type[nn.Module], ...], preserve_rng_state: bool = True
) -> list[str]:
    """Make every submodule of ``model`` whose type is in ``types`` a checkpoint region.

    The module's ``forward`` is replaced by an instance attribute that calls the original through
    ``checkpoint(..., use_reentrant=False)`` when gradients are enabled (parameter names and
    ``state_dict`` keys are unchanged). Returns the names of the patched modules;
    [`remove_module_checkpoints`][reference.gradient_checkpointing.policies.remove_module_checkpoints]
    undoes it. Patch *after* ``copy.deepcopy``: a copied instance attribute would still call the
    original module.
    """
    names = []
    for name, module in model.named_modules():
        if isinstance(module, types) and "forward" not in vars(module):
            module.forward = _checkpointed(module.forward, preserve_rng_state)  # type: ignore[method-assign]
            names.append(name)
    return names


def remove_module_checkpoints(model: nn.Module) -> int:
    """Undo [`checkpoint_modules`][reference.gradient_checkpointing.policies.checkpoint_modules];
    returns how many modules were restored."""
    restored = 0
    for module in model.modules():
        if "forward" in vars(module):
            del module.forward
            restored += 1
    return restored


def unet_module_types() -> tuple[type[nn.Module], ...]:
    """``(ResnetBlock2D, Attention)``: the residual and attention blocks of a diffusers U-Net."""
    from diffusers.models.attention_processor import Attention
    from diffusers.models.resnet import ResnetBlock2D

    return (ResnetBlock2D, Attention)


# --------------------------------------------------------------------------- staged U-Net


def check_stageable(unet: nn.Module) -> None:
    """Raise ``ValueError`` unless
    [`staged_forward`][reference.gradient_checkpointing.policies.staged_forward] reproduces
    ``unet``'s forward pass."""
    if type(unet).__name__ != "UNet2DModel":
        raise ValueError(f"staged_forward needs a diffusers UNet2DModel, got {type(unet).__name__}")
    cfg = unet.config
    problems = []
    if cfg.time_embedding_type != "positional":
        problems.append(f"time_embedding_type={cfg.time_embedding_type!r}")
    if cfg.center_input_sample:
        problems.append("center_input_sample=True")
    if cfg.class_embed_type is not None:
        problems.append(f"class_embed_type={cfg.class_embed_type!r}")
    blocks = [*unet.down_blocks, *unet.up_blocks]
    if any(hasattr(b, "skip_conv") for b in blocks):
        problems.append("skip-connection blocks (SkipDownBlock2D/SkipUpBlock2D)")
    if problems:
        raise ValueError("staged_forward does not support " + ", ".join(problems))


def unet_embedding(
    unet: nn.Module, timestep: torch.Tensor, class_labels: torch.Tensor | None, batch: int
) -> torch.Tensor:
    """The time (+ class) embedding ``emb`` that every residual block of the U-Net receives."""
    t = timestep if timestep.dim() else timestep[None]
    t = t * torch.ones(batch, dtype=t.dtype, device=t.device)
    emb = unet.time_embedding(unet.time_proj(t).to(dtype=unet.dtype))
    if unet.class_embedding is not None:
        if class_labels is None:
            raise ValueError("this U-Net is class-conditional: pass class_labels")
        emb = emb + unet.class_embedding(class_labels).to(dtype=unet.dtype)
    return emb


def unet_stages(unet: nn.Module) -> list[tuple[str, StageFn]]:
    """The U-Net as a chain of stages ``(h, skips, emb) -> (h, skips)``, in execution order."""

    def conv_in(h: torch.Tensor, skips: Skips, emb: torch.Tensor) -> tuple[torch.Tensor, Skips]:
        h = unet.conv_in(h)
        return h, (h,)

    def down(block: nn.Module) -> StageFn:
        def run(h: torch.Tensor, skips: Skips, emb: torch.Tensor) -> tuple[torch.Tensor, Skips]:
            h, res = block(hidden_states=h, temb=emb)
            return h, skips + tuple(res)

        return run

    def mid(h: torch.Tensor, skips: Skips, emb: torch.Tensor) -> tuple[torch.Tensor, Skips]:
        return unet.mid_block(h, emb), skips

    def up(block: nn.Module) -> StageFn:
        def run(h: torch.Tensor, skips: Skips, emb: torch.Tensor) -> tuple[torch.Tensor, Skips]:
            k = len(block.resnets)
            return block(h, skips[-k:], emb), skips[:-k]

        return run

    def head(h: torch.Tensor, skips: Skips, emb: torch.Tensor) -> tuple[torch.Tensor, Skips]:
        return unet.conv_out(unet.conv_act(unet.conv_norm_out(h))), skips

    stages: list[tuple[str, StageFn]] = [("conv_in", conv_in)]
    stages += [(f"down_blocks.{i}", down(b)) for i, b in enumerate(unet.down_blocks)]
    if unet.mid_block is not None:
        stages.append(("mid_block", mid))
    stages += [(f"up_blocks.{i}", up(b)) for i, b in enumerate(unet.up_blocks)]
    stages.append(("head", head))
    return stages


def even_segments(n: int, k: int) -> list[range]:
    """Split ``range(n)`` into ``k`` contiguous segments whose lengths differ by at most one."""
    if not 1 <= k <= n:
        raise ValueError(f"segments must be between 1 and {n} (the number of stages), got {k}")
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(k)]


def sqrt_segments(n: int) -> int:
    """Chen et al.'s segment count for a chain of ``n`` blocks: ``round(sqrt(n))`` (at least 1)."""
    return max(1, round(math.sqrt(n)))  # Chen et al. 2016: memory k + n/k is least at k = sqrt(n)


def staged_forward(
    unet: nn.Module,
    sample: torch.Tensor,
    timestep: torch.Tensor,
    class_labels: torch.Tensor | None = None,
    segments: Sequence[range] | None = None,
    preserve_rng_state: bool = True,
) -> torch.Tensor:
    """``unet(sample, timestep, class_labels).sample``, run stage by stage.

    ``segments``: contiguous ranges of stage indices (see
    [`unet_stages`][reference.gradient_checkpointing.policies.unet_stages]) that each become one
    checkpoint region; ``None`` runs without checkpointing (and must equal the diffusers forward
    pass exactly). Stages outside every segment run normally.
    """
    check_stageable(unet)
    stages = unet_stages(unet)
    emb = unet_embedding(unet, timestep, class_labels, sample.shape[0])
    owner = {i: seg for seg in segments or [] for i in seg}

    def run(first: int, last: int, h: torch.Tensor, emb: torch.Tensor, *skips: torch.Tensor) -> Any:
        for _, fn in stages[first:last]:
            h, skips = fn(h, skips, emb)
        return h, skips

    # The skip tensors are passed one by one, not as a tuple: checkpoint saves positional tensor
    # arguments through autograd (so saved_tensors_hooks see them) but keeps containers in a
    # closure that no hook can see.
    h, skips, i = sample, (), 0
    while i < len(stages):
        seg = owner.get(i)
        if seg is None or not torch.is_grad_enabled():
            h, skips = run(i, i + 1, h, emb, *skips)
            i += 1
            continue
        h, skips = checkpoint(
            run, seg.start, seg.stop, h, emb, *skips,
            use_reentrant=False, preserve_rng_state=preserve_rng_state,
        )  # fmt: skip
        i = seg.stop
    return h


# --------------------------------------------------------------------------- a plain chain


class ResidualMLPBlock(nn.Module):
    """``x + W2 tanh(W1 x)``: saves two activations of ``x``'s size for the backward pass."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.tanh(self.fc1(x)))


def make_chain(n: int, width: int, seed: int = 0) -> nn.Sequential:
    """A chain of ``n``
    [`ResidualMLPBlock`][reference.gradient_checkpointing.policies.ResidualMLPBlock] (the setting of
    Chen et al.'s analysis)."""
    if n < 1 or width < 1:
        raise ValueError(f"a chain needs n >= 1 blocks and width >= 1, got n={n}, width={width}")
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return nn.Sequential(*[ResidualMLPBlock(width) for _ in range(n)])
    finally:
        torch.random.set_rng_state(gen_state)


def chain_loss(chain: nn.Sequential, x: torch.Tensor, segments: int) -> torch.Tensor:
    """Mean square of ``chain(x)`` with the chain cut into ``segments`` checkpointed pieces.

    ``torch.utils.checkpoint.checkpoint_sequential`` (the production API) checkpoints all but the
    last segment, whose activations it keeps because it would recompute them at once. So
    ``segments=1`` is no checkpointing, ``segments=n`` is one checkpoint per block and
    ``segments=round(sqrt(n))`` is Chen et al.'s ``O(sqrt(n))``-memory schedule.
    """
    if not 1 <= segments <= len(chain):
        raise ValueError(f"segments must be between 1 and {len(chain)}, got {segments}")
    y = (
        chain(x)
        if segments == 1
        else checkpoint_sequential(chain, segments, x, use_reentrant=False)
    )
    return y.square().mean()
