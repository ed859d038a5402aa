"""The networks the pruning benchmark compares, what each costs, how each samples, its figures.

Idea
====
`networks` builds every network of the comparison once: the zoo teacher (baseline), its one-shot
structured prunes at every ratio and importance criterion (approximations of the teacher, before
any repair), the zoo's pruned + fine-tuned teacher and the same architecture trained from scratch
(trained changes), unstructured magnitude prunes (sparsity without speed) and the teacher itself
with fewer DDIM steps at the fine-tuned prune's sampling FLOPs (the matched-cost control). Each
`Network` carries its counted cost (`facts`, values that do not vary with the seed) and the DDIM
steps it samples with; `runner` samples it on the clipped ODE that every sampler of the harness
solves (`reference.harness.ode`), so that the baseline converges as it takes more steps.

Math
====
The fewer-steps control spends the FLOPs of the prune's sampling on the full teacher:

    k = max(1, round(N · F_pruned / F_teacher))                                     (1)

for ``N`` DDIM steps of the prune whose forward costs ``F_pruned`` multiply-accumulates. The cost
of a row is counted, not measured:

    flops_ratio = F_row / F_teacher,   gflops = F_row / 1e9   (MACs per forward)    (2)

Pitfalls
========
* A Taylor prune needs the teacher's gradients: the teacher is pruned first and frozen after.
* One-shot prunes share the fine-tuned prune's architecture at ratio 0.5: they are not timed
  (their latency is the fine-tuned row's), only sampled and counted.
* Unstructured rows keep every shape: FLOPs and latency are the teacher's; only ``sparsity``
  changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from .api import PruningConfig, apply_pruning
from .structured import count_macs
from .unstructured import weight_sparsity
from .zoo_specs import FINETUNE_STEPS, PRUNE_RATIO, TAYLOR_T_MAX, load_pruned

Role = Literal["baseline", "technique", "control", "reference"]
GRID_ROWS = ("teacher", "finetuned", "scratch")
"""The rows of the sample grid, top to bottom."""
CURVE_LABEL = {
    "l1": "one-shot, L1 norm",
    "taylor": "one-shot, Taylor",
    "random": "one-shot, random",
}


@dataclass(frozen=True)
class Network:
    """One row of the comparison: its id, language-neutral configuration, role, the network,
    its DDIM steps, whether it is timed and its counted cost."""

    id: str
    config: Mapping[str, Any]
    role: Role
    net: nn.Module
    steps: int
    timed: bool = True
    facts: Mapping[str, float] = field(default_factory=dict)


def control_steps(steps: int, flops_ratio: float) -> int:
    """Teacher DDIM steps that cost what ``steps`` steps of a network with ``flops_ratio`` of
    its FLOPs per forward cost, (1)."""
    return max(1, round(steps * flops_ratio))  # (1)


def cost(net: nn.Module, steps: int, teacher_macs: float) -> dict[str, float]:
    """The counted cost (2) of ``net`` sampling with ``steps`` DDIM steps."""
    from reference.harness import count_parameters

    macs = float(count_macs(net))
    return {
        "gflops": macs / 1e9,  # (2)
        "flops_ratio": macs / teacher_macs,  # (2)
        "params_m": count_parameters(net) / 1e6,
        "sparsity": weight_sparsity(net),
        "nfe": float(steps),
    }


def _one_shot(teacher: nn.Module, cfg: Any) -> list[Network]:
    """Every (ratio, criterion) prune of the teacher, no fine-tuning (sampled, not timed)."""
    out = []
    for ratio in cfg.ratios:
        for crit in cfg.criteria:
            prune = PruningConfig(
                ratio,
                crit,
                t_max=TAYLOR_T_MAX,
                calibration_batches=cfg.calib_batches,
                calibration_batch=cfg.calib_batch,
            )
            net, _ = apply_pruning(teacher, prune)
            config = {"method": f"structured-{crit}", "ratio": ratio}
            out.append(Network(f"{crit}-{ratio}", config, "technique", net, cfg.steps, False))
    return out


ZOO_ROWS: tuple[tuple[str, str, Role, str], ...] = (
    ("finetuned", "pruned-finetuned", "technique", "pruned_teacher"),
    ("scratch", "pruned-scratch", "control", "pruned_scratch"),
)
"""(row id, method, role, zoo model) of the trained rows: the same architecture and budget."""


def networks(cfg: Any) -> list[Network]:
    """Every row's network with its cost, in the result's order (``cfg``: the bench's
    ``Config``); the fewer-steps control last, its steps (1) from the fine-tuned prune's FLOPs."""
    from reference import zoo
    from reference.harness.sampling import frozen

    teacher = zoo.load_teacher()
    config: dict[str, Any] = {"method": "teacher", "steps": cfg.steps}
    rows = [Network("teacher", config, "baseline", teacher, cfg.steps)]
    rows += _one_shot(teacher, cfg)  # pruned before the teacher is frozen: Taylor needs grads
    budget = {"ratio": PRUNE_RATIO, "steps": FINETUNE_STEPS}
    for key, method, role, name in ZOO_ROWS:
        config = {"method": method, **budget}
        rows.append(Network(key, config, role, load_pruned(name), cfg.steps))
    for amount in cfg.unstructured:
        net, _ = apply_pruning(teacher, PruningConfig(amount, structured=False))
        config = {"method": "unstructured", "amount": amount}
        rows.append(Network(f"unstructured-{amount}", config, "reference", net, cfg.steps))
    base = float(count_macs(teacher))
    rows = [replace(r, net=frozen(r.net), facts=cost(r.net, r.steps, base)) for r in rows]
    k = control_steps(cfg.steps, next(r for r in rows if r.id == "finetuned").facts["flops_ratio"])
    config = {"method": "teacher-fewer-steps", "steps": k}
    rows.append(Network("fewer-steps", config, "control", teacher, k, True, cost(teacher, k, base)))
    return rows


def runner(net: Network, n: int, seed: int) -> Callable[[], torch.Tensor]:
    """``n`` class-conditional samples of ``net`` from the noise of ``seed``: DDIM with its
    steps on the clipped ODE, the labels `class_labels(n)` (what the held-out score reads)."""
    from reference.harness import class_labels, make_noise, model_eps_fn
    from reference.harness.ode import solve

    eps, noise, labels = model_eps_fn(net.net), make_noise(n, seed=seed), class_labels(n)
    return lambda: solve(eps, noise, steps=net.steps, labels=labels)


def solution_of(teacher: nn.Module, n: int, steps: int) -> Callable[[int], torch.Tensor]:
    """The teacher's converged solution of each quality seed's noise and labels (cached by
    content, `reference.harness.solutions`): what every one-shot prune approximates."""
    from reference.harness import class_labels, make_noise
    from reference.harness.solutions import solution

    def run(seed: int) -> torch.Tensor:
        return solution(teacher, make_noise(n, seed=seed), labels=class_labels(n), steps=steps)

    return run


def torch_pruning_version() -> str:
    """The installed Torch-Pruning version as an identifier (``unknown`` if it has none)."""
    import re

    import torch_pruning as tp

    version = str(getattr(tp, "__version__", "unknown")).lower()
    return version if re.fullmatch(r"[a-z0-9]+([._-][a-z0-9]+)*", version) else "unknown"


def save_figures(
    m: Any, ratios: Sequence[float], criteria: Sequence[str], curve: Path, grid: Path
) -> None:
    """FDD (mean over seeds) against the fraction of channels removed, one curve per criterion
    with the teacher, fine-tuned and scratch levels (``curve``); a sample grid of the first
    seed, ten of each of `GRID_ROWS` (``grid``). ``m`` is the measured comparison."""
    from reference.harness import curve_plot, save_grid

    def fd(key: str) -> float:
        return m.table.summary(key, "fd_digits").value

    series = {CURVE_LABEL[c]: [fd(f"{c}-{r}") for r in ratios] for c in criteria}
    levels = {"teacher": fd("teacher"), "50% + fine-tuning": fd("finetuned")}
    levels["50% from scratch"] = fd("scratch")
    curve_plot(
        list(ratios),
        series,
        curve,
        xlabel="fraction of channels removed",
        ylabel="FDD (lower is better)",
        title="Structured pruning of the zoo U-Net",
        logy=True,
        hlines=levels,
    )
    save_grid(torch.cat([m.first[k][:10] for k in GRID_ROWS]), grid)
