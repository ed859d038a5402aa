"""The asynchronous pipeline of a ``UNet2DConditionModel`` under ``torchrun``: one stage per rank.

[`run_async`][reference.async_pipeline.production_launch.run_async] starts ``torchrun --standalone
--nproc-per-node=K -m reference.async_pipeline.production_ranks SPEC`` (the launcher the package's
[`launch`][reference.async_pipeline.launch] runs under, with ``K`` ranks instead of two) and returns
what rank 0 wrote: the final latents, the trajectory ``x_1 .. x_S``, the inputs, the split and every
rank's compute and wall seconds ([`AsyncRun`][reference.async_pipeline.production_launch.AsyncRun]).
What each rank does is in [`production_ranks`][reference.async_pipeline.production_ranks].

Pitfalls
========
* ``OMP_NUM_THREADS`` (``config.threads``) and ``OMP_WAIT_POLICY=PASSIVE`` are set for the
  children: spinning OpenMP threads of oversubscribed processes were measured 10-50x slower
  (package docstring). ``RANK``, ``WORLD_SIZE`` and the rendezvous variables of an outer launcher
  are removed: ``torchrun`` sets its own.
* A factory is named by ``module:qualname`` and imported in every rank: a lambda or a local
  function is refused; a kind of `reference.zoo.shapes` whose class is not supported is refused
  before ``torchrun`` starts, a factory's class in the ranks (re-raised here as
  `UnsupportedModel`).
* The children import this checkout's ``reference`` (``PYTHONPATH``), not an installed copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from reference.harness.production import UnsupportedModel

from .production import SUPPORTED, TECHNIQUE, AsyncPipelineConfig
from .production_ranks import STEM

RANKS = "reference.async_pipeline.production_ranks"
"""The module every rank runs (``torchrun ... -m RANKS SPEC``)."""


@dataclass
class AsyncRun:
    """Rank 0's record of one run: the final latents, the trajectory ``x_1 .. x_S``, the inputs,
    the split (unit names per stage, stage FLOPs) and each rank's compute and wall seconds."""

    latents: torch.Tensor
    trajectory: torch.Tensor
    noise: torch.Tensor
    encoder_hidden_states: torch.Tensor
    stages: list[list[str]]
    stage_flops: list[int] | None
    compute_s: list[float]
    wall_s: list[float]


def _factory_name(model: str | Callable[[], nn.Module]) -> str:
    """The spec's model: a `reference.zoo.shapes` kind, or ``module:qualname`` of a factory."""
    from reference.zoo.shapes import CLASS_OF

    if isinstance(model, str):
        if model not in CLASS_OF:
            raise ValueError(f"unknown model kind {model!r}; known: {', '.join(CLASS_OF)}")
        if CLASS_OF[model] not in SUPPORTED:
            raise UnsupportedModel(
                f"{TECHNIQUE} does not support {CLASS_OF[model]}; supported: {', '.join(SUPPORTED)}"
            )
        return model
    name = f"{model.__module__}:{model.__qualname__}"
    if "<" in name or model.__module__ == "__main__":
        raise ValueError(f"the model factory must be importable by name in every rank, got {name}")
    return name


def _torchrun(world_size: int) -> list[str]:
    script = Path(sys.executable).with_name("torchrun")  # the environment's own; else the module
    launcher = (
        [str(script)] if script.is_file() else [sys.executable, "-m", "torch.distributed.run"]
    )
    return [*launcher, "--standalone", f"--nproc-per-node={world_size}"]


def _environment(threads: int) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])  # the checkout holding this package
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)  # torchrun sets them for its children
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def run_async(
    model: str | Callable[[], nn.Module],
    config: AsyncPipelineConfig,
    steps: int,
    world_size: int,
    *,
    real: bool = False,
    batch: int = 1,
    side: int | None = None,
    seed: int = 0,
    timeout: float = 600.0,
) -> AsyncRun:
    """Sample ``steps`` DDIM steps with ``config.stages == world_size`` ranks under ``torchrun``.

    ``model``: a `reference.zoo.shapes` kind (``"unet2d-condition"``; ``real`` for its published
    shape) or an importable zero-argument factory, built in every rank with weights from ``seed``.
    ``batch`` latents of side ``side`` (default: the model's ``sample_size``; SD 1.5 at 512 px is
    64) and a prompt from `reference.zoo.shapes.example_inputs` (77 tokens at real shape), noise
    from ``seed``. Refuses an unsupported kind before launching, a world size other than
    ``config.stages``, and an unsupported factory's class in its ranks (re-raised here).
    """
    if world_size != config.stages:
        raise ValueError(f"one stage per rank: world_size {world_size} != stages {config.stages}")
    if steps < 1 or batch < 1:
        raise ValueError(f"steps and batch must be >= 1, got steps={steps}, batch={batch}")
    name = _factory_name(model)
    with tempfile.TemporaryDirectory(prefix="async-production-") as folder:
        spec = {"model": name, "real": real, "batch": batch, "side": side, "seed": seed}
        spec |= {"steps": steps}
        spec |= {"config": asdict(config), "out": folder}
        spec_path = Path(folder) / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        command = [*_torchrun(world_size), "-m", RANKS, str(spec_path)]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=_environment(config.threads),
            cwd=Path(__file__).resolve().parents[2],
            timeout=timeout,
        )
        if done.returncode != 0:
            _raise_rank_error(done.stderr)
        return _read(Path(folder))


def _raise_rank_error(stderr: str) -> None:
    for line in stderr.splitlines():
        if "UnsupportedModel: " in line:
            raise UnsupportedModel(line.split("UnsupportedModel: ", 1)[1].strip())
    raise RuntimeError(f"torchrun failed:\n{stderr[-3000:]}")


def _read(folder: Path) -> AsyncRun:
    from safetensors.torch import load_file

    tensors = load_file(str(folder / f"{STEM}.safetensors"))
    summary = json.loads((folder / f"{STEM}.json").read_text(encoding="utf-8"))
    return AsyncRun(
        latents=tensors["trajectory"][-1],
        trajectory=tensors["trajectory"],
        noise=tensors["noise"],
        encoder_hidden_states=tensors["encoder_hidden_states"],
        stages=summary["stages"],
        stage_flops=summary["stage_flops"],
        compute_s=summary["compute_s"],
        wall_s=summary["wall_s"],
    )
