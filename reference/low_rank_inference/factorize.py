"""Truncated-SVD factorisation of Linear and convolution layers, rank selection, model surgery.

See [`reference.low_rank_inference`][reference.low_rank_inference] for the idea, the math and the
pitfalls.
"""

from __future__ import annotations

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
    ridge = 1e-6 * c.diagonal().mean().clamp_min(1e-12)  # a tensor: no host round trip
    chol = torch.linalg.cholesky(c + ridge * torch.eye(c.shape[0], dtype=c.dtype, device=c.device))
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
    root = spec.s[:rank].sqrt()  # W_r = (U_r sqrt(s_r)) (sqrt(s_r) V_r^T): the symmetric split
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


@torch.no_grad()
def output_error_curve(
    layer: nn.Module, second_moment: torch.Tensor, spec: Spectrum
) -> list[float]:
    """Relative output error ``sqrt(tr(D C D^T) / tr(W C W^T))``, ``D = W - W_r``, for every
    rank ``r = 1..max`` in closed form.

    ``W M = sum_i s_i u_i v_i^T`` gives ``D = sum_{i>r} s_i u_i v_i^T M^{-1}`` and, the ``u_i``
    being orthonormal, ``tr(D C D^T) = sum_{i>r} s_i^2 q_i`` with
    ``q_i = v_i^T M^{-1} C M^{-T} v_i`` (``q_i = 1`` for activation-aware SVD up to its ridge).
    """
    w = weight_matrix(layer).double()
    c = second_moment.double()
    v = spec.vh if spec.m_inv is None else spec.vh @ spec.m_inv
    q = torch.einsum("ij,jk,ik->i", v, c, v)
    tail = torch.flip(torch.cumsum(torch.flip(spec.s.double() ** 2 * q, [0]), 0), [0])
    denom = torch.trace(w @ c @ w.T)
    tail = torch.cat([tail[1:], tail.new_zeros(1)])  # error after keeping r = 1..len(s)
    return (tail.clamp_min(0) / denom).sqrt().tolist()
