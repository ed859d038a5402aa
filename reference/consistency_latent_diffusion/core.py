"""The mathematics of latent consistency distillation: boundary conditions, solver, loss, sampler.

Notation: ``z_t = alpha_t z_0 + sigma_t eps`` on the zoo's 1000-step cosine schedule, with
``alpha_t^2 = alphas_cumprod[t]``. A consistency model maps any point ``(z_t, t)`` of a
probability-flow ODE trajectory to the trajectory's origin ``z_0`` (Song et al. 2023,
arXiv:2303.01469); here, as in Latent Consistency Models (Luo et al. 2023, arXiv:2310.04378), it is
parameterised through an epsilon-prediction U-Net, exactly the way diffusers' ``LCMScheduler``
reads one.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from reference.harness.sampling import EpsFn

SIGMA_DATA = 0.5
"""``sigma_data`` of the boundary conditions (LCM's and diffusers' ``LCMScheduler`` value)."""
TIMESTEP_SCALING = 10.0
"""LCM's ``timestep_scaling``: discrete ``t`` is multiplied by it inside ``c_skip``/``c_out``."""
ORIGINAL_STEPS = 50
"""``N``: solver timesteps of the skipping grid (LCM's ``original_inference_steps``)."""
HUBER_C = 1e-3
"""Pseudo-Huber constant ``c`` of the distillation loss (LCM's default)."""
MAX_TIMESTEP = 979
"""Highest timestep used (LCM's grid would start at 999).

On the zoo's capped cosine schedule ``alpha_999 = 5e-5`` (SNR ``2e-9``): reading an epsilon
prediction as ``x_0 = (z - sigma eps) / alpha`` there multiplies the network's error by 20,000,
and a DDIM step from 999 to 979 multiplies it by 600. At 979 ``alpha = 0.031`` (the teacher's
DDIM-50 starts at 980), the same regime as LCM's Stable Diffusion schedule (``alpha_999 = 0.068``).
"""


def boundary_scalings(
    t: torch.Tensor | float,
    sigma_data: float = SIGMA_DATA,
    timestep_scaling: float = TIMESTEP_SCALING,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(c_skip(t), c_out(t))`` with ``c_skip(0) = 1`` and ``c_out(0) = 0``.

    ``c_skip = sigma_data^2 / ((s t)^2 + sigma_data^2)``, ``c_out = s t / sqrt((s t)^2 +
    sigma_data^2)`` with ``s = timestep_scaling`` (LCM; the EDM-style conditions of Song et al.
    with the discrete timestep standing in for ``t - epsilon``). The boundary condition
    ``f(z, 0) = z`` then holds by construction, whatever the network outputs.
    """
    st = torch.as_tensor(t, dtype=torch.float32) * timestep_scaling
    c_skip = sigma_data**2 / (st**2 + sigma_data**2)  # boundary: c_skip(0) = 1
    c_out = st / (st**2 + sigma_data**2) ** 0.5  # boundary: c_out(0) = 0
    return c_skip, c_out


def _col(v: torch.Tensor) -> torch.Tensor:
    return v.view(-1, 1, 1, 1) if v.dim() == 1 else v


def consistency_fn(
    eps_fn: EpsFn,
    z_t: torch.Tensor,
    t: torch.Tensor,
    labels: torch.Tensor,
    alphas_cumprod: torch.Tensor,
) -> torch.Tensor:
    """``f_theta(z_t, t) = c_skip(t) z_t + c_out(t) (z_t - sigma_t eps_theta) / alpha_t``.

    ``t`` is an int64 ``[N]`` (or scalar) of timesteps ``>= 0``.
    """
    t = torch.as_tensor(t, dtype=torch.long)
    t_rows = t.expand(z_t.shape[0]) if t.dim() == 0 else t
    abar = _col(alphas_cumprod[t_rows])
    eps = eps_fn(z_t, t_rows, labels)
    x0 = (z_t - (1 - abar) ** 0.5 * eps) / abar**0.5  # DDIM Eq. (12): predicted x0
    c_skip, c_out = boundary_scalings(t_rows)
    return _col(c_skip) * z_t + _col(c_out) * x0  # f = c_skip z_t + c_out x_hat (CM, Sec. 3)


# --------------------------------------------------------------------------- grids


def skipping_timesteps(
    original_steps: int = ORIGINAL_STEPS,
    num_train_timesteps: int = 1000,
    max_timestep: int = MAX_TIMESTEP,
) -> np.ndarray:
    """LCM's solver grid ``t_n = n k - 1`` (``k = T // N``), without points above ``max_timestep``.

    With ``N = 50``: ``19, 39, ..., 979``; one consistency-distillation pair spans the skipping
    step ``k = 20`` of the 1000 training steps.
    """
    k = num_train_timesteps // original_steps
    grid = np.arange(1, original_steps + 1, dtype=np.int64) * k - 1
    return grid[grid <= max_timestep]


def sampling_timesteps(
    steps: int,
    original_steps: int = ORIGINAL_STEPS,
    num_train_timesteps: int = 1000,
    max_timestep: int = MAX_TIMESTEP,
) -> list[int]:
    """The ``steps`` timesteps of multistep consistency sampling (evenly spaced grid indices).

    The selection rule of ``LCMScheduler.set_timesteps`` applied to
    [`skipping_timesteps`][reference.consistency_latent_diffusion.core.skipping_timesteps]: 1 step
    -> ``[979]``, 2 -> ``[979, 499]``, 4 -> ``[979, 739, 499, 259]``.
    """
    grid = skipping_timesteps(original_steps, num_train_timesteps, max_timestep)[::-1]
    if not 1 <= steps <= len(grid):
        raise ValueError(f"steps must be in [1, {len(grid)}], got {steps}")
    idx = np.floor(np.linspace(0, len(grid), num=steps, endpoint=False)).astype(np.int64)
    return [int(v) for v in grid[idx]]


# --------------------------------------------------------------------------- the distillation


def ddim_solver_step(
    teacher_eps: EpsFn,
    z_t: torch.Tensor,
    t: torch.Tensor,
    s: torch.Tensor,
    labels: torch.Tensor,
    alphas_cumprod: torch.Tensor,
) -> torch.Tensor:
    """One DDIM (probability-flow ODE) step of the teacher from ``t`` to ``s < t`` (no clipping).

    ``z_s = alpha_s x_hat + sigma_s eps_hat`` with ``x_hat = (z_t - sigma_t eps_hat) / alpha_t``:
    the ODE solver ``Phi`` of consistency distillation.
    """
    eps = teacher_eps(z_t, t, labels)
    a_t, a_s = _col(alphas_cumprod[t]), _col(alphas_cumprod[s])
    x_hat = (z_t - (1 - a_t) ** 0.5 * eps) / a_t**0.5  # DDIM Eq. (12): predicted x0
    return a_s**0.5 * x_hat + (1 - a_s) ** 0.5 * eps  # DDIM Eq. (12), eta = 0


def pseudo_huber(a: torch.Tensor, b: torch.Tensor, c: float = HUBER_C) -> torch.Tensor:
    """Element-wise ``sqrt((a - b)^2 + c^2) - c``, averaged (LCM's loss)."""
    return (torch.sqrt((a.float() - b.float()) ** 2 + c**2) - c).mean()  # d(x, y), pseudo-Huber


def consistency_distillation_loss(
    online_eps: EpsFn,
    target_eps: EpsFn,
    teacher_eps: EpsFn,
    z0: torch.Tensor,
    labels: torch.Tensor,
    alphas_cumprod: torch.Tensor,
    *,
    original_steps: int = ORIGINAL_STEPS,
    max_timestep: int = MAX_TIMESTEP,
    huber_c: float | None = HUBER_C,
) -> torch.Tensor:
    """Latent consistency distillation loss for one batch of clean latents ``z0``.

    1. draw ``n`` uniformly, ``t_{n+k}`` from the skipping grid, ``t_n = max(t_{n+k} - k, 0)``;
    2. ``z_{t_{n+k}} = alpha z0 + sigma eps``;
    3. ``z^_{t_n}`` = one teacher DDIM step (the ODE solver over the skipped interval);
    4. loss ``d(f_theta(z_{t_{n+k}}, t_{n+k}), f_theta-(z^_{t_n}, t_n))`` with the target
       network ``theta-`` (an EMA of ``theta``) and no gradient through the target.

    ``d`` is the pseudo-Huber distance (``huber_c``) or the squared error (``huber_c=None``).
    """
    grid = torch.from_numpy(skipping_timesteps(original_steps, len(alphas_cumprod), max_timestep))
    k = len(alphas_cumprod) // original_steps
    n = z0.shape[0]
    t_start = grid[torch.randint(len(grid), (n,))]  # step 1: t_{n+k} on the skipping grid
    t_end = (t_start - k).clamp(min=0)  # t_n = t_{n+k} - k
    abar = _col(alphas_cumprod[t_start])
    z_start = abar**0.5 * z0 + (1 - abar) ** 0.5 * torch.randn_like(z0)  # step 2: noise z_0
    with torch.no_grad():
        z_end = ddim_solver_step(teacher_eps, z_start, t_start, t_end, labels, alphas_cumprod)  # 3
        target = consistency_fn(target_eps, z_end, t_end, labels, alphas_cumprod)  # f_theta-
    pred = consistency_fn(online_eps, z_start, t_start, labels, alphas_cumprod)  # step 4: f_theta
    if huber_c is None:
        return F.mse_loss(pred.float(), target.float())
    return pseudo_huber(pred, target, huber_c)


@torch.no_grad()
def ema_update(target: torch.nn.Module, online: torch.nn.Module, mu: float) -> None:
    """``theta- <- mu theta- + (1 - mu) theta`` (stop-gradient target network)."""
    for p_t, p_o in zip(target.parameters(), online.parameters(), strict=True):
        p_t.lerp_(p_o.detach(), 1.0 - mu)  # theta- <- mu theta- + (1 - mu) theta


# --------------------------------------------------------------------------- sampling


@torch.no_grad()
def consistency_sample(
    eps_fn: EpsFn,
    noise: torch.Tensor,
    labels: torch.Tensor,
    alphas_cumprod: torch.Tensor,
    steps: int = 2,
    *,
    seed: int = 0,
    original_steps: int = ORIGINAL_STEPS,
    max_timestep: int = MAX_TIMESTEP,
) -> torch.Tensor:
    """Multistep consistency sampling (Song et al. 2023, Algorithm 1; LCM's sampler).

    ``x = f(z_T, tau_1)``; then for each later ``tau_i``: ``z = alpha_tau x + sigma_tau eps_i``
    (fresh noise from a generator seeded by ``seed``) and ``x = f(z, tau_i)``. One network call
    per step; returns latents ``z_0`` (not clamped). ``LCMScheduler`` with the same ``seed`` gives
    the same result.
    """
    gen = torch.Generator().manual_seed(seed)
    taus = sampling_timesteps(steps, original_steps, len(alphas_cumprod), max_timestep)
    z = noise
    x = noise
    for i, tau in enumerate(taus):
        x = consistency_fn(eps_fn, z, torch.tensor(tau), labels, alphas_cumprod)  # x = f(z, tau)
        if i + 1 < len(taus):
            abar = alphas_cumprod[taus[i + 1]]
            eps = torch.randn(x.shape, generator=gen, dtype=x.dtype)
            z = abar**0.5 * x + (1 - abar) ** 0.5 * eps  # re-noise to the next tau
    return x
