"""Progressive distillation: halve the number of sampling steps, again and again.

Idea
====
A deterministic sampler (DDIM, Song et al. 2021, arXiv:2010.02502) turns noise into an image by
``N`` evaluations of a denoiser. Progressive distillation (Salimans & Ho 2022, arXiv:2202.00512)
trains a **student** network so that **one** of its DDIM steps does what **two** DDIM steps of
its teacher do. The student starts as a copy of the teacher, so it only has to learn the
correction from "one small step" to "one double step". Once trained it becomes the teacher of
the next round: ``64 -> 32 -> 16 -> 8 -> 4 -> 2`` steps here, each round a few hundred optimizer
steps on a CPU. The architecture never changes; only the number of network calls per sample
falls (16x fewer from 64 to 4 steps). That step ratio estimates the speedup but does not bound
it: per-step costs outside the network (the scheduler, fixed overheads) differ between samplers.
At equal steps the student costs exactly what the teacher costs, so the claim to test is quality:
the student against the teacher's own sampler at the same steps, and against the teacher at many.

The target (paper, Algorithm 2)
===============================
With ``z_t = alpha_t x + sigma_t eps``, draw a training image ``x``, a student timestep ``t``
and noise, run the teacher's DDIM twice, ``z_t -> z_t' -> z_t''``, and ask which clean image
``x~`` a single DDIM step from ``z_t`` would need to predict to land exactly on ``z_t''``:

    z_t'' = alpha_t'' x~ + sigma_t'' (z_t - alpha_t x~) / sigma_t
    =>  x~ = (z_t'' - (sigma_t''/sigma_t) z_t) / (alpha_t'' - (sigma_t''/sigma_t) alpha_t)

The student is trained to predict ``x~`` with the loss ``max(SNR_t, 1) ||x~ - x_hat||^2``
("truncated SNR" weighting, ``SNR = alpha^2/sigma^2``).
[`two_ddim_steps`][reference.timestep_distillation.two_ddim_steps] and
[`x_target`][reference.timestep_distillation.x_target] compute the target;
[`distillation_loss`][reference.timestep_distillation.distillation_loss] is the whole training step.

One detail decides whether this works: the zoo's DDIM clips ``x_hat`` to [-1, 1] (diffusers'
``clip_sample=True``) but moves along the *unclipped* epsilon. The teacher's two steps include the
clip, so the student must be compared through the step it really takes:
[`student_x_hat`][reference.timestep_distillation.student_x_hat] is the x-prediction of the
student's clipped step. Comparing the raw ``x_hat`` instead (about 15% of a teacher's ``x_hat``
pixels on the digits lie just outside [-1, 1]) makes the loss pull them inside by changing epsilon -
which the sampler does use - and 20 optimizer steps at a learning rate of 1e-5 were enough to double
the 32-step student's FDD.

Epsilon-prediction teacher, x-space student
===========================================
The paper warns that an epsilon-prediction student degenerates at few steps: its image estimate
``x_hat = (z_t - sigma_t eps_hat) / alpha_t`` divides by ``alpha_t``, which goes to 0 at the
noisiest step, so tiny errors in ``eps_hat`` become huge errors in ``x_hat``; it recommends
predicting ``x`` or ``v = alpha eps - sigma x`` instead. The zoo teacher predicts epsilon. Here
the student keeps the teacher's network and output (so that the untrained student **is** the
teacher: at 64 steps it reproduces the teacher's DDIM-64 exactly, which the tests check), but
it is read and trained as an x-predictor: the loss compares ``x_hat`` with ``x~`` in image space
under the truncated-SNR weight, which is what the paper's x- and v-parameterisations optimise.
This works because no zoo grid reaches ``alpha = 0``: the noisiest timestep of the 64-step DDIM
grid is ``t = 945`` with ``alpha = 0.084``, so the amplification ``sigma/alpha`` is bounded by 12.
A teacher whose schedule ends at zero SNR (Lin et al. 2023, arXiv:2305.08891) would need a real
x- or v-output (a new output head trained from scratch, losing the exact initialisation).

Timestep grids ============== The first teacher is diffusers' ``DDIMScheduler`` at 64 steps on the
zoo schedule (grid ``945, 930, ..., 0``, then clean). Each student's grid keeps every other point of
its teacher's (``timestep_grid(4) = [945, 705, 465, 225]``). diffusers would re-space 4 DDIM steps
as ``750, 500, 250, 0`` (``T // N`` with "leading" spacing), which would no longer nest, so the
students (and, for a fair comparison, the control "teacher DDIM with 4 steps") run on
[`GridDDIMScheduler`][reference.timestep_distillation.GridDDIMScheduler], a DDIM scheduler on the
nested grid that plugs into the harness' sampling loop and equals ``DDIMScheduler`` at 64 steps.

When to use it, and pitfalls
============================
* When sampling cost dominates and you can afford a short re-training per halving (the paper:
  all rounds together cost about as much as training the teacher). The result is a normal
  diffusion model: any DDIM code samples it, at the number of steps it was distilled for.
* A student is only good at its own step count and grid; running the 4-step student with 8
  steps is not better (and with another spacing, worse).
* Each round inherits the previous round's error: keep every round converged, and compare the
  final student with the teacher's sampler at the *same* number of steps, not only with the
  teacher at many steps.
* Guidance: distilling a classifier-free guided sampler needs a first stage that folds the two
  guided passes into one network (Meng et al. 2023, arXiv:2210.03142); here the conditional
  model is distilled without guidance.

In production ============= There is no maintained library API that runs the distillation; the
students are ordinary models that diffusers samples with ``DDIMScheduler`` (or, as here, a scheduler
on their grid). Successors in the same family: guided distillation (Meng et al., arXiv:2210.03142,
distilled Stable Diffusion), SDXL-Lightning's progressive *adversarial* distillation (Lin et al.
2024, arXiv:2402.13929, models in diffusers with ``EulerDiscreteScheduler(timestep_spacing=
"trailing")``), and consistency distillation
([`reference.consistency_latent_diffusion`][reference.consistency_latent_diffusion]).

Package ``reference/timestep_distillation/`` (was ``reference.progressive_distillation``):
[`reference.timestep_distillation.core`][reference.timestep_distillation.core] (grids, DDIM step,
target, loss, [`GridDDIMScheduler`][reference.timestep_distillation.GridDDIMScheduler]),
[`reference.timestep_distillation.train`][reference.timestep_distillation.train] (zoo specs
``pd_student_8/4/2``),
[`reference.timestep_distillation.few_step`][reference.timestep_distillation.few_step] (what the
benchmarks of this technique and of
[`reference.consistency_latent_diffusion`][reference.consistency_latent_diffusion] share) and
[`reference.timestep_distillation.bench`][reference.timestep_distillation.bench] (configuration,
benchmark, demo). Run it with ``python -m reference.timestep_distillation`` (demo) or ``--bench``
(see ``--help``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .core import (
        BASE_STEPS,
        TERMINAL,
        GridDDIMScheduler,
        TwoStepResult,
        alpha_sigma,
        ddim_update,
        distillation_loss,
        eps_to_x0,
        next_timestep,
        student_x_hat,
        timestep_grid,
        truncated_snr_weight,
        two_ddim_steps,
        x_target,
    )
    from .students import load_student
    from .train import PLAN, ZOO_SPECS, init_student

__all__ = [
    "BASE_STEPS",
    "PLAN",
    "TERMINAL",
    "ZOO_SPECS",
    "GridDDIMScheduler",
    "TwoStepResult",
    "alpha_sigma",
    "ddim_update",
    "distillation_loss",
    "eps_to_x0",
    "init_student",
    "load_student",
    "next_timestep",
    "student_x_hat",
    "timestep_grid",
    "truncated_snr_weight",
    "two_ddim_steps",
    "x_target",
]

__getattr__ = attributes(__name__)
