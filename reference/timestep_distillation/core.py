"""The mathematics of progressive distillation: grids, the DDIM step, the two-step target, the loss.

Notation (Salimans & Ho 2022, arXiv:2202.00512): ``z_t = alpha_t x + sigma_t eps`` with ``alpha_t^2
= alphas_cumprod[t]`` (diffusers' ``alpha_prod_t``) and ``sigma_t^2 = 1 - alpha_t^2``. The timestep
[`TERMINAL`][reference.timestep_distillation.core.TERMINAL] (-1) stands for clean data (``alpha = 1,
sigma = 0``), which is where diffusers' DDIM lands after its last step (``set_alpha_to_one=True``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reference.harness.sampling import EpsFn

TERMINAL = -1
"""Pseudo-timestep of clean data: ``alpha = 1``, ``sigma = 0`` (the end of every sampler)."""
BASE_STEPS = 64
"""The teacher's DDIM step count that the first round distils (its grid nests all the others)."""


# --------------------------------------------------------------------------- grids and schedule


def timestep_grid(
    steps: int, base_steps: int = BASE_STEPS, num_train_timesteps: int = 1000
) -> list[int]:
    """The ``steps`` timesteps (descending) of an ``steps``-step sampler nested in the base grid.

    The base grid is diffusers' ``DDIMScheduler`` grid at ``base_steps`` ("leading" spacing):
    ``t_i = i * (T // base_steps)``, i.e. ``945, 930, ..., 15, 0`` for 64 of 1000 steps. The
    ``steps``-step grid keeps every ``base_steps / steps``-th of them starting from the top, so
    the grid of ``N`` steps is every other point of the grid of ``2N`` steps and one student step
    spans exactly two teacher steps. After the last timestep every sampler jumps to
    [`TERMINAL`][reference.timestep_distillation.core.TERMINAL].

    Raises:
        ValueError: if ``steps`` is not a positive divisor of ``base_steps``.
    """
    if steps < 1 or base_steps % steps:
        raise ValueError(f"steps must be a positive divisor of {base_steps}, got {steps}")
    ratio = num_train_timesteps // base_steps
    base = [i * ratio for i in range(base_steps - 1, -1, -1)]
    return base[:: base_steps // steps]


def next_timestep(grid: list[int], t: int) -> int:
    """The timestep a sampler on ``grid`` moves to from ``t``
    ([`TERMINAL`][reference.timestep_distillation.core.TERMINAL] after the last)."""
    i = grid.index(int(t))
    return grid[i + 1] if i + 1 < len(grid) else TERMINAL


def alpha_sigma(
    alphas_cumprod: torch.Tensor, t: torch.Tensor | int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(alpha_t, sigma_t)`` for integer timesteps ``t`` (scalar or ``[N]``); -1 is clean data.

    Batched ``t`` gives ``[N, 1, 1, 1]`` tensors that broadcast over images.
    """
    t = torch.as_tensor(t, dtype=torch.long)
    one = torch.ones((), dtype=alphas_cumprod.dtype)
    abar = torch.where(t >= 0, alphas_cumprod[t.clamp(min=0)], one)
    if abar.dim() == 1:
        abar = abar.view(-1, 1, 1, 1)
    return abar**0.5, (1 - abar) ** 0.5


# --------------------------------------------------------------------------- the DDIM step


def eps_to_x0(z_t: torch.Tensor, eps: torch.Tensor, alpha: torch.Tensor, sigma: torch.Tensor):
    """``x_hat = (z_t - sigma eps) / alpha``: an epsilon prediction read as an x-prediction."""
    return (z_t - sigma * eps) / alpha  # DDIM Eq. (12): predicted x0


def ddim_update(
    x_hat: torch.Tensor,
    eps_hat: torch.Tensor,
    alpha_s: torch.Tensor,
    sigma_s: torch.Tensor,
    clip: float | None = 1.0,
) -> torch.Tensor:
    """Deterministic DDIM (eta = 0): ``z_s = alpha_s clip(x_hat) + sigma_s eps_hat``.

    Like diffusers' ``DDIMScheduler.step`` (``clip_sample=True``,
    ``use_clipped_model_output=False``) the clip acts on ``x_hat`` only; ``eps_hat`` is the
    model's unclipped prediction.
    """
    if clip is not None:
        x_hat = x_hat.clamp(-clip, clip)  # diffusers' clip_sample (x only, not eps)
    return alpha_s * x_hat + sigma_s * eps_hat  # DDIM Eq. (12), eta = 0: z_s from x0 and eps


class GridDDIMScheduler:
    """A deterministic DDIM scheduler on the nested grids of
    [`timestep_grid`][reference.timestep_distillation.core.timestep_grid].

    It quacks like a diffusers scheduler (``set_timesteps``, ``timesteps``, ``init_noise_sigma``,
    ``scale_model_input``, ``step(...).prev_sample``), so the harness' one sampling loop
    (`reference.harness.sample`) runs teacher, students and controls alike. At
    ``base_steps`` steps it is diffusers' ``DDIMScheduler`` (the tests check it); at fewer steps it
    keeps the base grid's points, where diffusers would re-space them (``T // N``), so that a
    student's step lands exactly where its teacher's two steps land.
    """

    init_noise_sigma = 1.0
    order = 1

    def __init__(self, config: dict[str, Any], base_steps: int = BASE_STEPS) -> None:
        from diffusers import DDIMScheduler

        ref = DDIMScheduler.from_config(config)
        self.alphas_cumprod = ref.alphas_cumprod.clone()
        self.num_train_timesteps = int(ref.config.num_train_timesteps)
        self.clip = float(ref.config.clip_sample_range) if ref.config.clip_sample else None
        self.base_steps = base_steps
        self.grid: list[int] = []
        self.timesteps = torch.zeros(0, dtype=torch.long)

    def set_timesteps(self, num_inference_steps: int, device: Any = None) -> None:
        self.grid = timestep_grid(num_inference_steps, self.base_steps, self.num_train_timesteps)
        self.timesteps = torch.tensor(self.grid, dtype=torch.long)

    def scale_model_input(self, sample: torch.Tensor, timestep: Any = None) -> torch.Tensor:
        return sample

    def next_timestep(self, t: int | torch.Tensor) -> int:
        return next_timestep(self.grid, int(t))

    def step(self, model_output: torch.Tensor, timestep: Any, sample: torch.Tensor, **_: Any):
        """One DDIM step of an epsilon-prediction ``model_output`` from ``timestep``."""
        from diffusers.schedulers.scheduling_ddim import DDIMSchedulerOutput

        t = int(timestep)
        a_t, s_t = alpha_sigma(self.alphas_cumprod, t)
        a_s, s_s = alpha_sigma(self.alphas_cumprod, self.next_timestep(t))
        x_hat = eps_to_x0(sample, model_output, a_t, s_t)
        prev = ddim_update(x_hat, model_output, a_s, s_s, self.clip)
        x_hat = x_hat if self.clip is None else x_hat.clamp(-self.clip, self.clip)
        return DDIMSchedulerOutput(prev_sample=prev, pred_original_sample=x_hat)


# --------------------------------------------------------------------------- the target


@dataclass
class TwoStepResult:
    """Two DDIM steps of the teacher: ``t -> t_mid -> t_next`` and the states reached."""

    t_mid: torch.Tensor
    t_next: torch.Tensor
    z_mid: torch.Tensor
    z_next: torch.Tensor


def two_ddim_steps(
    eps_fn: EpsFn,
    z_t: torch.Tensor,
    t: torch.Tensor,
    labels: torch.Tensor,
    teacher_grid: list[int],
    alphas_cumprod: torch.Tensor,
    clip: float | None = 1.0,
) -> TwoStepResult:
    """Run the teacher's DDIM sampler (on ``teacher_grid``) for two steps from ``(z_t, t)``.

    ``t`` is ``[N]`` (rows may sit at different timesteps). Two batched calls of ``eps_fn``.
    """
    t_mid = torch.tensor([next_timestep(teacher_grid, int(v)) for v in t])
    t_next = torch.tensor([next_timestep(teacher_grid, int(v)) for v in t_mid])
    z_mid = _ddim_from(eps_fn, z_t, t, t_mid, labels, alphas_cumprod, clip)
    z_next = _ddim_from(eps_fn, z_mid, t_mid, t_next, labels, alphas_cumprod, clip)
    return TwoStepResult(t_mid, t_next, z_mid, z_next)


def _ddim_from(eps_fn, z, t, s, labels, alphas_cumprod, clip) -> torch.Tensor:  # type: ignore[no-untyped-def]
    a_t, s_t = alpha_sigma(alphas_cumprod, t)
    a_s, s_s = alpha_sigma(alphas_cumprod, s)
    eps = eps_fn(z, t, labels)
    return ddim_update(eps_to_x0(z, eps, a_t, s_t), eps, a_s, s_s, clip)


def x_target(
    z_t: torch.Tensor,
    z_next: torch.Tensor,
    t: torch.Tensor,
    t_next: torch.Tensor,
    alphas_cumprod: torch.Tensor,
) -> torch.Tensor:
    """The paper's student target ``x~`` (Algorithm 2):

    ``x~ = (z_t'' - (sigma_t''/sigma_t) z_t) / (alpha_t'' - (sigma_t''/sigma_t) alpha_t)``,

    the unique ``x`` for which **one** DDIM step from ``z_t`` to ``t''`` lands on the teacher's
    ``z_t''``. At ``t'' =`` [`TERMINAL`][reference.timestep_distillation.core.TERMINAL] it is
    ``z_t''`` itself.
    """
    a_t, s_t = alpha_sigma(alphas_cumprod, t)
    a_n, s_n = alpha_sigma(alphas_cumprod, t_next)
    ratio = s_n / s_t
    # Algorithm 2: x~ = (z'' - (sigma''/sigma_t) z_t) / (alpha'' - (sigma''/sigma_t) alpha_t)
    return (z_next - ratio * z_t) / (a_n - ratio * a_t)


def student_x_hat(
    z_t: torch.Tensor,
    eps: torch.Tensor,
    t: torch.Tensor,
    t_next: torch.Tensor,
    alphas_cumprod: torch.Tensor,
    clip: float | None = 1.0,
) -> torch.Tensor:
    """The x-prediction that the student's **clipped** DDIM step ``t -> t''`` effectively uses.

    The sampler clips ``x_hat = (z_t - sigma_t eps)/alpha_t`` to [-1, 1] but keeps ``eps`` unclipped
    (diffusers' DDIM). Where nothing is clipped this is ``x_hat`` itself; where the clip acts, it is
    the x for which an unclipped step would land where the clipped one lands
    ([`x_target`][reference.timestep_distillation.core.x_target] of the student's own ``z_t''``).
    Comparing this, not the raw ``x_hat``, with ``x~`` trains exactly what the sampler executes:
    without it the loss would push raw ``x_hat`` into [-1, 1], a change the sampler never sees, by
    moving ``eps``, which it does see (on the digits ~15% of the pixels of a teacher's ``x_hat`` lie
    just outside [-1, 1]).
    """
    a_t, s_t = alpha_sigma(alphas_cumprod, t)
    a_n, s_n = alpha_sigma(alphas_cumprod, t_next)
    z_next = ddim_update(eps_to_x0(z_t, eps, a_t, s_t), eps, a_n, s_n, clip)
    return x_target(z_t, z_next, t, t_next, alphas_cumprod)


def truncated_snr_weight(alpha: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """``max(SNR, 1) = max(alpha^2 / sigma^2, 1)``: the paper's weighting of the x-space loss."""
    return torch.clamp(alpha**2 / sigma**2, min=1.0)  # Sec. 4: "truncated SNR" weighting


def distillation_loss(
    student: nn.Module,
    teacher_eps: EpsFn,
    x0: torch.Tensor,
    labels: torch.Tensor,
    student_steps: int,
    alphas_cumprod: torch.Tensor,
    *,
    base_steps: int = BASE_STEPS,
    clip: float | None = 1.0,
    weighting: str = "truncated_snr",
) -> torch.Tensor:
    """One progressive-distillation loss (Algorithm 2) for a student of ``student_steps`` steps.

    Draws ``t`` uniformly from the student's grid and ``eps ~ N(0, I)`` (torch's global RNG), forms
    ``z_t``, computes the target ``x~`` from two teacher DDIM steps on the ``2N``-step grid (no
    gradient), and returns ``mean(w_t * ||x~ - x_hat||^2)`` where ``x_hat`` is the x-prediction of
    the student's clipped DDIM step
    ([`student_x_hat`][reference.timestep_distillation.core.student_x_hat]; the raw ``(z_t - sigma_t
    eps_student) / alpha_t`` where nothing is clipped) and ``w_t`` the paper's truncated-SNR weight
    ``max(SNR_t, 1)`` (or ``SNR_t``, an epsilon-space loss, with ``weighting="snr"``).
    """
    grid = timestep_grid(student_steps, base_steps)
    teacher_grid = timestep_grid(2 * student_steps, base_steps)
    n = x0.shape[0]
    t = torch.tensor(grid)[torch.randint(len(grid), (n,))]
    a_t, s_t = alpha_sigma(alphas_cumprod, t)
    z_t = a_t * x0 + s_t * torch.randn_like(x0)  # Algorithm 2: z_t = alpha_t x + sigma_t eps
    with torch.no_grad():
        two = two_ddim_steps(teacher_eps, z_t, t, labels, teacher_grid, alphas_cumprod, clip)
        target = x_target(z_t, two.z_next, t, two.t_next, alphas_cumprod)
    eps = student(z_t, t, class_labels=labels, return_dict=False)[0]
    x_hat = student_x_hat(z_t, eps, t, two.t_next, alphas_cumprod, clip)
    per_sample = (target - x_hat).pow(2).flatten(1).mean(1)  # Algorithm 2: ||x~ - x_hat||^2
    if weighting == "truncated_snr":
        weight = truncated_snr_weight(a_t, s_t)
    elif weighting == "snr":
        weight = a_t**2 / s_t**2
    else:
        raise ValueError(f"weighting must be 'truncated_snr' or 'snr', got {weighting!r}")
    return (weight.flatten() * per_sample).mean()
