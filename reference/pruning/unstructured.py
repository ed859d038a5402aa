"""Unstructured magnitude pruning with ``torch.nn.utils.prune``: sparsity without speed.

Han et al. 2015 (arXiv:1506.02626) zero the individual weights of smallest magnitude. The tensor
keeps its shape, so a dense kernel (oneDNN/MKL convolutions and GEMMs on a CPU, cuDNN on a GPU)
still multiplies every zero: the model is *sparse* but not *smaller* or *faster*. Speed needs
sparse kernels and high sparsity (or hardware patterns such as 2:4 structured sparsity); memory
needs a sparse storage format. This module measures exactly that contrast.
"""

from __future__ import annotations

import copy

from torch import nn
from torch.nn.utils import prune

PRUNABLE = (nn.Conv2d, nn.Linear)


def magnitude_prune(model: nn.Module, amount: float, *, make_permanent: bool = True) -> nn.Module:
    """A copy of ``model`` with the ``amount`` fraction of smallest-|w| weights set to zero.

    Global over all Conv2d/Linear weights (``prune.global_unstructured`` with
    ``prune.L1Unstructured``), so layers with small weights lose more. With
    ``make_permanent`` the masks are folded into the weights (``prune.remove``): the result is
    a plain dense model whose weight tensors contain zeros.
    """
    if not 0.0 <= amount < 1.0:
        raise ValueError(f"unstructured pruning amount must be in [0, 1), got {amount}")
    out = copy.deepcopy(model)
    params = [(m, "weight") for m in out.modules() if isinstance(m, PRUNABLE)]
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=amount)
    if make_permanent:
        for m, name in params:
            prune.remove(m, name)
    return out.eval()


def weight_sparsity(model: nn.Module) -> float:
    """Fraction of exactly-zero entries among the Conv2d/Linear weights."""
    zeros = total = 0
    for m in model.modules():
        if isinstance(m, PRUNABLE):
            w = m.weight.detach()
            zeros += int((w == 0).sum())
            total += w.numel()
    return zeros / max(1, total)
