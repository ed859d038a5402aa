"""Asynchronous pipeline inference: the zoo U-Net split over two processes that run at once.

The idea
--------
Pipeline parallelism cuts a network into ``K`` consecutive *stages* on ``K`` workers. For one
request a plain pipeline gives no speedup: stage 2 must wait for stage 1 at every denoising
step, so the workers take turns. Two ways out:

* **AsyncDiff** (Chen et al. 2024, "AsyncDiff: Parallelizing Diffusion Models by Asynchronous
  Denoising", arXiv:2406.06911) exploits that consecutive denoising steps see very similar
  inputs: at step ``t`` stage ``k`` consumes stage ``k-1``'s output *from step t-1*. Then all
  stages compute at the same time and exchange their outputs once per step. The price is a
  one-step-stale feature map; a few synchronous *warm-up* steps at the start (where the sample
  changes fastest) keep the trajectory close to the exact one.
* **Classic pipelining over a stream** (GPipe, Huang et al. 2019, arXiv:1811.06965): with two
  requests in flight, stage 1 works on request B while stage 2 finishes request A. Exact,
  raises throughput, leaves the latency of each request unchanged.

Cost model: with stage times ``s1, s2`` and communication ``c`` per step, one synchronous step
costs ``s1 + s2 + c`` and an asynchronous one ``max(s1, s2) + c``, so the speedup is bounded by
``(s1 + s2) / max(s1, s2) <= K``. Communication is the hand-off (feature map + the U-Net's skip
tensors) and grows with the batch like compute does, but the fixed per-message latency and the
per-step synchronisation do not: small batches are communication-bound, large ones can approach
the bound. A U-Net's decoder is heavier than its encoder, so the split point is chosen from
measured unit times (:func:`~.stages.balanced_split`), not at the bottleneck.

Package ``reference/async_pipeline/``: :mod:`reference.async_pipeline.stages` (the U-Net as a
chain of units, exact split), :mod:`reference.async_pipeline.runtime` (two
``torch.multiprocessing`` spawn processes, ``torch.distributed`` with the gloo backend,
``isend``/``irecv`` of the hand-off, one thread per process) and
:mod:`reference.async_pipeline.bench` (configuration, the batch sweep, benchmark, demo). Run it
with ``python -m reference.async_pipeline`` (demo) or ``--bench`` (see ``--help``); on a shared
CPU set ``OMP_WAIT_POLICY=PASSIVE`` (spinning OpenMP threads of oversubscribed processes were
measured 10-50x slower).

Pitfalls
--------
* Fair baseline: two 1-thread stage processes are compared with **one process with 2 threads**
  (the same cores), not with one thread.
* Staleness is not free: report trajectory PSNR against the synchronous sampler from the same
  noise, and the quality metric, beside the speedup.
* The stage split must compose to the full model exactly (tested), including the skip
  concatenations and the time embedding (each stage recomputes it for its own step).
* Never leave stage processes behind: :class:`~.runtime.StagePool` joins (or kills) them.

In production: the AsyncDiff reference code builds on diffusers pipelines with
``torch.distributed``; PyTorch's ``torch.distributed.pipelining`` implements GPipe/1F1B
schedules; xDiT (``xfuser``) offers PipeFusion/DistriFusion-style patch parallelism for DiTs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "Config": "bench",
    "sweep": "bench",
    "MODES": "runtime",
    "Job": "runtime",
    "JobResult": "runtime",
    "StagePool": "runtime",
    "job_noise": "runtime",
    "Handoff": "stages",
    "balanced_split": "stages",
    "run_units": "stages",
    "split_forward": "stages",
    "unit_names": "stages",
    "unit_times_ms": "stages",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import lazily: ``import reference.async_pipeline`` does not import torch."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reference.async_pipeline' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
