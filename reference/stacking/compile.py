"""``torch.compile`` as a network-level element: compile the leaf blocks of a diffusers U-Net.

Why the leaves, not the whole model
===================================
DeepCache (`reference.feature_caching`) does not call ``unet.forward``: it re-implements the
forward over ``unet.down_blocks``, ``mid_block`` and ``up_blocks`` so that a cached step can skip
the deep blocks. Compiling ``unet.forward`` would therefore leave a cached step in eager mode.
Compiling every leaf block in place (``nn.Module.compile``) makes both paths run compiled code,
at the price of no fusion across blocks.

Pitfalls
========
* Dynamo's ``recompile_limit`` (8 by default) is per code object; the ~20 leaf blocks of one U-Net
  share a few code objects with different shapes, so the limit is hit and dynamo falls back to
  eager **silently**. Eager output is exact too, so no exactness check would notice. We raise the
  limit and turn on ``fail_on_recompile_limit_hit``, so a fallback is an error, not a number.
* Every new input shape (batch size) recompiles (``dynamic=False``): compile once, then time.
* Inductor on CPU needs a C++ compiler. `compile_available` probes a tiny module first and the
  study records ``compile_status`` instead of crashing.
"""

from __future__ import annotations

from torch import nn

RECOMPILE_LIMIT = 256
"""Enough for every leaf shape of the zoo's U-Nets at two batch sizes."""


def leaf_types() -> tuple[type[nn.Module], ...]:
    """The diffusers block classes that are compiled: resnet, attention, resampling, embedding."""
    from diffusers.models.attention_processor import Attention
    from diffusers.models.embeddings import TimestepEmbedding
    from diffusers.models.resnet import Downsample2D, ResnetBlock2D, Upsample2D

    return (ResnetBlock2D, Attention, Downsample2D, Upsample2D, TimestepEmbedding)


def _configure_dynamo() -> None:
    import torch._dynamo

    cfg = torch._dynamo.config
    cfg.recompile_limit = max(cfg.recompile_limit, RECOMPILE_LIMIT)
    cfg.accumulated_recompile_limit = max(cfg.accumulated_recompile_limit, 4 * RECOMPILE_LIMIT)
    cfg.fail_on_recompile_limit_hit = True


def compile_blocks(model: nn.Module, backend: str = "inductor") -> nn.Module:
    """Compile every leaf block of ``model`` in place (``dynamic=False``) and return ``model``.

    ``ValueError`` if the model has no such block (nothing would be compiled)."""
    _configure_dynamo()
    leaves = [m for m in model.modules() if isinstance(m, leaf_types())]
    if not leaves:
        raise ValueError(f"compile_blocks: {type(model).__name__} has no diffusers leaf block")
    for leaf in leaves:
        leaf.compile(backend=backend, dynamic=False)
    return model


def compile_available(backend: str) -> tuple[bool, str]:
    """``(True, "ok")`` if ``backend`` compiles and runs a tiny module here, else ``(False,
    first line of the error)``."""
    import torch

    probe = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.SiLU())
    try:
        fn = torch.compile(probe, backend=backend, dynamic=False)
        with torch.no_grad():
            fn(torch.zeros(1, 1, 4, 4))
    except Exception as exc:  # any backend failure means "not available here"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return False, first[:200]
    return True, "ok"
