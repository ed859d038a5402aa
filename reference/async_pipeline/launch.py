"""The pipeline under ``torchrun``: the launched processes are the two stages.

``torchrun --standalone --nproc-per-node=2 -m reference.async_pipeline`` starts two processes with
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` in their environment.
Each joins the ``env://`` rendezvous ([`stage_group`][reference.async_pipeline.runtime.stage_group])
and runs [`run_job`][reference.async_pipeline.runtime.run_job], the function the processes of
[`StagePool`][reference.async_pipeline.runtime.StagePool] run:

1. rank 0 (stage 1) measures the unit times and broadcasts the split, so both ranks cut the
   U-Net at the same unit (two hosts measuring separately could disagree);
2. for every batch and mode, both ranks run the job ``repeats`` times;
3. rank 1 (stage 2) sends its samples and compute time to rank 0 (``send``/``recv``);
4. after the group is closed, rank 0 alone compares them with the single-process sampler from
   the same noise, prints, and writes ``async-pipeline-torchrun.safetensors`` (the samples) and
   ``async-pipeline-torchrun.json`` (the numbers). Rank 1 writes nothing.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from .runtime import MODES, Job, job_noise, run_job, single_process, stage_group
from .stages import balanced_split, unit_names, unit_times_ms

STEM = "async-pipeline-torchrun"
"""File names (``.safetensors``, ``.json``) of what rank 0 writes."""


def agreed_split(rank: int, unet: torch.nn.Module, batch: int) -> int:
    """Rank 0 chooses the split from its unit times; every rank returns the same value."""
    value = torch.zeros(1, dtype=torch.int64)
    if rank == 0:
        value[0] = balanced_split(unit_times_ms(unet, batch, repeats=1 if batch <= 4 else 3))
    dist.broadcast(value, src=0)
    return int(value.item())


def to_rank0(
    rank: int, samples: list[torch.Tensor] | None, compute: float, job: Job
) -> tuple[list[torch.Tensor], float] | None:
    """Rank 1's samples and compute seconds on rank 0 (``None`` on rank 1, which sends them)."""
    requests = job.requests if job.mode == "stream" else 1
    if rank == 1:
        assert samples is not None and len(samples) == requests
        for x in samples:
            dist.send(x.contiguous(), dst=0)
        dist.send(torch.tensor([compute], dtype=torch.float64), dst=0)
        return None
    bufs = [torch.empty_like(job_noise(job, r)[0]) for r in range(requests)]
    for buf in bufs:
        dist.recv(buf, src=1)
    seconds = torch.zeros(1, dtype=torch.float64)
    dist.recv(seconds, src=1)
    return bufs, float(seconds.item())


def _jobs(cfg: Any) -> list[Job]:
    return [
        Job(n, cfg.steps, mode=mode, warmup=cfg.warmup, requests=2)
        for n in cfg.batches
        for mode in MODES
    ]


def run_ranks(cfg: Any) -> dict[str, Any] | None:
    """Run every job of ``cfg`` on this rank; rank 0 returns the runs, rank 1 ``None``."""
    from reference import zoo

    runs = []
    with stage_group("env://"):
        rank = dist.get_rank()
        unet = zoo.load_teacher()
        split = agreed_split(rank, unet, max(cfg.batches))
        for job in _jobs(cfg):
            walls = []
            for _ in range(cfg.repeats):
                samples, compute, wall = run_job(rank, unet, split, job)
                walls.append(wall)
            got = to_rank0(rank, samples, compute, job)
            if got is not None:  # rank 0: compute seconds of the last repeat, median wall
                run = {"job": job, "samples": got[0], "compute_s": [compute, got[1]]}
                runs.append(run | {"wall_s": statistics.median(walls)})
    if rank != 0:
        return None
    return {"unet": unet, "split": split, "units": unit_names(unet), "runs": runs}


def _compare(unet: torch.nn.Module, run: dict[str, Any]) -> dict[str, Any]:
    from reference.harness import psnr_per_sample

    job: Job = run["job"]
    refs = single_process(unet, job)
    got = torch.cat(run["samples"])
    ref = torch.cat(refs)
    return {
        "batch": job.n,
        "mode": job.mode,
        "warmup": job.warmup,
        "requests": len(refs),
        "wall_ms": run["wall_s"] * 1000,
        "compute_ms": [c * 1000 for c in run["compute_s"]],
        "max_abs": float((got - ref).abs().max()),
        "psnr": float(psnr_per_sample(got, ref).mean()),
    }


def write(cfg: Any, state: dict[str, Any], out: Path) -> tuple[dict[str, Any], list[Path]]:
    """Rank 0: compare every run with the single process, write the samples and the numbers."""
    from safetensors.torch import save_file

    rows = [_compare(state["unet"], run) for run in state["runs"]]
    summary = {
        "world_size": 2,
        "backend": "gloo",
        "threads_per_rank": torch.get_num_threads(),
        "split": state["split"],
        "units": state["units"],
        "steps": cfg.steps,
        "warmup": cfg.warmup,
        "repeats": cfg.repeats,
        "runs": rows,
    }
    tensors = {
        f"b{run['job'].n}-{run['job'].mode}-{r}": x.contiguous()
        for run in state["runs"]
        for r, x in enumerate(run["samples"])
    }
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{STEM}.safetensors", out / f"{STEM}.json"]
    save_file(tensors, str(paths[0]))
    paths[1].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary, paths


def report(summary: dict[str, Any], paths: list[Path], text: Any) -> None:
    """Print the split, one line per run and the files written, in the user's language."""
    split = summary["split"]
    last = summary["units"][split - 1]
    print(text.message("demo.launched", {"world": 2, "split": split, "last": last}))
    for row in summary["runs"]:
        compute = {"compute0_ms": row["compute_ms"][0], "compute1_ms": row["compute_ms"][1]}
        print(text.message(f"demo.launched-{row['mode']}", row | compute))
    for path in paths:
        print(text.message("cli.wrote", {"path": str(path)}))
