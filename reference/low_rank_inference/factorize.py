"""Truncated-SVD factorisation of Linear and convolution layers, rank selection, model surgery.

See :mod:`reference.low_rank_inference` for the idea, the math and the pitfalls.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

Factorizable = nn.Linear | nn.Conv2d
"""Layers this module can factorise (``nn.Conv2d`` with ``groups == 1``)."""


# --------------------------------------------------------------------------- the matrix view


def weight_matrix(layer: nn.Module) -> torch.Tensor:
    """The layer's weight as a matrix ``[out, in]`` (a k x k conv: ``[out, in * k * k]``)."""
    if isinstance(layer, nn.Linear):
        return layer.weight.detach()
    if isinstance(layer, nn.Conv2d):
        if layer.groups != 1:
            raise ValueError("grouped convolutions are not factorised (groups != 1)")
        return layer.weight.detach().reshape(layer.out_channels, -1)
    raise ValueError(f"cannot factorise a {type(layer).__name__}")


def max_rank(layer: nn.Module) -> int:
    """``min(out, in)`` of the matrix view: the rank at which the factorisation is exact."""
    m = weight_matrix(layer)
    return min(m.shape)


def break_even_rank(layer: nn.Module) -> int:
    """Largest rank whose two factors have fewer multiply-adds than the dense layer.

    Dense: ``out * in`` per output position; factorised: ``r * (in + out)``.
    """
    out_f, in_f = weight_matrix(layer).shape
    return max(0, (out_f * in_f - 1) // (out_f + in_f))


@dataclass
class Spectrum:
    """Singular values ``s`` (descending) and the factors of ``W M = U diag(s) V^T``.

    ``M`` is the identity for plain SVD, or the Cholesky factor of the input second-moment
    matrix for activation-aware SVD (then ``M_inv`` undoes it).
    """

    u: torch.Tensor
    s: torch.Tensor
    vh: torch.Tensor
    m_inv: torch.Tensor | None = None

    @property
    def energy(self) -> torch.Tensor:
        """Cumulative fraction of ``sum(s^2)`` kept at ranks 1..len(s)."""
        e = self.s.double() ** 2
        return torch.cumsum(e, 0) / e.sum().clamp_min(1e-300)

    def error_at(self, rank: int) -> float:
        """Relative Frobenius error ``||W M - W_r M|| / ||W M||`` of keeping ``rank`` values."""
        e = self.s.double() ** 2
        return float(torch.sqrt(e[rank:].sum() / e.sum().clamp_min(1e-300)))


def _input_vectors(inputs: torch.Tensor, layer: nn.Module) -> torch.Tensor:
    """The vectors ``[M, in]`` the layer's matrix multiplies: rows (Linear) or patches (conv)."""
    if isinstance(layer, nn.Conv2d):
        cols = F.unfold(
            inputs,
            layer.kernel_size,
            dilation=layer.dilation,
            padding=layer.padding,
            stride=layer.stride,
        )  # [N, in*k*k, L]
        return cols.transpose(1, 2).reshape(-1, cols.shape[1])
    return inputs.reshape(-1, inputs.shape[-1])


def input_second_moment(inputs: torch.Tensor, layer: nn.Module) -> torch.Tensor:
    """``E[x x^T]`` of the vectors the layer's matrix multiplies (float64, ``[in, in]``).

    For a Linear those are the rows of ``inputs`` (any leading shape); for a convolution the
    unfolded patches (``F.unfold`` with the layer's kernel, stride, padding, dilation).
    """
    x = _input_vectors(inputs, layer).double()
    return x.T @ x / max(1, x.shape[0])


def spectrum(layer: nn.Module, second_moment: torch.Tensor | None = None) -> Spectrum:
    """SVD of the layer's matrix (plain), or of ``W L`` with ``C = L L^T`` (activation-aware).

    Activation-aware truncation minimises the error of the layer's *outputs* on the calibration
    inputs, ``E ||(W - W_r) x||^2 = ||(W - W_r) L||_F^2``, instead of the weight error: the
    whitening of SVD-LLM (Wang et al. 2024, arXiv:2403.07378). A small ridge (1e-6 of the mean
    diagonal) keeps ``C`` invertible when some input directions never occur.
    """
    w = weight_matrix(layer).double()
    if second_moment is None:
        u, s, vh = torch.linalg.svd(w, full_matrices=False)
        return Spectrum(u, s, vh)
    c = second_moment.double()
    ridge = 1e-6 * float(c.diagonal().mean().clamp_min(1e-12))
    chol = torch.linalg.cholesky(c + ridge * torch.eye(c.shape[0], dtype=torch.float64))
    u, s, vh = torch.linalg.svd(w @ chol, full_matrices=False)
    return Spectrum(u, s, vh, torch.linalg.inv(chol))


# --------------------------------------------------------------------------- the factorised layers


class LowRankLinear(nn.Module):
    """``y = B (A x) + b``: ``A`` = ``Linear(in, r, bias=False)``, ``B`` = ``Linear(r, out)``."""

    def __init__(self, in_features: int, out_features: int, rank: int, bias: bool) -> None:
        super().__init__()
        self.rank = rank
        self.first = nn.Linear(in_features, rank, bias=False)
        self.second = nn.Linear(rank, out_features, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x))


class LowRankConv2d(nn.Module):
    """A k x k convolution to ``r`` channels (the original stride/padding/dilation), then a
    1 x 1 convolution to the output channels carrying the bias (Denton et al. 2014,
    arXiv:1404.0736)."""

    def __init__(self, conv: nn.Conv2d, rank: int) -> None:
        super().__init__()
        self.rank = rank
        self.first = nn.Conv2d(
            conv.in_channels,
            rank,
            conv.kernel_size,
            stride=conv.stride,
            padding=conv.padding,
            dilation=conv.dilation,
            bias=False,
            padding_mode=conv.padding_mode,
        )
        self.second = nn.Conv2d(rank, conv.out_channels, 1, bias=conv.bias is not None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x))


@torch.no_grad()
def factorize_layer(
    layer: nn.Module, rank: int, spec: Spectrum | None = None
) -> LowRankLinear | LowRankConv2d:
    """The rank-``rank`` factorisation of ``layer`` from its (plain or whitened) spectrum.

    ``W_r = U_r diag(s_r) V_r^T M^{-1}`` split symmetrically: ``A = diag(sqrt s_r) V_r^T M^{-1}``
    (first factor), ``B = U_r diag(sqrt s_r)`` (second factor, with the original bias).
    ``rank == max_rank(layer)`` reproduces the layer to float rounding.
    """
    full = max_rank(layer)
    if not 1 <= rank <= full:
        raise ValueError(f"rank must be in 1..{full} for this {type(layer).__name__}, got {rank}")
    spec = spec or spectrum(layer)
    root = spec.s[:rank].sqrt()
    a = root[:, None] * spec.vh[:rank]
    if spec.m_inv is not None:
        a = a @ spec.m_inv
    b = spec.u[:, :rank] * root[None, :]
    dtype = layer.weight.dtype
    if isinstance(layer, nn.Linear):
        new: LowRankLinear | LowRankConv2d = LowRankLinear(
            layer.in_features, layer.out_features, rank, layer.bias is not None
        )
        new.first.weight.copy_(a.to(dtype))
        new.second.weight.copy_(b.to(dtype))
    else:
        new = LowRankConv2d(layer, rank)
        new.first.weight.copy_(a.reshape(rank, *layer.weight.shape[1:]).to(dtype))
        new.second.weight.copy_(b[:, :, None, None].to(dtype))
    if layer.bias is not None:
        new.second.bias.copy_(layer.bias)
    return new.to(layer.weight.device)


# --------------------------------------------------------------------------- rank selection


def rank_for_energy(spec: Spectrum, threshold: float) -> int:
    """Smallest rank keeping at least ``threshold`` of ``sum(s^2)`` (0 < threshold <= 1)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"energy threshold must be in (0, 1], got {threshold}")
    kept = spec.energy
    return int(min(len(kept), int((kept < threshold - 1e-12).sum()) + 1))


def ranks_for_budget(
    spectra: Mapping[str, Spectrum],
    costs: Mapping[str, tuple[int, int]],
    budget: float,
) -> dict[str, int]:
    """Ranks that spend ``budget`` x the dense multiply-adds of all layers together.

    ``costs[name] = (in_dim, out_dim)``; a rank-r factor pair costs ``r (in + out)`` against
    ``in * out`` dense. Singular values of all layers compete for the budget in order of
    relative energy per unit cost, ``(s_i^2 / sum_j s_j^2) / (in + out)`` (greedy; optimal for
    the sum of relative squared errors when costs are equal). Every layer keeps rank >= 1.
    """
    if not 0.0 < budget <= 1.0:
        raise ValueError(f"budget must be in (0, 1], got {budget}")
    total = sum(i * o for i, o in costs.values())
    ranks = dict.fromkeys(spectra, 1)
    spent = sum(sum(costs[n]) for n in spectra)
    scores: list[tuple[float, str]] = []
    for name, spec in spectra.items():
        e = spec.s.double() ** 2
        rel = (e / e.sum().clamp_min(1e-300)).tolist()
        unit = sum(costs[name])
        scores += [(v / unit, name) for v in rel[1:]]
    for _, name in sorted(scores, key=lambda t: -t[0]):
        unit = sum(costs[name])
        if spent + unit > budget * total:
            continue
        ranks[name] += 1
        spent += unit
    return ranks


# --------------------------------------------------------------------------- model surgery


def _set_submodule(model: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, new)


@torch.no_grad()
def record_inputs(
    model: nn.Module, names: Iterable[str], run: Callable[[nn.Module], object]
) -> dict[str, torch.Tensor]:
    """Inputs of the named submodules during ``run(model)`` (concatenated over calls)."""
    seen: dict[str, list[torch.Tensor]] = {n: [] for n in names}
    hooks = [
        model.get_submodule(n).register_forward_hook(
            lambda m, i, o, n=n: seen[n].append(i[0].detach().clone())
        )
        for n in seen
    ]
    try:
        run(model)
    finally:
        for h in hooks:
            h.remove()
    return {n: torch.cat(v) for n, v in seen.items() if v}


@dataclass
class FactorizationPlan:
    """Which layers get which rank, and why (``dense`` layers are left as they are)."""

    ranks: dict[str, int]
    full_ranks: dict[str, int]
    errors: dict[str, float]
    dense: list[str]

    def params_kept(self, model: nn.Module) -> float:
        """Fraction of the planned layers' weight entries kept (dense layers count fully)."""
        before = after = 0
        for name in self.full_ranks:
            out_f, in_f = weight_matrix(model.get_submodule(name)).shape
            before += out_f * in_f
            r = self.ranks.get(name)
            after += out_f * in_f if r is None else r * (out_f + in_f)
        return after / before


def plan_factorization(
    model: nn.Module,
    names: Iterable[str],
    *,
    energy: float | None = None,
    budget: float | None = None,
    rank: int | None = None,
    second_moments: Mapping[str, torch.Tensor] | None = None,
) -> tuple[FactorizationPlan, dict[str, Spectrum]]:
    """Choose a rank per layer by ``energy`` threshold, global ``budget`` or a fixed ``rank``.

    Exactly one criterion must be given. Layers whose chosen rank is above their break-even
    rank stay dense (the factor pair would cost more than the original).
    """
    if sum(v is not None for v in (energy, budget, rank)) != 1:
        raise ValueError("give exactly one of energy, budget, rank")
    names = list(names)
    layers = {n: model.get_submodule(n) for n in names}
    specs = {
        n: spectrum(m, None if second_moments is None else second_moments[n])
        for n, m in layers.items()
    }
    if energy is not None:
        chosen = {n: rank_for_energy(s, energy) for n, s in specs.items()}
    elif budget is not None:
        costs = {n: tuple(reversed(weight_matrix(m).shape)) for n, m in layers.items()}
        chosen = ranks_for_budget(specs, costs, budget)  # type: ignore[arg-type]
    else:
        assert rank is not None
        for n, m in layers.items():
            if not 1 <= rank <= max_rank(m):
                raise ValueError(f"rank must be in 1..{max_rank(m)} for layer {n}, got {rank}")
        chosen = dict.fromkeys(names, rank)
    full = {n: max_rank(m) for n, m in layers.items()}
    ranks, dense = {}, []
    for n, r in chosen.items():
        if r > break_even_rank(layers[n]) and r < full[n]:
            dense.append(n)
        else:
            ranks[n] = r
    errors = {n: specs[n].error_at(r) for n, r in ranks.items()}
    return FactorizationPlan(ranks, full, errors, dense), specs


def apply_plan(
    model: nn.Module, plan: FactorizationPlan, spectra: Mapping[str, Spectrum]
) -> nn.Module:
    """A copy of ``model`` with the planned layers replaced by their factorisations."""
    out = copy.deepcopy(model)
    for name, r in plan.ranks.items():
        _set_submodule(out, name, factorize_layer(model.get_submodule(name), r, spectra[name]))
    return out.eval()


@torch.no_grad()
def calibrate_second_moments(
    model: nn.Module, names: Iterable[str], run: Callable[[nn.Module], object]
) -> dict[str, torch.Tensor]:
    """``E[x x^T]`` of every named layer's input vectors during ``run(model)``.

    Accumulated in float64 inside forward hooks (no activations are kept), so calibration can
    cover a whole sampling trajectory.
    """
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}

    def hook(name: str, layer: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        x = _input_vectors(inputs[0], layer).double()
        sums[name] = sums[name] + x.T @ x if name in sums else x.T @ x
        counts[name] = counts.get(name, 0) + x.shape[0]

    hooks = [
        model.get_submodule(n).register_forward_pre_hook(
            lambda m, i, n=n: hook(n, m, i)  # type: ignore[misc]
        )
        for n in names
    ]
    try:
        run(model)
    finally:
        for h in hooks:
            h.remove()
    return {n: sums[n] / counts[n] for n in sums}
