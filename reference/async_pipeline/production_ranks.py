"""One rank of the asynchronous pipeline of a ``UNet2DConditionModel`` under ``torchrun``.

[`run_async`][reference.async_pipeline.production_launch.run_async] starts ``torchrun --standalone
--nproc-per-node=K -m reference.async_pipeline.production_ranks SPEC`` (``SPEC``: a JSON file of
the model, the configuration, the steps, the batch, the seed and the output folder). Every rank
builds the model from `reference.zoo.shapes` (same class, config and seed, so the
same weights) or from an importable factory, joins the ``env://`` rendezvous with the gloo backend
(CPU) and runs its stage of [`production`][reference.async_pipeline.production]:

1. rank 0 draws the latent noise and the prompt's ``encoder_hidden_states`` and broadcasts both
   (every stage needs the prompt: cross-attention is in down, mid and up blocks), then counts the
   units' FLOPs on them and broadcasts the split (3), so every rank cuts at the same units;
2. at step ``i`` rank ``r`` runs stage ``r + 1``: rank 0 on ``x_i``, rank ``r > 0`` on the
   hand-off rank ``r - 1`` sent at step ``i`` during warm-up (1), else at step ``i - 1`` (2),
   received while it computes; the last rank applies the DDIM step and sends ``x_{i+1}`` to
   rank 0. With ``K`` ranks all stages compute at once after warm-up, and a step costs about
   ``max_k s_k + c`` instead of ``sum_k s_k + c`` (the package's cost model);
3. the last rank sends its trajectory ``x_1 .. x_S`` to rank 0, every rank its compute and wall
   seconds (``gather``); rank 0 alone writes ``async-production.safetensors`` and ``.json``.

The hand-off shapes travel once, before the first hand-off (a small ``int64`` header), so a rank
needs no probe forward of the stages before it. Point-to-point messages between a pair of ranks
match in issue order (PyTorch docs, "Distributed communication package",
https://docs.pytorch.org/docs/stable/distributed.html), which the loop relies on: one tag.

Pitfalls
========
* Every rank holds the whole model (as the ranks of the package do) and uses its own part.
* Ranks must build equal weights: a shape built from a seed on one torch version is; a factory
  loading a checkpoint must load the same one on every host.
* On GPUs the same loop needs the NCCL backend, one device per rank and its tensors on that device
  (see the package docstring); this module runs gloo on CPU only.
"""

from __future__ import annotations

import importlib
import itertools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from reference.harness.production import require

from .production import SUPPORTED, TECHNIQUE, AsyncPipelineConfig, ddim_scheduler
from .production_stages import Conditioning, conditioning, run_units, split_stages, unit_names
from .runtime import _recv_handoff, _send, _Timer, _wait
from .stages import Handoff

STEM = "async-production"
"""File names (``.safetensors``, ``.json``) of what rank 0 writes."""


def _build(name: str, real: bool, seed: int) -> nn.Module:
    """A `reference.zoo.shapes` kind, or the factory ``module:qualname``, with weights from
    ``seed``."""
    from reference.zoo import shapes

    if ":" not in name:
        return shapes.build(name, real=real, seed=seed)
    module, _, qualname = name.partition(":")
    factory: Any = importlib.import_module(module)
    for part in qualname.split("."):
        factory = getattr(factory, part)
    torch.manual_seed(seed)
    return factory().eval()


def _broadcast(tensors: Sequence[torch.Tensor] | None, count: int, dtype: torch.dtype) -> list:
    """Rank 0's ``count`` tensors of ``dtype`` on every rank (shapes first, as an int64 header)."""
    header = torch.zeros(count, 8, dtype=torch.int64)
    if tensors is not None:
        for i, t in enumerate(tensors):
            header[i, 0] = t.dim()
            header[i, 1 : 1 + t.dim()] = torch.tensor(t.shape)
    dist.broadcast(header, src=0)
    out = []
    for i in range(count):
        shape = header[i, 1 : 1 + int(header[i, 0])].tolist()
        buf = tensors[i].contiguous() if tensors is not None else torch.empty(shape, dtype=dtype)
        dist.broadcast(buf, src=0)
        out.append(buf)
    return out


def _send_shapes(tensors: Sequence[torch.Tensor], dst: int) -> None:
    """The hand-off's shapes (count, then one NCHW row each), once before the first hand-off."""
    dist.send(torch.tensor([len(tensors)]), dst=dst)
    dist.send(torch.tensor([list(t.shape) for t in tensors]), dst=dst)


def _recv_shapes(src: int) -> list[torch.Size]:
    count = torch.zeros(1, dtype=torch.int64)
    dist.recv(count, src=src)
    shapes = torch.zeros(int(count), 4, dtype=torch.int64)
    dist.recv(shapes, src=src)
    return [torch.Size(s) for s in shapes.tolist()]


@torch.no_grad()
def _stage_loop(
    unet: nn.Module,
    bounds: tuple[int, int],
    cond: Conditioning,
    x: torch.Tensor,
    steps: int,
    config: AsyncPipelineConfig,
) -> tuple[list[torch.Tensor], float]:
    """This rank's stage over all steps; returns (trajectory on the last rank, compute s)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    first, last = rank == 0, rank == world - 1
    lo, hi = bounds
    scheduler = ddim_scheduler(steps)
    timer, pending, stale, shapes = _Timer(), [], None, None
    trajectory: list[torch.Tensor] = []
    for i, t in enumerate(scheduler.timesteps):
        synchronous = config.mode == "sync" or i < max(config.warmup, 1)
        if first:
            with timer:
                out = run_units(unet, scheduler.scale_model_input(x, t), t, cond, lo, hi)
        else:
            shapes = shapes or _recv_shapes(rank - 1)
            bufs, works = _recv_handoff(shapes, rank - 1)
            if synchronous:
                _wait(works)
            state = Handoff.from_tensors(bufs if synchronous else stale)  # (1) / (2)
            with timer:  # (2): the previous step's hand-off while this step's one arrives
                out = run_units(unet, state, t, cond, lo, hi)
            if not synchronous:
                _wait(works)
            stale = bufs
        if last:
            with timer:
                x = scheduler.step(out.h, t, x).prev_sample
            trajectory.append(x)
            if not first and i < steps - 1:
                _wait(pending)
                pending = _send([x], 0)
        else:
            _wait(pending)
            if i == 0:
                _send_shapes(out.tensors(), rank + 1)
            pending = _send(out.tensors(), rank + 1)
        if first and not last and i < steps - 1:
            dist.recv(x, src=world - 1)
    _wait(pending)
    return trajectory, timer.total


def _inputs(unet: nn.Module, spec: dict[str, Any]) -> list[torch.Tensor] | None:
    """Rank 0 draws the prompt (`reference.zoo.shapes.example_inputs`) and the noise, at the
    model's own latent side or at ``spec["side"]``."""
    from reference.zoo.shapes import example_inputs

    if dist.get_rank() != 0:
        return None
    inputs = example_inputs(unet, batch=spec["batch"], seed=spec["seed"])
    noise = inputs["sample"]
    if spec["side"] is not None:
        g = torch.Generator().manual_seed(spec["seed"])
        noise = torch.randn(*noise.shape[:2], spec["side"], spec["side"], generator=g)
    return [noise, inputs["encoder_hidden_states"]]


def _agreed_split(unet: nn.Module, config: AsyncPipelineConfig, noise: Any, ehs: Any) -> Any:
    """Rank 0 counts the FLOPs and chooses the split; every rank gets its boundaries."""
    edges = torch.zeros(config.stages + 1, dtype=torch.int64)
    flops = torch.zeros(config.stages, dtype=torch.int64)
    if dist.get_rank() == 0:
        inputs = {"sample": noise, "timestep": torch.tensor(500.0), "encoder_hidden_states": ehs}
        split = split_stages(unet, config.stages, config.split, inputs, config.balance)
        edges[:] = torch.tensor([0, *[hi for _, hi in split.bounds]])
        flops[:] = torch.tensor(split.flops or [0] * config.stages)
    dist.broadcast(edges, src=0)
    dist.broadcast(flops, src=0)
    return edges.tolist(), flops.tolist()


def _tuple(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(value)


def rank_main(spec: dict[str, Any]) -> None:
    """One rank of [`run_async`][reference.async_pipeline.production_launch.run_async]."""
    config = AsyncPipelineConfig(**{**spec["config"], "split": _tuple(spec["config"]["split"])})
    torch.set_num_threads(config.threads)
    dist.init_process_group("gloo", init_method="env://")
    try:
        if dist.get_world_size() != config.stages:
            raise RuntimeError(f"{config.stages} stages need {config.stages} ranks")
        unet = _build(spec["model"], spec["real"], spec["seed"])
        require(unet, SUPPORTED, TECHNIQUE)
        noise, ehs = _broadcast(_inputs(unet, spec), 2, torch.float32)
        edges, flops = _agreed_split(unet, config, noise, ehs)
        rank, steps = dist.get_rank(), spec["steps"]
        scheduler = ddim_scheduler(steps)
        cond = conditioning(noise, ehs)
        dist.barrier()
        start = time.perf_counter()
        x = noise * scheduler.init_noise_sigma
        path, compute = _stage_loop(unet, (edges[rank], edges[rank + 1]), cond, x, steps, config)
        dist.barrier()
        times = torch.tensor([compute, time.perf_counter() - start], dtype=torch.float64)
        _collect(rank, path, times, noise, ehs, edges, flops, unet, spec)
    finally:
        dist.destroy_process_group()


def _collect(
    rank: int, path: list[torch.Tensor], times: torch.Tensor, noise: torch.Tensor, ehs: Any,
    edges: list[int], flops: list[int], unet: nn.Module, spec: dict[str, Any],
) -> None:  # fmt: skip
    """The trajectory and every rank's seconds to rank 0, which writes them."""
    world = dist.get_world_size()
    gathered = [torch.zeros(2, dtype=torch.float64) for _ in range(world)] if rank == 0 else None
    dist.gather(times, gathered, dst=0)
    trajectory = torch.stack(path) if path else torch.empty(spec["steps"], *noise.shape)
    if world > 1 and rank == world - 1:
        dist.send(trajectory.contiguous(), dst=0)
    elif world > 1 and rank == 0:
        dist.recv(trajectory, src=world - 1)
    if rank != 0:
        return
    from safetensors.torch import save_file

    out = Path(spec["out"])
    tensors = {"trajectory": trajectory, "noise": noise, "encoder_hidden_states": ehs}
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / f"{STEM}.safetensors"))
    names = unit_names(unet)
    summary = {
        "world_size": world,
        "backend": "gloo",
        "stages": [names[a:b] for a, b in itertools.pairwise(edges)],
        "stage_flops": flops if any(flops) else None,
        "compute_s": [float(g[0]) for g in gathered or []],
        "wall_s": [float(g[1]) for g in gathered or []],
    }
    (out / f"{STEM}.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    rank_main(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))
