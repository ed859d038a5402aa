"""Regional compilation on diffusers' production classes: ``RegionalCompileConfig`` +
``apply_regional_compile(target, config)``.

Idea
====
A graph compiler (XLA for TPUs, Inductor for GPUs and CPUs) pays a compile time per distinct
graph. A diffusion network repeats a few block types many times: DiT-XL/2 is 28 identical
transformer blocks, the SD U-Net is ResNet and transformer blocks at four widths. Compiling the
*repeated block* instead of the whole model (regional compilation) gives nearly the same kernels
(only fusion across block boundaries is lost) at a fraction of the compile time:
every block of one class runs the same Python code, so TorchDynamo traces it once per input
shape and every other instance reuses the compiled graph, because the parameters of a module are
graph *inputs*, not constants baked into it. The eager code between blocks (embeddings, the
U-Net's skip bookkeeping) stays in Python.

Here each repeated block's ``forward`` is replaced by ``torch.compile(block.forward, ...)``:

    blocks = U-Net: the resnets and attentions of down_blocks, mid_block, up_blocks       (1)
             transformer: transformer_blocks (+ single_transformer_blocks for Flux)
    graphs = sum over block classes of (distinct input shapes and strides it sees)     (2)

instead of one graph per block instance. ``remove()`` deletes the instance ``forward``, so the
class's own method runs again, untouched.

Sources
=======
* Ansel et al., "PyTorch 2: Faster Machine Learning Through Dynamic Python Bytecode
  Transformation and Graph Compilation", ASPLOS 2024, doi:10.1145/3620665.3640366 (TorchDynamo,
  Inductor).
* diffusers' ``ModelMixin.compile_repeated_blocks`` and PyTorch's "regional compilation" recipe:
  the same idea; diffusers chooses the blocks by a per-class ``_repeated_blocks`` list.

Pitfalls
========
* ``backend`` is checked against ``torch._dynamo.list_backends(exclude_tags=())`` before anything
  is changed (its default excludes the debug backends ``eager`` and ``aot_eager`` that tests use).
* Dynamo's ``recompile_limit`` (8 per code object by default) is easily reached by the U-Net's
  blocks at several widths; past it dynamo falls back to eager *silently*. We raise the limit
  while the compilation is applied (as `reference.stacking.compile`
  does) and restore it on ``remove()``.
* Strides count as much as shapes: the first transformer block of DiT receives the patch
  embedding's transposed (non-contiguous) output and gets a graph of its own; blocks 2..N share
  one (tested: 4 blocks, 2 graphs).
* ``dynamic=False`` recompiles for every new input shape (batch, resolution); the first call at a
  shape is slow. Warm up before timing.
* ``mode`` applies to Inductor only; another backend with a ``mode`` is refused.
* Compilation does not change the mathematics, but Inductor may fuse and reorder floating-point
  operations: outputs agree within rounding, not bit for bit (``eager`` is bit for bit).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from torch import nn

from reference.harness.production import Applied, denoiser, replace_forward, require
from reference.zoo.shapes import CLASS_OF

SUPPORTED = tuple(CLASS_OF.values())
"""All six production classes."""

TECHNIQUE = "regional compilation"

MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
RECOMPILE_LIMIT = 256
"""Enough for every block shape of an SD-sized U-Net at a few batch sizes."""


@dataclass(frozen=True)
class RegionalCompileConfig:
    """How [`apply_regional_compile`][reference.tpu_deployment.production.apply_regional_compile]
    compiles each repeated block (the arguments of ``torch.compile``)."""

    backend: str = "inductor"
    mode: str | None = None
    fullgraph: bool = False
    dynamic: bool = False

    def validate(self) -> None:
        """One-line ``ValueError`` for an unknown backend or mode."""
        import torch._dynamo

        known = torch._dynamo.list_backends(exclude_tags=())
        if self.backend not in known:
            raise ValueError(
                f"unknown torch.compile backend {self.backend!r}; known: {', '.join(known)}"
            )
        if self.mode not in MODES:
            raise ValueError(f"unknown torch.compile mode {self.mode!r}; choose from {MODES[1:]}")
        if self.mode is not None and self.backend != "inductor":
            raise ValueError(f"mode {self.mode!r} applies to the inductor backend only")


def repeated_blocks(model: nn.Module) -> dict[str, nn.Module]:
    """``{qualified name: block}`` of the repeated blocks (1), in execution order."""
    out: dict[str, nn.Module] = {}
    if hasattr(model, "down_blocks"):
        stages = [
            *(f"down_blocks.{i}" for i in range(len(model.down_blocks))),
            "mid_block",
            *(f"up_blocks.{i}" for i in range(len(model.up_blocks))),
        ]
        for stage in stages:
            block = model.mid_block if stage == "mid_block" else model.get_submodule(stage)
            if block is None:  # a U-Net built without a mid block
                continue
            for kind in ("resnets", "attentions"):
                for j, sub in enumerate(getattr(block, kind, None) or ()):
                    if sub is not None:
                        out[f"{stage}.{kind}.{j}"] = sub
        return out
    for kind in ("transformer_blocks", "single_transformer_blocks"):
        for j, sub in enumerate(getattr(model, kind, None) or ()):
            out[f"{kind}.{j}"] = sub
    return out


def _raise_recompile_limit(applied: Applied) -> None:
    """Raise dynamo's recompile limits (see Pitfalls); ``remove()`` restores them."""
    import torch._dynamo

    cfg = torch._dynamo.config
    saved = (cfg.recompile_limit, cfg.accumulated_recompile_limit)
    cfg.recompile_limit = max(saved[0], RECOMPILE_LIMIT)
    cfg.accumulated_recompile_limit = max(saved[1], 4 * RECOMPILE_LIMIT)

    def undo() -> None:
        cfg.recompile_limit, cfg.accumulated_recompile_limit = saved

    applied.on_remove(undo)


def apply_regional_compile(target: Any, config: RegionalCompileConfig | None = None) -> Applied:
    """Compile every repeated block (1) of ``target`` (a production model or its pipeline).

    Compilation itself happens lazily, at the first call of each block at each input shape.
    ``Applied.state``: ``blocks`` (qualified names), ``classes`` (``{block class: count}``).
    ``remove()`` restores every block's original ``forward`` and dynamo's limits.
    """
    import torch

    config = config or RegionalCompileConfig()
    model = denoiser(target)
    require(model, SUPPORTED, TECHNIQUE)
    config.validate()
    blocks = repeated_blocks(model)
    applied = Applied(model, TECHNIQUE)
    try:
        _raise_recompile_limit(applied)
        for block in blocks.values():
            compiled = torch.compile(
                block.forward,
                backend=config.backend,
                mode=config.mode,
                fullgraph=config.fullgraph,
                dynamic=config.dynamic,
            )
            replace_forward(applied, block, compiled)
    except BaseException:
        applied.remove()  # nothing half-done
        raise
    applied.state.update(
        blocks=list(blocks), classes=dict(Counter(type(b).__name__ for b in blocks.values()))
    )
    return applied
