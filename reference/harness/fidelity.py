"""The converged solution of every quality seed, as a comparison's ``solution``.

A benchmark whose primary figure is the fidelity (eq. (6) of `reference.harness.compare`,
``rms_to_solution``) hands `reference.harness.compare.Comparison` a function of the seed that
returns the converged clipped-ODE solution of that seed's noise and labels. Every such benchmark
draws the noise and labels the same way (`reference.harness.sampling.make_noise` and
``class_labels``), so the function is written once, here, and the tensors are shared on disk
through `reference.harness.solutions` (computed once per content, on every benchmark).

Pitfall: pass the untouched model (no hook, no forecaster, no cache on it): the solution is what
the technique approximates, and the cache key does not see a hook.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .ode import SOLUTION


def solution_of(
    model: torch.nn.Module, n: int, steps: int = SOLUTION[1]
) -> Callable[[int], torch.Tensor]:
    """``seed -> x*``: the converged solution of ``make_noise(n, seed)`` with
    ``class_labels(n)`` (fewer ``steps`` only in a quick run or a test)."""
    from .sampling import class_labels, make_noise
    from .solutions import solution

    def of(seed: int) -> torch.Tensor:
        return solution(model, make_noise(n, seed), class_labels(n), steps=steps)

    return of
