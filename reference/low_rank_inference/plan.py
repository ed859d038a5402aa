"""Rank selection (energy threshold, global budget), model surgery and calibration, and the
public shape of the technique: ``LowRankConfig`` + ``apply_low_rank(model, config)``.

See [`reference.low_rank_inference`][reference.low_rank_inference] for the idea, the math and the
pitfalls.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import torch
from torch import nn

from .factorize import (
    Spectrum,
    _input_vectors,
    break_even_rank,
    factorize_layer,
    max_rank,
    spectrum,
    weight_matrix,
)

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


# --------------------------------------------------------------------------- the public shape

DIT_TARGETS = (
    "attn1.to_q",
    "attn1.to_k",
    "attn1.to_v",
    "attn1.to_out.0",
    "ff.net.0.proj",
    "ff.net.2",
)
"""The token-wise Linear layers of a diffusers DiT block (the conditioning MLPs run once per
sample and are left dense)."""


def dit_target_layers(dit: nn.Module) -> list[str]:
    """Qualified names of the token-wise Linear layers of every DiT block."""
    return [
        f"transformer_blocks.{i}.{t}"
        for i in range(len(dit.transformer_blocks))
        for t in DIT_TARGETS
    ]


@dataclass(frozen=True)
class LowRankConfig:
    """What [`apply_low_rank`][reference.low_rank_inference.plan.apply_low_rank] factorises, and how
    it picks the ranks.

    ``targets``: qualified names of the ``nn.Linear`` / ``nn.Conv2d`` layers. Exactly one rank
    rule: ``budget`` (fraction of the targets' dense multiply-adds,
        [`ranks_for_budget`][reference.low_rank_inference.plan.ranks_for_budget]),
    ``energy`` (per-layer threshold,
    [`rank_for_energy`][reference.low_rank_inference.plan.rank_for_energy]) or a fixed ``rank``.
    ``method``: ``"svd"`` (plain truncated SVD) or ``"asvd"`` (activation-aware, whitened by the
    inputs' second moments, which
    [`apply_low_rank`][reference.low_rank_inference.plan.apply_low_rank] then needs).
    """

    targets: tuple[str, ...]
    budget: float | None = None
    energy: float | None = None
    rank: int | None = None
    method: str = "asvd"

    def validate(self) -> None:
        if self.method not in ("svd", "asvd"):
            raise ValueError(f"unknown low-rank method {self.method!r}; choose svd or asvd")
        if sum(v is not None for v in (self.budget, self.energy, self.rank)) != 1:
            raise ValueError("LowRankConfig: give exactly one of budget, energy, rank")
        if not self.targets:
            raise ValueError("LowRankConfig: no target layers")


def apply_low_rank(
    model: nn.Module,
    config: LowRankConfig,
    second_moments: Mapping[str, torch.Tensor] | None = None,
) -> tuple[nn.Module, FactorizationPlan]:
    """A copy of ``model`` with ``config.targets`` replaced by truncated-SVD factor pairs.

    ``second_moments`` (``E[x x^T]`` per target,
    [`calibrate_second_moments`][reference.low_rank_inference.plan.calibrate_second_moments]) are
    required for ``method="asvd"``. Targets whose chosen rank is above break-even stay dense.
    Returns the new model and its
    [`FactorizationPlan`][reference.low_rank_inference.plan.FactorizationPlan]; ``model`` is not
    modified.
    """
    config.validate()
    if config.method == "asvd" and second_moments is None:
        raise ValueError("activation-aware SVD needs second_moments (calibrate_second_moments)")
    plan, specs = plan_factorization(
        model,
        config.targets,
        energy=config.energy,
        budget=config.budget,
        rank=config.rank,
        second_moments=second_moments if config.method == "asvd" else None,
    )
    return apply_plan(model, plan, specs), plan
