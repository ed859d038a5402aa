"""Gradient checkpointing: keep fewer activations for the backward pass, recompute the rest.

The idea
========
Back-propagation needs, for every operation, the tensors its derivative depends on (the input
of a convolution, the output of a SiLU, the statistics of a normalisation). Autograd keeps them
from the forward pass until the backward pass has used them, so a training step holds the
activations of the *whole* network at once; for diffusion U-Nets at high resolution this, not
the weights, is what fills the accelerator. Gradient (activation) checkpointing keeps only the
inputs of chosen regions - the **checkpoints** - and runs each region's forward pass a second
time during the backward pass, just before its gradient is needed. The gradients are the same
(the same floating-point operations run twice); only memory and time change.

The mathematics (Chen et al. 2016)
==================================
A chain of ``n`` blocks, each keeping ``a`` activations of size ``s``. Without checkpointing
the step holds ``a n s``. Cut the chain into ``k`` segments of ``m = n / k`` blocks and keep only
segment inputs: after the forward pass ``k s`` bytes remain; during the backward pass one
segment at a time is recomputed and holds ``a m s``. The peak is about
``(k + a n / k) s``, smallest at ``k = sqrt(a n)``: **O(sqrt(n)) memory for one extra forward
pass**. If a backward pass costs about two forward passes, the step costs ``(1 + 2 + 1) / 3 =
4/3`` of the plain one. Applying the idea recursively reaches ``O(log n)`` memory at
``O(n log n)`` compute; Griewank & Walther's *revolve* gives the optimal schedule for a given
number of checkpoints.

What this package shows
=======================
* [`reference.gradient_checkpointing.api`][reference.gradient_checkpointing.api] - the public shape:
  ``apply_gradient_checkpointing(unet, CheckpointConfig(policy=...))`` patches a
  ``diffusers.UNet2DModel`` in place with one of four placements - diffusers' own
  ``enable_gradient_checkpointing()`` (ResNet blocks), every ResNet and attention block, every
  down/mid/up stage, or ``round(sqrt(n))`` segments of stages - and
  ``remove_gradient_checkpointing`` undoes it.
* [`reference.gradient_checkpointing.policies`][reference.gradient_checkpointing.policies] - the
  placements themselves
  ([`checkpoint_modules`][reference.gradient_checkpointing.policies.checkpoint_modules],
  [`staged_forward`][reference.gradient_checkpointing.policies.staged_forward]) and a plain chain of
  residual blocks ([`make_chain`][reference.gradient_checkpointing.policies.make_chain],
  ``checkpoint_sequential``) where the ``sqrt(n)`` law is exact.
* [`reference.gradient_checkpointing.memory`][reference.gradient_checkpointing.memory] - the peak of
  live activation bytes over the whole step, next to the harness's count of bytes retained after the
  forward pass.
* [`reference.gradient_checkpointing.measure`][reference.gradient_checkpointing.measure] - one
  training step per policy (retained and peak memory, FLOPs with recomputation, gradients), the
  chain law and peak RSS;
  [`reference.gradient_checkpointing.figures`][reference.gradient_checkpointing.figures] draws them;
  [`reference.gradient_checkpointing.bench`][reference.gradient_checkpointing.bench] is the
  benchmark (``python -m reference.gradient_checkpointing``, see ``--help``), with interleaved step
  times and gradient accumulation as the matched-memory control.

Usage:

    from reference.gradient_checkpointing import CheckpointConfig, apply_gradient_checkpointing
    apply_gradient_checkpointing(unet, CheckpointConfig(policy="sqrt"))
    loss = F.mse_loss(unet(x_t, t, class_labels=y).sample, noise)
    loss.backward()  # each segment's forward runs again here, just before its gradient

When to use it
==============
When activations, not weights or optimizer state, limit the batch size, resolution or model
size of *training* or fine-tuning (Stable Diffusion fine-tuning on a 16 GB GPU, video models).
It does nothing for sampling (no backward pass); the memory of parameters, gradients and Adam
moments is unchanged (use ZeRO/FSDP sharding, offloading or 8-bit optimizers for those).

Pitfalls
========
* **Randomness.** Dropout in a recomputed region must draw the same mask twice. PyTorch stashes
  and restores the RNG state around a region (``preserve_rng_state=True``, the default);
  switching it off changes the gradients (see the tests).
* **Side effects run twice.** BatchNorm running statistics or any counter updated in
  ``forward`` are updated again by the recomputation (diffusion U-Nets use GroupNorm: safe).
* **use_reentrant.** Use ``use_reentrant=False``: the legacy reentrant variant rejects keyword
  arguments, returns no parameter gradients when no input requires grad and does not work with
  ``torch.autograd.grad``.
* **Retained is not peak.** Coarse segments retain little but bring all of a segment's
  activations back at once in the backward pass; in a U-Net the skip tensors (and their
  gradients) stay alive whatever the policy, and memory is concentrated at full resolution, so
  segments should be balanced by bytes, not by count (as Chen et al.'s greedy, budgeted
  segmentation does).
* **Counting.** ``torch.utils.checkpoint`` saves positional tensor inputs through autograd but
  keeps tensors inside tuples or keyword arguments in a closure, invisible to
  ``saved_tensors_hooks``; pass tensors positionally to measure them.
* Don't checkpoint the last segment of a chain: it would be recomputed at once
  (``checkpoint_sequential`` leaves it out).

Sources
=======
* Chen, Xu, Zhang, Guestrin. *Training Deep Nets with Sublinear Memory Cost.* 2016,
  arXiv:1604.06174.
* Griewank, Walther. *Algorithm 799: revolve.* ACM TOMS 26(1), 2000, doi:10.1145/347837.347846.
* Korthikanti et al. *Reducing Activation Recomputation in Large Transformer Models.* 2022,
  arXiv:2205.05198 (selective recomputation: recompute only cheap, memory-heavy operations).

In production
=============
``torch.utils.checkpoint.checkpoint`` / ``checkpoint_sequential`` (and
``create_selective_checkpoint_contexts`` for per-operation policies); diffusers'
``ModelMixin.enable_gradient_checkpointing()`` (the ``--gradient_checkpointing`` flag of its
training scripts); ``torch.distributed.algorithms._checkpoint.checkpoint_wrapper
.apply_activation_checkpointing`` with FSDP; ``jax.checkpoint`` (``jax.remat``) with
``jax.checkpoint_policies``; DeepSpeed and Megatron-LM activation checkpointing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .api import (
        POLICIES,
        CheckpointConfig,
        apply_gradient_checkpointing,
        remove_gradient_checkpointing,
        stage_segments,
    )
    from .measure import chain_point, measure_policy, prepare, training_batch
    from .memory import ActivationMeter, peak_activation_bytes
    from .policies import (
        chain_loss,
        checkpoint_modules,
        even_segments,
        make_chain,
        remove_module_checkpoints,
        sqrt_segments,
        staged_forward,
        unet_stages,
    )

__all__ = [
    "POLICIES",
    "ActivationMeter",
    "CheckpointConfig",
    "apply_gradient_checkpointing",
    "chain_loss",
    "chain_point",
    "checkpoint_modules",
    "even_segments",
    "make_chain",
    "measure_policy",
    "peak_activation_bytes",
    "prepare",
    "remove_gradient_checkpointing",
    "remove_module_checkpoints",
    "sqrt_segments",
    "stage_segments",
    "staged_forward",
    "training_batch",
    "unet_stages",
]

__getattr__ = attributes(__name__)
