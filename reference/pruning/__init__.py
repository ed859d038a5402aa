"""Pruning: remove channels of the zoo U-Net so that a smaller dense model does the work.

Idea
====
Trained networks are over-parameterised: many channels contribute little to the output. Two
families remove them:

* **Structured pruning** deletes whole channels (a convolution's output filter together with
  everything that reads it). The result is a *physically smaller dense* model: fewer FLOPs,
  fewer parameters and - because ordinary dense kernels run on smaller tensors - lower latency
  on any hardware. A convolution with ``C_in -> C_out`` channels costs ``~ C_in C_out``, so
  removing a fraction ``p`` of every layer's channels leaves ``~ (1 - p)^2`` of the FLOPs
  (0.25x at ``p = 0.5``).
* **Unstructured pruning** zeroes individual small weights (Han et al. 2015, arXiv:1506.02626,
  [`unstructured`][reference.pruning.unstructured]). Tensor shapes do not change, so dense CPU/GPU
  kernels multiply the zeros anyway: sparsity, but no speed, unless a sparse kernel and a high, or
  hardware-friendly (2:4), sparsity are used.

Which channels? (importance)
============================
* **L1 norm** of the filter weights (Li et al. 2016, arXiv:1608.08710): cheap, data-free.
* **First-order Taylor**: the loss change from removing channel ``c`` with weights ``w_c`` is
  approximately ``|dL/dw_c . w_c|`` (Molchanov et al. 2019, arXiv:1906.10771). Diff-Pruning
  (Fang et al. 2023, arXiv:2305.10924) uses it with the *diffusion* loss summed over timesteps,
  dropping the noisiest steps whose gradients carry little information; here gradients are
  accumulated over calibration batches at ``t < 600`` of 1000 (a fixed cut-off instead of the
  paper's threshold on the accumulated loss change).

The hard part: dependencies
===========================
In a U-Net a channel is not owned by one layer. Removing output channel ``c`` of a convolution
forces removing input channel ``c`` of every consumer, the matching GroupNorm channel (and the
GroupNorm's groups must stay equal-sized), the same channel of the residual branch it is added
to, the matching slice of every decoder concatenation that includes it, and, for the
time/class embedding, a column of every ResNet block's ``time_emb_proj``; attention projections
must shrink every head alike. DepGraph (Fang et al. 2023, arXiv:2301.12900), implemented in the
maintained library **Torch-Pruning** (``torch_pruning``), traces the model and builds these
groups automatically. It works on diffusers' ``UNet2DModel`` with three repairs this module
makes ([`sync_diffusers_attributes`][reference.pruning.structured.sync_diffusers_attributes]):
    diffusers blocks keep
channel counts as attributes (``Downsample2D.channels`` is asserted in ``forward``), and the
attention's softmax temperature ``1 / sqrt(d_head)`` is derived from the *current* head size,
so shrinking heads from 32 to 16 dimensions would silently sharpen every attention map unless
the query projection is rescaled by ``sqrt(16 / 32)``. With uniform pruning the result is again
a plain ``UNet2DModel`` with narrower ``block_out_channels`` (rebuildable from a configuration,
[`build_pruned_unet`][reference.pruning.structured.build_pruned_unet]).

Fine-tuning and the key control
===============================
Pruning damages the model; a short fine-tuning with the original objective repairs it (Diff-
Pruning: about 50% fewer FLOPs at 10-20% of the original training cost). The question that
matters is whether the teacher's weights were worth keeping: the control trains **the same
pruned architecture from scratch with the same budget** (Liu et al. 2018, arXiv:1810.05270,
showed that for classifiers trained with a *full* budget this control often catches up). Both
are zoo models ([`zoo_specs`][reference.pruning.zoo_specs]).

A pruned sampler must also beat the cheapest way of spending the same compute without any
training: the **unpruned teacher with fewer steps**. At ``S`` steps a prune with a fraction
``f`` of the teacher's FLOPs per forward costs what ``k = round(S f)`` teacher steps cost, so the
benchmark's second control is DDIM with ``k`` steps (same FLOPs; on an overhead-bound CPU it is
even faster, since it also runs fewer operators).

Pitfalls
========
* Tiny models on a CPU are overhead-bound: 4x fewer FLOPs do not give 4x less latency, because
  the number of operators (and their fixed cost) is unchanged.
* GroupNorm after a decoder concatenation: when the concatenation boundary falls inside a
  group and the two inputs are pruned in different patterns, DepGraph (torch_pruning 1.6) can
  move a few channels into a neighbouring group (3 of 72 at ratio 0.25 on the zoo U-Net,
  none at 0.5; tested). The model stays valid and fine-tuning absorbs it, but it is not an
  exact sub-network of the original there.
* Uniform per-layer ratios are simple; global ranking (``global_pruning=True``) can remove
  whole stages if importance scales differ between layers.
* Never judge unstructured pruning by its parameter count: measure latency.

Production: Torch-Pruning (``tp.pruner.BasePruner``, ``tp.importance.TaylorImportance``),
``torch.nn.utils.prune`` (masks), NVIDIA's 2:4 sparsity (``torch.sparse.to_sparse_semi_structured``
on GPUs), the Diff-Pruning code base built on Torch-Pruning.

Package ======= ``reference/pruning/``: [`structured`][reference.pruning.structured] (DepGraph
pruning of a ``UNet2DModel``, importance, rebuilding),
[`unstructured`][reference.pruning.unstructured] (magnitude pruning), [`api`][reference.pruning.api]
(``PruningConfig`` + ``apply_pruning(model, config)``, the public shape),
[`zoo_specs`][reference.pruning.zoo_specs] (the zoo's fine-tuned prune and its from-scratch
control), [`measure`][reference.pruning.measure] and [`bench`][reference.pruning.bench] (the
benchmark). Run ``python -m reference.pruning`` for the demo, ``--bench`` for the benchmark
(``--help`` for options):

    from reference import zoo
    from reference.pruning import PruningConfig, apply_pruning

    small, report = apply_pruning(zoo.load_teacher(), PruningConfig(ratio=0.5, criterion="l1"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .api import PruningConfig, apply_pruning
    from .structured import (
        CRITERIA,
        PruneReport,
        accumulate_gradients,
        build_pruned_unet,
        calibration_batches,
        count_macs,
        diffusion_loss,
        head_dims,
        importance,
        prune_unet,
        pruned_config,
        rebuild,
        sync_diffusers_attributes,
    )
    from .unstructured import magnitude_prune, weight_sparsity
    from .zoo_specs import ZOO_SPECS, load_pruned

__all__ = [
    "CRITERIA",
    "ZOO_SPECS",
    "PruneReport",
    "PruningConfig",
    "accumulate_gradients",
    "apply_pruning",
    "build_pruned_unet",
    "calibration_batches",
    "count_macs",
    "diffusion_loss",
    "head_dims",
    "importance",
    "load_pruned",
    "magnitude_prune",
    "prune_unet",
    "pruned_config",
    "rebuild",
    "sync_diffusers_attributes",
    "weight_sparsity",
]

__getattr__ = attributes(__name__)
