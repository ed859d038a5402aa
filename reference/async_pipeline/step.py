"""The denoising step of the pipeline: DDIM on the clipped ODE, exactly as the harness solves it.

Stage 2 ends with the predicted noise ``ε_θ(x_t, t)``; rank 1 then moves ``x_t`` one step along
the trailing grid of `reference.harness.ode` (``T-1, ...``, the last step to ᾱ = 1):

    x̂₀   = clip((x_t - √(1-ᾱ_t) ε_θ) / √ᾱ_t, -1, 1)                           (1)
    x_s  = √ᾱ_s x̂₀ + √(1-ᾱ_s) (x_t - √ᾱ_t x̂₀) / √(1-ᾱ_t)                     (2)

(1)-(2) are `reference.harness.ode.clipped_x0` and ``ddim_step`` (Song et al. 2021,
arXiv:2010.02502, eq. 12 with σ = 0, on the clipped denoiser), called here with the same
tensors in the same dtypes as `reference.harness.ode.solve`, so the single process (which calls
``solve``) and the pipeline's synchronous mode differ only by the float reassociation of 1 against
2 threads inside the network (tested: this loop fed the model's own ε equals ``solve`` bitwise).

Pitfall: diffusers' ``DDIMScheduler.step`` with ``clip_sample=True`` keeps the raw ε in (2) and
so solves another equation that drifts with the step count (`reference.harness.ode`); the old
pipeline used it, its results are not comparable with these.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from reference.harness import ode


@dataclass(frozen=True)
class ClippedDDIM:
    """The grid ``timesteps`` of ``steps`` DDIM steps and the schedule's ``alphas_cumprod``."""

    timesteps: torch.Tensor
    alphas_cumprod: torch.Tensor

    @classmethod
    def of(cls, steps: int) -> ClippedDDIM:
        abar = ode.schedule().alphas_cumprod
        return cls(ode.grid(steps, len(abar)), abar)

    def step(self, x: torch.Tensor, eps: torch.Tensor, i: int) -> torch.Tensor:
        """``x`` at grid point ``i`` moved to point ``i + 1`` (to ᾱ = 1 after the last)."""
        t, abar = self.timesteps[i], self.alphas_cumprod
        abar_t = abar[t.expand(x.shape[0]).long()].view(-1, *([1] * (x.dim() - 1)))
        x0 = ode.clipped_x0(x, eps, abar_t.to(x.dtype))  # (1)
        last = i + 1 == len(self.timesteps)
        abar_s = torch.ones((), dtype=abar.dtype) if last else abar[self.timesteps[i + 1]]
        return ode.ddim_step(x, x0, abar[t], abar_s)  # (2)
