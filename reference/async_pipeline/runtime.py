"""Two processes, one stage each, talking through ``torch.distributed`` (gloo on CPU).

[`StagePool`][reference.async_pipeline.runtime.StagePool] spawns the two ranks once
(``torch.multiprocessing``, start method ``spawn``), each with **one** intra-op thread, and keeps
them alive; ``pool.run(job)`` sends a [`Job`][reference.async_pipeline.runtime.Job] to both and
returns the last stage's samples plus each rank's compute time. Under ``torchrun``
([`launch`][reference.async_pipeline.launch]) the launched processes are the two ranks instead, and
join with the ``env://`` rendezvous; both launchers run the same per-rank code,
[`stage_group`][reference.async_pipeline.runtime.stage_group] and
[`run_job`][reference.async_pipeline.runtime.run_job]. On GPUs the same loop needs
``backend="nccl"``, one device per rank and its tensors on that device (see the package docstring).

Modes
=====
``sync``   stage 2 waits for stage 1 of the *same* step: exact, no overlap (the control).
``async``  AsyncDiff (Chen et al. 2024, arXiv:2406.06911): after ``warmup`` synchronous steps,
           at step ``i`` stage 1 encodes ``x_i`` while stage 2 decodes the hand-off of
           ``x_{i-1}`` (one step stale), so both ranks compute at the same time; then rank 1
           applies the clipped-ODE DDIM step ([`step`][reference.async_pipeline.step]) and
           sends ``x_{i+1}`` back to rank 0.
``stream`` classic pipeline parallelism over requests (GPipe-style micro-batches): two
           requests alternate, stage 1 encodes request B while stage 2 decodes request A.
           Exact (no staleness); it raises throughput, not the latency of one request.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from .stages import Handoff, run_units, unit_names
from .step import ClippedDDIM

MODES = ("sync", "async", "stream")


@dataclass(frozen=True)
class Job:
    """One sampling job for the pool: ``n`` images per request, DDIM ``steps``, ``mode``,
    synchronous ``warmup`` steps (async), ``requests`` (stream: must be even), noise ``seed``."""

    n: int
    steps: int
    mode: str = "async"
    warmup: int = 1
    requests: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; known: {', '.join(MODES)}")
        if self.n < 1 or self.steps < 1:
            raise ValueError(f"n and steps must be >= 1, got n={self.n}, steps={self.steps}")
        if not 0 <= self.warmup <= self.steps:
            raise ValueError(f"warmup must be in 0..steps, got {self.warmup}")
        if self.mode == "stream" and (self.requests < 2 or self.requests % 2):
            raise ValueError(f"stream needs an even number of requests >= 2, got {self.requests}")


@dataclass
class JobResult:
    """Samples (list of request batches, from the last stage) and per-rank compute seconds."""

    samples: list[torch.Tensor]
    compute_s: list[float]
    wall_s: float


def job_noise(job: Job, request: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The noise and labels of request ``request`` (seeds ``seed + request``)."""
    from reference.harness import class_labels, make_noise

    return make_noise(job.n, job.seed + request), class_labels(job.n)


class _Timer:
    def __init__(self) -> None:
        self.total = 0.0

    def __enter__(self) -> _Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.total += time.perf_counter() - self._start


def _recv_handoff(shapes: list[torch.Size], src: int) -> tuple[list[torch.Tensor], list[Any]]:
    bufs = [torch.empty(s) for s in shapes]
    return bufs, [dist.irecv(b, src=src) for b in bufs]


def _send(tensors: list[torch.Tensor], dst: int) -> list[Any]:
    return [dist.isend(t.contiguous(), dst=dst) for t in tensors]


def _wait(works: list[Any]) -> None:
    for w in works:
        w.wait()


@torch.inference_mode()
def _run_rank(rank: int, unet: torch.nn.Module, split: int, job: Job) -> tuple[Any, float]:
    """The sampling loop of one rank; returns (samples or None, compute seconds)."""
    n_units = len(unit_names(unet))
    lo, hi = (0, split) if rank == 0 else (split, n_units)
    timer = _Timer()
    requests = job.requests if job.mode == "stream" else 1
    ddim = ClippedDDIM.of(job.steps)
    noises = [job_noise(job, r) for r in range(requests)]
    xs = [noise.clone() for noise, _ in noises]
    labels = noises[0][1]
    timesteps = ddim.timesteps
    probe = run_units(unet, xs[0][:1], timesteps[0], labels[:1], 0, split)
    shapes = [torch.Size([job.n, *t.shape[1:]]) for t in probe.tensors()]
    pending: list[Any] = []

    if job.mode == "stream":
        for i, t in enumerate(timesteps):
            for r in range(requests):
                if rank == 0:
                    if i > 0:
                        dist.recv(xs[r], src=1)
                    with timer:
                        ho = run_units(unet, xs[r], t, labels, lo, hi)
                    _wait(pending)
                    pending = _send(ho.tensors(), 1)
                else:
                    bufs, works = _recv_handoff(shapes, 0)
                    _wait(works)
                    with timer:
                        eps = run_units(unet, Handoff.from_tensors(bufs), t, labels, lo, hi).h
                        xs[r] = ddim.step(xs[r], eps, i)
                    if i < len(timesteps) - 1:
                        _wait(pending)
                        pending = _send([xs[r]], 0)
        _wait(pending)
        return ([x.clamp(-1, 1) for x in xs] if rank == 1 else None), timer.total

    x, stale = xs[0], None
    for i, t in enumerate(timesteps):
        synchronous = job.mode == "sync" or i < job.warmup
        if rank == 0:
            with timer:
                ho = run_units(unet, x, t, labels, lo, hi)
            _wait(pending)
            pending = _send(ho.tensors(), 1)
            if i < len(timesteps) - 1:
                dist.recv(x, src=1)
        else:
            bufs, works = _recv_handoff(shapes, 0)
            waited = synchronous or stale is None
            if waited:
                _wait(works)
            current = bufs if waited else stale
            with timer:  # async: decode the previous step's hand-off while the new one arrives
                eps = run_units(unet, Handoff.from_tensors(current), t, labels, lo, hi).h
                x = ddim.step(x, eps, i)
            if not waited:
                _wait(works)
            stale = bufs
            if i < len(timesteps) - 1:
                _wait(pending)
                pending = _send([x], 0)
    _wait(pending)
    return ([x.clamp(-1, 1)] if rank == 1 else None), timer.total


def _build_unet(source: Mapping[str, Any] | None) -> torch.nn.Module:
    from reference import zoo
    from reference.zoo.specs import build_unet

    if source is None:
        return zoo.load_teacher()
    unet = build_unet(dict(source["config"]))
    unet.load_state_dict(source["state_dict"])
    return unet.eval()


@contextmanager
def stage_group(init_method: str = "env://", rank: int = -1) -> Iterator[None]:
    """The two ranks' process group (gloo): ``file://`` from
    [`StagePool`][reference.async_pipeline.runtime.StagePool], ``env://`` (``MASTER_ADDR``,
    ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``) under ``torchrun``."""
    world = 2 if rank >= 0 else -1  # -1: read RANK and WORLD_SIZE from the environment
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    try:
        if dist.get_world_size() != 2:
            raise RuntimeError(f"the pipeline has 2 stages, got world size {dist.get_world_size()}")
        yield
    finally:
        dist.destroy_process_group()


def run_job(rank: int, unet: torch.nn.Module, split: int, job: Job) -> tuple[Any, float, float]:
    """One job on this rank between two barriers: ``(samples on rank 1 else None, compute s,
    wall s)``. The per-rank function of both launchers."""
    dist.barrier()
    start = time.perf_counter()
    samples, compute = _run_rank(rank, unet, split, job)
    dist.barrier()
    return samples, compute, time.perf_counter() - start


def single_process(unet: torch.nn.Module, job: Job) -> list[torch.Tensor]:
    """The exact sampler in this process from the job's noise (one batch per request): DDIM on
    the clipped ODE (`reference.harness.ode.solve`), the step the stages take
    ([`ClippedDDIM`][reference.async_pipeline.step.ClippedDDIM])."""
    from reference.harness import model_eps_fn
    from reference.harness.ode import solve

    requests = job.requests if job.mode == "stream" else 1
    out = []
    with torch.inference_mode():
        for r in range(requests):
            noise, labels = job_noise(job, r)
            out.append(solve(model_eps_fn(unet), noise, steps=job.steps, labels=labels))
    return out


def _worker(
    rank: int, init_file: str, split: int, source: Any, inbox: list[Any], outbox: Any
) -> None:
    torch.set_num_threads(1)
    with stage_group(f"file://{init_file}", rank):
        unet = _build_unet(source)
        for job in iter(inbox[rank].get, None):
            outbox.put((rank, *run_job(rank, unet, split, job)))


class StagePool:
    """Two long-lived stage processes (ranks 0 and 1) at unit split ``split``.

    ``source``: ``None`` for the zoo teacher, or ``{"config": ..., "state_dict": ...}``.
    Use as a context manager; ``close()`` stops and joins both processes (killing them if they
    do not exit), so no process outlives the pool.
    """

    def __init__(self, split: int, source: Mapping[str, Any] | None = None) -> None:
        ctx = mp.get_context("spawn")
        self._dir = tempfile.TemporaryDirectory(prefix="async-pipeline-")
        init_file = os.path.join(self._dir.name, "rendezvous")
        self._inbox = [ctx.Queue(), ctx.Queue()]
        self._outbox = ctx.Queue()
        self._procs = [
            ctx.Process(
                target=_worker,
                args=(r, init_file, split, source, self._inbox, self._outbox),
                daemon=True,
            )
            for r in range(2)
        ]
        for p in self._procs:
            p.start()

    def run(self, job: Job, timeout: float = 600.0) -> JobResult:
        """Run ``job`` on both ranks; returns rank 1's samples and both compute times."""
        start = time.perf_counter()
        for q in self._inbox:
            q.put(job)
        results = {}
        for _ in range(2):
            rank, samples, compute, _wall = self._outbox.get(timeout=timeout)
            results[rank] = (samples, compute)
        wall = time.perf_counter() - start
        return JobResult(results[1][0], [results[0][1], results[1][1]], wall)

    def close(self) -> None:
        for q in self._inbox:
            q.put(None)
        for p in self._procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
        self._dir.cleanup()

    def __enter__(self) -> StagePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
