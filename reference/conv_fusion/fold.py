"""The BatchNorm fold and the ``torch.fx`` rewrite that applies it to any eval-mode model.

See [`reference.conv_fusion`][reference.conv_fusion] for the idea, the math and the pitfalls.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import fx, nn
from torch.nn import functional as F

TOLERANCE = 1e-5
"""Largest max-abs difference accepted between a fused model and the original."""

CONV_TYPES = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
BN_TYPES = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
_RELU_FUNCTIONS = (F.relu, torch.relu)


# --------------------------------------------------------------------------- the fold


def fold_bn_weights(
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    bn: nn.modules.batchnorm._BatchNorm,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(W', b')`` with ``W' = s W``, ``b' = s (b - mu) + beta``, ``s = gamma / sqrt(var + eps)``.

    ``weight`` is a convolution weight ``[C_out, C_in / groups, *kernel]``; ``bias`` may be
    ``None`` (treated as zero). Computed in float64 and cast back, so the fold adds no rounding
    error of its own beyond the final cast.
    """
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("fold_bn_weights: the BatchNorm has no running statistics")
    dtype = weight.dtype
    w = weight.detach().double()
    b = w.new_zeros(w.shape[0]) if bias is None else bias.detach().double()
    gamma = torch.ones_like(b) if bn.weight is None else bn.weight.detach().double()
    beta = torch.zeros_like(b) if bn.bias is None else bn.bias.detach().double()
    # Ioffe & Szegedy 2015, Algorithm 2, step 11 (inference BN):
    # y = gamma / sqrt(Var[x] + eps) * x + (beta - gamma E[x] / sqrt(Var[x] + eps))
    scale = gamma / torch.sqrt(bn.running_var.double() + bn.eps)  # s = gamma / sqrt(var + eps)
    w_folded = w * scale.reshape(-1, *([1] * (w.dim() - 1)))  # W' = s W
    b_folded = (b - bn.running_mean.double()) * scale + beta  # b' = s (b - mu) + beta
    return w_folded.to(dtype), b_folded.to(dtype)


def _check_foldable(conv: nn.Module, bn: nn.Module) -> str | None:
    """Why ``conv -> bn`` cannot be folded, or ``None`` if it can."""
    if not isinstance(conv, CONV_TYPES):
        return f"{type(conv).__name__} is not a (non-transposed) convolution"
    if not isinstance(bn, BN_TYPES):
        return f"{type(bn).__name__} is not a BatchNorm"
    if conv.training or bn.training:
        return "module in training mode (call model.eval() first)"
    if bn.running_mean is None or bn.running_var is None:
        return "BatchNorm without running statistics (track_running_stats=False)"
    if bn.num_features != conv.out_channels:
        return "BatchNorm width differs from the convolution's output channels"
    if conv.weight.dim() - 2 != _bn_spatial_dims(bn):
        return "convolution and BatchNorm have different spatial dimensions"
    return None


def _bn_spatial_dims(bn: nn.Module) -> int:
    return {nn.BatchNorm1d: 1, nn.BatchNorm2d: 2, nn.BatchNorm3d: 3}[type(bn)]


def fold_conv_bn(conv: nn.Module, bn: nn.Module) -> nn.Module:
    """A new convolution equal to ``bn(conv(x))`` for eval-mode ``conv`` and ``bn``.

    Raises ``ValueError`` naming the reason when the pair cannot be folded.
    """
    problem = _check_foldable(conv, bn)
    if problem:
        raise ValueError(f"fold_conv_bn: {problem}")
    fused = copy.deepcopy(conv)
    w, b = fold_bn_weights(conv.weight, conv.bias, bn)
    fused.weight = nn.Parameter(w, requires_grad=conv.weight.requires_grad)
    fused.bias = nn.Parameter(b, requires_grad=conv.weight.requires_grad)
    return fused


class ConvReLU(nn.Module):
    """A (folded) convolution followed by an in-place ReLU on its fresh output.

    Eager PyTorch on a CPU has no public convolution-with-ReLU kernel; running the ReLU in place
    reuses the convolution's output buffer (no second activation tensor is allocated). Compilers
    (Inductor, TensorRT) fuse the ReLU into the convolution's epilogue.
    """

    def __init__(self, conv: nn.Module) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu_(self.conv(x))


# --------------------------------------------------------------------------- the fx rewrite


@dataclass
class FusionReport:
    """What [`fuse_conv_bn_relu`][reference.conv_fusion.fold.fuse_conv_bn_relu] did: folded pairs,
    fused ReLUs, skipped candidates."""

    folded: list[str] = field(default_factory=list)
    relu_fused: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _is_relu(node: fx.Node, modules: dict[str, nn.Module]) -> bool:
    if node.op == "call_module":
        return isinstance(modules.get(str(node.target)), nn.ReLU)
    if node.op == "call_function":
        return node.target in _RELU_FUNCTIONS
    return node.op == "call_method" and node.target == "relu"


def _module_use_counts(graph: fx.Graph) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in graph.nodes:
        if node.op == "call_module":
            counts[str(node.target)] = counts.get(str(node.target), 0) + 1
    return counts


def trace(model: nn.Module) -> fx.GraphModule:
    """``torch.fx.symbolic_trace`` with a one-line error if the model cannot be traced."""
    try:
        return fx.symbolic_trace(model)
    except Exception as exc:  # fx raises many types (TraceError, TypeError, ...)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(
            f"fuse_conv_bn_relu: torch.fx cannot trace {type(model).__name__} ({first})"
        ) from None


def fuse_conv_bn_relu(
    model: nn.Module, *, fuse_relu: bool = True
) -> tuple[fx.GraphModule, FusionReport]:
    """Fold every ``conv -> BatchNorm [-> ReLU]`` of an eval-mode ``model`` (fx graph rewrite).

    The input model is not modified: it is traced (a copy of its graph and modules), the traced
    graph is rewritten and a new ``GraphModule`` returned with a
    [`FusionReport`][reference.conv_fusion.fold.FusionReport].

    Args:
        model: any ``nn.Module`` in eval mode that ``torch.fx.symbolic_trace`` can trace.
        fuse_relu: also replace ``folded conv -> ReLU`` by
            [`ConvReLU`][reference.conv_fusion.fold.ConvReLU].

    Raises:
        ValueError: the model is in training mode or cannot be traced.
    """
    if model.training:
        raise ValueError("fuse_conv_bn_relu: the model is in training mode; call .eval() first")
    gm = trace(copy.deepcopy(model))
    modules = dict(gm.named_modules())
    uses = _module_use_counts(gm.graph)
    report = FusionReport()
    for bn_node in list(gm.graph.nodes):
        if bn_node.op != "call_module" or not isinstance(modules.get(bn_node.target), BN_TYPES):
            continue
        conv_node = bn_node.args[0] if bn_node.args else None
        if not isinstance(conv_node, fx.Node) or conv_node.op != "call_module":
            continue
        conv = modules[str(conv_node.target)]
        if not isinstance(conv, CONV_TYPES):
            continue
        name = str(conv_node.target)
        problem = _check_foldable(conv, modules[str(bn_node.target)])
        if problem is None and len(conv_node.users) != 1:
            problem = "the convolution's output is also used elsewhere"
        if problem is None and uses[name] != 1:
            problem = "the convolution module is called more than once"
        if problem is not None:
            report.skipped[name] = problem
            continue
        folded = fold_conv_bn(conv, modules[str(bn_node.target)])
        users = list(bn_node.users)
        relu = users[0] if fuse_relu and len(users) == 1 and _is_relu(users[0], modules) else None
        gm.add_submodule(name, ConvReLU(folded) if relu is not None else folded)
        bn_node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(bn_node)
        if relu is not None:
            relu.replace_all_uses_with(conv_node)
            gm.graph.erase_node(relu)
            report.relu_fused.append(name)
        report.folded.append(name)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm.eval(), report


# --------------------------------------------------------------------------- library oracles


def conv_bn_relu_groups(model: nn.Module) -> list[list[str]]:
    """Qualified names of consecutive ``[conv, bn(, relu)]`` children of ``nn.Sequential``s.

    The argument ``torch.ao.quantization.fuse_modules`` expects (it fuses named modules only).
    """
    groups: list[list[str]] = []
    for prefix, module in model.named_modules():
        if not isinstance(module, nn.Sequential):
            continue
        children = list(module.named_children())
        for i in range(len(children) - 1):
            (n0, m0), (n1, m1) = children[i], children[i + 1]
            if isinstance(m0, CONV_TYPES) and isinstance(m1, BN_TYPES):
                names = [n0, n1]
                if i + 2 < len(children) and isinstance(children[i + 2][1], nn.ReLU):
                    names.append(children[i + 2][0])
                groups.append([f"{prefix}.{n}" if prefix else n for n in names])
    return groups


def fuse_with_torch_ao(model: nn.Module) -> nn.Module:
    """The same fusion with ``torch.ao.quantization.fuse_modules`` (the maintained API)."""
    from torch.ao.quantization import fuse_modules

    return fuse_modules(copy.deepcopy(model).eval(), conv_bn_relu_groups(model), inplace=False)


# --------------------------------------------------------------------------- helpers


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max |a - b|`` as a Python float."""
    return float((a.detach().float() - b.detach().float()).abs().max())


@dataclass(frozen=True)
class FusionConfig:
    """What [`apply_conv_fusion`][reference.conv_fusion.fold.apply_conv_fusion] fuses: always ``conv
    -> BatchNorm`` (the weight fold); with ``fuse_relu`` also ``folded conv -> ReLU`` into
    [`ConvReLU`][reference.conv_fusion.fold.ConvReLU]."""

    fuse_relu: bool = True


def apply_conv_fusion(
    model: nn.Module, config: FusionConfig | None = None
) -> tuple[fx.GraphModule, FusionReport]:
    """The public shape of the technique (like diffusers' ``apply_*`` hooks): a fused copy of
    the eval-mode ``model`` and its [`FusionReport`][reference.conv_fusion.fold.FusionReport]
    ([`fuse_conv_bn_relu`][reference.conv_fusion.fold.fuse_conv_bn_relu])."""
    return fuse_conv_bn_relu(model, fuse_relu=(config or FusionConfig()).fuse_relu)
