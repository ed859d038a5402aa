"""What one grid point costs and how good it is on the *selection* side of the benchmark, and the
training-hyperparameter objective. Also a cheap deterministic ``toy`` objective for protocol
tests (no model).

Selection is kept apart from reporting
======================================
The search chooses by the mean FDD of a point over the selection seeds
([`SELECT_SEEDS`][reference.grid_search.objective.SELECT_SEEDS]) against the **training digits**
([`selection_reference`][reference.grid_search.objective.selection_reference]): neither the
seeds nor the real digits that the benchmark reports on (its paired seeds, and the reference
half of the held-out digits, `reference.harness.scores`) take any part in the choice, so the
reported figures carry no winner's-curse optimism. The training digits are the classifier's own
training set, which makes them a poor yardstick of absolute quality (the classifier has seen
them) but an honest one for ranking grid points against each other, and they are disjoint from
the reporting reference by construction (`reference.data`'s split).

Every point samples the clipped ODE that every sampler of the project solves
(`reference.harness.ode`, eqs. (1)-(3) there): DDIM along its trailing grid, DPM-Solver++(2M)
and UniPC on the clipped x̂₀, with classifier-free guidance on ε before clipping. The cost of a
point is counted in denoiser rows per image:

    rows(p) = steps(p) · (2 if guidance(p) ≠ 1 else 1)                                (1)

(one batched call per step evaluates the conditional and the unconditional rows).

Pitfalls
========
* FDD is biased by the number of samples: every point of one grid uses the same ``n`` and the
  same noise, so only the ranking is meaningful, never the level.
* The latency of a grid point is one run on a shared CPU; the benchmark re-measures the points
  it reports interleaved.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from reference.zoo.specs import TEACHER_CONFIG

SAMPLERS: tuple[str, ...] = ("ddim", "dpmpp2m", "unipc")
"""The grid's samplers: names of `reference.harness.ode.SAMPLERS`."""
SELECT_SEEDS: tuple[int, ...] = (100, 101)
"""Noise seeds the grid is evaluated (and the choice made) on; disjoint from the seeds on which
the benchmark reports the choice."""

DEFAULT_POINT: dict[str, Any] = {"sampler": "ddim", "steps": 50, "guidance": 1.0}
"""The default configuration the search must beat: DDIM, 50 steps, no guidance (the project's
one baseline, DDIM-50 trailing on the clipped ODE)."""

FULL_SPACE: dict[str, list[Any]] = {
    "sampler": list(SAMPLERS),
    "steps": [4, 8, 12, 20, 50],
    "guidance": [1.0, 1.5, 2.5],
}
QUICK_SPACE: dict[str, list[Any]] = {
    "sampler": ["ddim", "dpmpp2m"],
    "steps": [4, 10, 50],
    "guidance": [1.0],
}
"""A six-point grid for demos and tests; it contains the default point."""
SPACES = {"full": FULL_SPACE, "quick": QUICK_SPACE}


def check_point(point: Mapping[str, Any]) -> None:
    """ValueError naming the bad field of a grid point."""
    if point["sampler"] not in SAMPLERS:
        raise ValueError(f"unknown sampler {point['sampler']!r}; known: {', '.join(SAMPLERS)}")
    if int(point["steps"]) < 1:
        raise ValueError(f"steps must be >= 1, got {point['steps']}")
    if float(point["guidance"]) < 0:
        raise ValueError(f"guidance must be >= 0, got {point['guidance']}")


def rows_per_image(point: Mapping[str, Any]) -> int:
    """Denoiser rows one image of ``point`` costs, (1)."""
    return int(point["steps"]) * (1 if float(point["guidance"]) == 1.0 else 2)  # (1)


@lru_cache(maxsize=1)
def teacher() -> Any:
    from reference import zoo
    from reference.harness.sampling import frozen

    return frozen(zoo.load_teacher())


@lru_cache(maxsize=1)
def selection_reference() -> Any:
    """Classifier features and labels of the 1,497 training digits: the real side of the
    selection FDD (disjoint from the held-out digits the benchmark reports against)."""
    from reference.data import load_digits_tensors
    from reference.harness.quality import classifier_features
    from reference.harness.scores import FeatureSet

    x, y = load_digits_tensors("train")
    return FeatureSet(classifier_features(x).numpy(), y.numpy())


def select_fdd(samples: Any, labels: Any) -> float:
    """FDD of ``samples`` against `selection_reference` (the search's objective)."""
    from reference.harness.quality import classifier_features
    from reference.harness.scores import fdd

    features = classifier_features(samples).numpy()
    return fdd(features, labels.numpy(), selection_reference())


def sample_point(point: Mapping[str, Any], n: int, seed: int, eps_fn: Any = None) -> Any:
    """``n`` samples of ``point`` from ``make_noise(n, seed)`` with balanced labels, on the
    clipped ODE (``eps_fn`` defaults to the zoo teacher's denoiser)."""
    import torch

    from reference.harness.ode import solve
    from reference.harness.sampling import class_labels, make_noise, model_eps_fn

    check_point(point)
    eps = eps_fn if eps_fn is not None else model_eps_fn(teacher())
    with torch.inference_mode():
        return solve(
            eps,
            make_noise(n, seed),
            sampler=str(point["sampler"]),
            steps=int(point["steps"]),
            labels=class_labels(n),
            guidance_scale=float(point["guidance"]),
        )


def model_objective(n: int, seeds: tuple[int, ...] = SELECT_SEEDS) -> Any:
    """Objective for [`run_worker`][reference.grid_search.search.run_worker]: the mean selection
    FDD over ``seeds``, the latency of one run (the first seed's), and the denoiser rows per
    image (1)."""

    def evaluate(point: Mapping[str, Any]) -> dict[str, float]:
        from reference.harness.sampling import class_labels

        fds, latency_ms = [], 0.0
        for i, seed in enumerate(seeds):
            start = time.perf_counter()
            x = sample_point(point, n, seed)
            if i == 0:
                latency_ms = (time.perf_counter() - start) * 1000
            fds.append(select_fdd(x, class_labels(n)))
        return {
            "fd_digits": sum(fds) / len(fds),
            "latency_ms": latency_ms,
            "rows_per_image": float(rows_per_image(point)),
        }

    return evaluate


def toy_objective(sleep_s: float = 0.2) -> Any:
    """A deterministic stand-in (quality falls with steps, cost grows with rows) that sleeps
    ``sleep_s`` per trial, so that a worker can be killed mid-study in tests."""

    def evaluate(point: Mapping[str, Any]) -> dict[str, float]:
        check_point(point)
        time.sleep(sleep_s)
        steps, g = int(point["steps"]), float(point["guidance"])
        bias = {"ddim": 1.0, "dpmpp2m": 0.6, "unipc": 0.7}[str(point["sampler"])]
        return {
            "fd_digits": bias / math.sqrt(steps) + abs(g - 1.5) * 0.1,
            "latency_ms": 10.0 * rows_per_image(point),
        }

    return evaluate


TINY_UNET: dict[str, Any] = {
    **TEACHER_CONFIG,
    "block_out_channels": [16, 32],
    "down_block_types": ["DownBlock2D", "AttnDownBlock2D"],
    "up_block_types": ["AttnUpBlock2D", "UpBlock2D"],
    "attention_head_dim": 16,
}
"""A throw-away U-Net for the training-hyperparameter grid (not a zoo model: never saved): the
zoo teacher's blocks (`reference.zoo.specs.TEACHER_CONFIG`), two levels at half its width."""

TRAIN_SPACE: dict[str, list[Any]] = {"lr": [3e-4, 1e-3, 3e-3, 1e-2]}
QUICK_TRAIN_SPACE: dict[str, list[Any]] = {"lr": [1e-3, 1e-2]}
TRAIN_SEED = 0
"""Seed of the throw-away model's initialisation and of its training batches."""
EVAL_STEPS = 10
"""DDIM steps (clipped ODE) of the samples that score a trained model."""


def _train(lr: float, steps: int, batch: int, p_uncond: float) -> tuple[Any, float, float]:
    """``(model, seconds, final loss)`` of `TINY_UNET` trained ``steps`` AdamW steps at ``lr``
    (epsilon loss, label dropout ``p_uncond``) from `TRAIN_SEED`, without touching the
    process's global random state."""
    import torch
    from diffusers import DDPMScheduler, UNet2DModel

    from reference import zoo
    from reference.data import NULL_CLASS, load_digits_tensors

    x, y = load_digits_tensors("train")
    noise_sched = DDPMScheduler.from_config(zoo.teacher_scheduler_config())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TRAIN_SEED)
        model = UNet2DModel(**TINY_UNET)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        start = time.perf_counter()
        model.train()
        for _ in range(steps):
            idx = torch.randint(len(y), (batch,))
            labels = y[idx].clone()
            labels[torch.rand(batch) < p_uncond] = NULL_CLASS
            noise = torch.randn_like(x[idx])
            t = torch.randint(0, noise_sched.config.num_train_timesteps, (batch,))
            pred = model(noise_sched.add_noise(x[idx], noise, t), t, class_labels=labels).sample
            loss = torch.nn.functional.mse_loss(pred, noise)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - start
    return model.eval(), seconds, float(loss.detach())


def train_objective(
    steps: int,
    n_eval: int,
    seeds: tuple[int, ...] = SELECT_SEEDS,
    batch: int = 64,
    p_uncond: float = 0.15,
) -> Any:
    """Objective over training hyperparameters: train `TINY_UNET` at learning rate
    ``point["lr"]`` (`_train`), then score it like a sampling point: the mean selection FDD of
    ``n_eval`` DDIM-`EVAL_STEPS` samples over the selection ``seeds`` (the learning-rate rows are
    a selection like the grid, so they are scored on the selection seeds, never on a seed the
    benchmark reports on), and the training time."""

    def evaluate(point: Mapping[str, Any]) -> dict[str, float]:
        from reference.harness.sampling import class_labels, model_eps_fn

        lr = float(point["lr"])
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        model, seconds, loss = _train(lr, steps, batch, p_uncond)
        eps = model_eps_fn(model)
        ddim = {"sampler": "ddim", "steps": EVAL_STEPS, "guidance": 1.0}
        fds = [select_fdd(sample_point(ddim, n_eval, s, eps), class_labels(n_eval)) for s in seeds]
        return {
            "fd_digits": sum(fds) / len(fds),
            "latency_ms": seconds * 1000,
            "final_loss": loss,
        }

    return evaluate
