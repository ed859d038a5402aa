"""The sweep: every scheduler at every NFE of the grid, on the first seed, with its fidelity.

Each point samples ``n`` digits from the noise and labels of one seed
(`reference.scheduler_tradeoff.samplers`: the ODE samplers on the clipped ODE, DDPM
ancestrally), scores them on the held-out digits (FDD) and, for the ODE samplers, measures the
per-sample distance to the converged solution of the same noise,

    rms_to_solution = mean_i ‖x_i - x*_i‖₂ / √D                                          (1)

(`reference.harness.ode.rms_to`, D pixels). The points draw the curves of quality against NFE
and wall time; the rows' means and intervals over all seeds come from the declared comparison
in `reference.scheduler_tradeoff.bench`, not from here.

Pitfalls
========
* One seed, one sequential run per point: a guide to the shape of the curves, not a claim.
* A point's seconds include the scoring-free sampling only, one run of all ``n`` samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from reference.harness.sampling import EpsFn

from .samplers import mode_of, runner


@dataclass
class Point:
    """One (scheduler, NFE) measurement of the sweep (one seed)."""

    scheduler: str
    nfe: int
    fd_digits: float
    rms_to_solution: float | None
    seconds: float
    samples: torch.Tensor = field(repr=False)


def sweep(
    eps: EpsFn,
    schedulers: Sequence[str],
    nfe_grid: Sequence[int],
    noise: torch.Tensor,
    labels: torch.Tensor,
    seed: int,
    score: Callable[[torch.Tensor, Any], dict[str, float]],
    solution: torch.Tensor,
) -> list[Point]:
    """FDD, fidelity (1) and wall time of every scheduler at every NFE from one seed's noise."""
    from tqdm.auto import tqdm

    from reference.harness import ode

    jobs = [(s, k) for s in schedulers for k in nfe_grid]
    points = []
    for name, nfe in tqdm(jobs, desc="schedulers", leave=False):
        mode = mode_of(name)
        start = time.perf_counter()
        x = runner(name, mode)(eps, noise, labels, nfe, seed)
        seconds = time.perf_counter() - start
        rms = None if mode == "ancestral" else float(ode.rms_to(x, solution).mean())  # (1)
        fd = score(x, {})["fd_digits"]
        points.append(Point(name, nfe, fd, rms, seconds, x[:10]))
    return points


def nfe_to_match(points: list[Point], name: str, target: float) -> int | None:
    """Smallest NFE at which scheduler ``name`` reaches FDD <= ``target`` (None if never)."""
    hits = [p.nfe for p in points if p.scheduler == name and p.fd_digits <= target]
    return min(hits) if hits else None


def curves(points: list[Point], schedulers: Sequence[str], what: str) -> list[list[float | None]]:
    """``what`` of every point, one list per scheduler in the order of ``schedulers`` (rounded
    to 4 significant figures: the curves are drawn, not recomputed)."""

    def value(p: Point) -> float | None:
        v = getattr(p, what)
        return None if v is None else float(f"{v:.4g}")

    return [[value(p) for p in points if p.scheduler == s] for s in schedulers]
