"""Peak activation memory of a training step, measured exactly on any device (here: a CPU).

Why a second meter
==================
`reference.harness.bytes_saved_for_backward` counts what autograd *retains* at the end of
the forward pass (every tensor packed by ``saved_tensors_hooks``; a non-reentrant checkpoint
region contributes its inputs, which ``torch.utils.checkpoint`` saves through a no-op autograd
function). That is the quantity checkpointing shrinks, but it is not the whole story: during the
backward pass each checkpointed region is run again and its activations are alive while its
gradient is computed. The memory a step really needs is the **peak** of live activation bytes
over forward *and* backward - Chen et al.'s ``O(sqrt(n))`` bound is about that peak.

How this meter works ====================
[`ActivationMeter`][reference.gradient_checkpointing.memory.ActivationMeter] is a
``TorchDispatchMode``: every tensor an operator returns (forward, backward, recomputation) has its
storage registered once, with its size, and a weak reference whose callback subtracts the size when
the storage is freed. ``live`` is then the number of bytes of storages created inside the step that
are still alive, ``peak`` its maximum. Storages that existed before (parameters, pre-allocated
``.grad`` buffers, the batch) are excluded by ``data_ptr``. Allocator caching, fragmentation and
operator workspaces are invisible to it (on CUDA, ``torch.cuda.max_memory_allocated`` measures
those; PyTorch's own ``torch.distributed._tools.mem_tracker.MemTracker`` uses the same
dispatch-plus-weakref idea).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class ActivationMeter(TorchDispatchMode):
    """Track live bytes of storages created by operators while the mode is active."""

    def __init__(self, exclude: Iterable[torch.Tensor] = ()) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._excluded = {t.untyped_storage().data_ptr() for t in exclude}
        self._refs: dict[int, weakref.ref[Any]] = {}

    def _register(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        key = id(storage)
        if key in self._refs or storage.data_ptr() in self._excluded or storage.nbytes() == 0:
            return
        size = storage.nbytes()

        def freed(_: Any, key: int = key, size: int = size) -> None:
            self.live -= size
            self._refs.pop(key, None)

        self._refs[key] = weakref.ref(storage, freed)
        self.live += size
        self.peak = max(self.peak, self.live)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.layout == torch.strided:
                self._register(t)
        return out


def peak_activation_bytes(step: Callable[[], Any], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Peak live bytes of the storages that ``step()`` (a forward and backward pass) creates.

    ``exclude``: tensors whose storages already exist and must not count (parameters, their
    ``.grad`` buffers, the batch). Give the parameters ``.grad`` buffers beforehand (one warm-up
    step, then ``zero_grad(set_to_none=False)``) so that gradients accumulate in place and the
    peak measures activations and activation gradients, not the one-off allocation of
    parameter gradients.
    """
    with ActivationMeter(exclude) as meter:
        step()
    return meter.peak
