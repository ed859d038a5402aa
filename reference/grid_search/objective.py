"""What one grid point costs and how good it is: sample with the zoo teacher, measure FDD and
latency. Also a cheap deterministic ``toy`` objective for protocol tests (no model).

The samplers are the harness's (`reference.harness.schedulers`): trailing spacing, a last
step to ``abar = 1`` and x0 clipping, the settings the scheduler-tradeoff benchmark shows this
model needs; without them DPM-Solver++ scores an FDD of hundreds at 4 steps and the search
would only rediscover a misconfiguration.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

SAMPLERS: tuple[str, ...] = ("ddim", "dpmpp2m", "unipc")
"""The grid's samplers: names of `reference.harness.schedulers.SCHEDULERS`."""
SELECT_SEEDS: tuple[int, ...] = (100, 101)
"""Noise seeds the grid is evaluated (and the choice made) on; disjoint from the seeds
(`reference.harness.seeds.SEEDS`) on which the benchmark reports the choice."""

DEFAULT_POINT: dict[str, Any] = {"sampler": "ddim", "steps": 50, "guidance": 1.0}
"""The default configuration the search must beat: DDIM, 50 steps, no guidance."""

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


@lru_cache(maxsize=1)
def _teacher() -> Any:
    from reference import zoo

    return zoo.load_teacher()


def scheduler_for(name: str) -> Any:
    """A fresh diffusers scheduler for sampler ``name``, configured like every benchmark's."""
    from reference.harness.schedulers import make_scheduler

    return make_scheduler(name)


def sample_point(point: Mapping[str, Any], n: int, seed: int = 0) -> tuple[Any, Any]:
    """``(samples, NFE counter)`` of the zoo teacher at ``point`` from ``make_noise(n, seed)``."""
    import torch

    from reference.harness import class_labels, count_nfe, make_noise, model_eps_fn, sample

    check_point(point)
    counter = count_nfe(model_eps_fn(_teacher()))
    with torch.inference_mode():
        x = sample(
            counter,
            scheduler_for(str(point["sampler"])),
            make_noise(n, seed),
            steps=int(point["steps"]),
            labels=class_labels(n),
            guidance_scale=float(point["guidance"]),
            seed=seed,
        )
    return x, counter


def model_objective(n: int, seeds: tuple[int, ...] = SELECT_SEEDS) -> Any:
    """Objective for [`run_worker`][reference.grid_search.search.run_worker]: the mean FDD over the
    selection ``seeds``, the latency of one run (the first seed's), NFE and denoiser rows per
    image."""

    def evaluate(point: Mapping[str, Any]) -> dict[str, float]:
        from reference.harness import frechet_digits_distance

        fds, latency_ms, counter = [], 0.0, None
        for i, seed in enumerate(seeds):
            start = time.perf_counter()
            x, counter = sample_point(point, n, seed)
            if i == 0:
                latency_ms = (time.perf_counter() - start) * 1000
            fds.append(frechet_digits_distance(x))
        assert counter is not None  # seeds is never empty (Config.validate)
        return {
            "fd_digits": sum(fds) / len(fds),
            "latency_ms": latency_ms,
            "nfe": float(counter.nfe),
            "rows_per_image": counter.rows / n,
        }

    return evaluate


def toy_objective(sleep_s: float = 0.2) -> Any:
    """A deterministic stand-in (quality falls with steps, cost grows with rows) that sleeps
    ``sleep_s`` per trial, so that a worker can be killed mid-study in tests."""

    def evaluate(point: Mapping[str, Any]) -> dict[str, float]:
        check_point(point)
        time.sleep(sleep_s)
        steps, g = int(point["steps"]), float(point["guidance"])
        rows = steps * (1 if g == 1.0 else 2)
        bias = {"ddim": 1.0, "dpmpp2m": 0.6, "unipc": 0.7}[str(point["sampler"])]
        return {
            "fd_digits": bias / math.sqrt(steps) + abs(g - 1.5) * 0.1,
            "latency_ms": 10.0 * rows,
        }

    return evaluate


TINY_UNET: dict[str, Any] = {
    "sample_size": 16,
    "in_channels": 1,
    "out_channels": 1,
    "block_out_channels": [16, 32],
    "layers_per_block": 1,
    "down_block_types": ["DownBlock2D", "AttnDownBlock2D"],
    "up_block_types": ["AttnUpBlock2D", "UpBlock2D"],
    "attention_head_dim": 16,
    "norm_num_groups": 8,
    "num_class_embeds": 11,
}
"""A throw-away U-Net for the training-hyperparameter grid (not a zoo model: never saved)."""

TRAIN_SPACE: dict[str, list[Any]] = {"lr": [3e-4, 1e-3, 3e-3, 1e-2]}
QUICK_TRAIN_SPACE: dict[str, list[Any]] = {"lr": [1e-3, 1e-2]}


def train_objective(steps: int, n_eval: int, batch: int = 64, p_uncond: float = 0.15) -> Any:
    """Objective over training hyperparameters: train
    [`TINY_UNET`][reference.grid_search.objective.TINY_UNET] for ``steps`` AdamW steps at learning
    rate ``point["lr"]`` (epsilon loss, label dropout ``p_uncond``, seed 0), then sample ``n_eval``
    images with DDIM 10 steps and return FDD and the training time."""

    def evaluate(point: Mapping[str, Any]) -> dict[str, float]:
        import torch
        from diffusers import DDPMScheduler, UNet2DModel

        from reference import zoo
        from reference.harness import (
            NULL_CLASS,
            class_labels,
            frechet_digits_distance,
            load_digits_tensors,
            make_noise,
            model_eps_fn,
            sample,
        )

        lr = float(point["lr"])
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        x, y = load_digits_tensors("train")
        torch.manual_seed(0)
        model = UNet2DModel(**TINY_UNET)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        noise_sched = DDPMScheduler.from_config(zoo.teacher_scheduler_config())
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
        train_ms = (time.perf_counter() - start) * 1000
        model.eval()
        samples = sample(
            model_eps_fn(model),
            zoo.teacher_scheduler(),
            make_noise(n_eval, 0),
            steps=10,
            labels=class_labels(n_eval),
        )
        return {
            "fd_digits": frechet_digits_distance(samples),
            "latency_ms": train_ms,
            "final_loss": float(loss.detach()),
        }

    return evaluate
