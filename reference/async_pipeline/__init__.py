"""Asynchronous pipeline inference: the zoo U-Net split over two processes that run at once.

The idea
========
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

Cost model: with stage times ``s1, s2`` and communication ``c`` per step, one synchronous step costs
``s1 + s2 + c`` and an asynchronous one ``max(s1, s2) + c``, so the speedup is bounded by ``(s1 +
s2) / max(s1, s2) <= K``. Communication is the hand-off (feature map + the U-Net's skip tensors) and
grows with the batch like compute does, but the fixed per-message latency and the per-step
synchronisation do not: small batches are communication-bound, large ones can approach the bound. A
U-Net's decoder is heavier than its encoder, so the split point is chosen from measured unit times
([`balanced_split`][reference.async_pipeline.stages.balanced_split]), not at the bottleneck.

Package ``reference/async_pipeline/``:
[`reference.async_pipeline.stages`][reference.async_pipeline.stages] (the U-Net as a chain of units,
exact split), [`reference.async_pipeline.runtime`][reference.async_pipeline.runtime] (two
``torch.multiprocessing`` spawn processes, ``torch.distributed`` with the gloo backend,
``isend``/``irecv`` of the hand-off, one thread per process; the per-rank code),
[`reference.async_pipeline.step`][reference.async_pipeline.step] (the clipped-ODE DDIM step),
[`reference.async_pipeline.launch`][reference.async_pipeline.launch] (the same ranks started by
``torchrun``) and [`reference.async_pipeline.bench`][reference.async_pipeline.bench] (configuration,
the declared comparison, demo; its notes and figure in
[`reference.async_pipeline.report`][reference.async_pipeline.report]). Run it with
``python -m reference.async_pipeline`` (demo) or ``--bench`` (see ``--help``); on a shared CPU set
``OMP_WAIT_POLICY=PASSIVE`` (spinning OpenMP threads of oversubscribed processes were measured
10-50x slower).

Across processes and hosts ==========================
[`StagePool`][reference.async_pipeline.runtime.StagePool] finds its two ranks through a file in a
temporary folder (``file://`` rendezvous): one machine only. Started by ``torchrun``, each process
is told its ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` and joins
with the ``env://`` rendezvous; it then runs the very functions the spawned stages run
([`stage_group`][reference.async_pipeline.runtime.stage_group],
[`run_job`][reference.async_pipeline.runtime.run_job]), rank 0 as stage 1 and rank 1 as stage 2, and
rank 0 alone prints and writes the samples (the demo; ``--bench`` spawns its own stages and is
refused under a launcher):

    torchrun --standalone --nproc-per-node=2 -m reference.async_pipeline --quick --threads 1
    # two hosts, one stage each; run the same line on both (HOST:PORT reachable from both)
    torchrun --nnodes=2 --nproc-per-node=1 --rdzv-id=pipe --rdzv-backend=c10d \\
        --rdzv-endpoint=HOST:PORT -m reference.async_pipeline --out DIR

Flag names as in ``torchrun --help`` of torch 2.13 (PyTorch docs, "torchrun (Elastic Launch)",
https://docs.pytorch.org/docs/stable/elastic/run.html). With the c10d rendezvous the rendezvous
assigns the ranks and ``--node-rank`` is ignored (it only serves the static rendezvous), so
either host may become rank 0 and write ``--out``; to pin the roles, use the static rendezvous:
``--node-rank=0`` on host ``HOST`` (rank 0) and ``1`` on the other, both with
``--master-addr=HOST --master-port=PORT``.
A world size other than 2 is refused with one line. Over a network ``c`` of the cost model is a
latency plus bytes over bandwidth: AsyncDiff hides the hand-off behind stage 2's work, but the
small ``x_{i+1}`` that rank 1 returns to rank 0 is on the critical path of every step, so each
step pays at least one network round trip.

On GPUs (NCCL): ``init_process_group("nccl")`` after ``torch.cuda.set_device(LOCAL_RANK)`` (or
with ``device_id=torch.device("cuda", LOCAL_RANK)``): ``LOCAL_RANK``, not ``RANK``, names the GPU
on its host, and NCCL wants each process to own its GPU, so one host needs two GPUs. The model,
the receive buffers and every tensor sent must live on that GPU (NCCL moves CUDA tensors only;
gloo moves CPU tensors). Point-to-point calls are matched in issue order between a pair of ranks
and the first one builds the communicator (slow: warm up first). On CUDA, returning from
``send``/``recv`` or ``Work.wait()`` means the transfer is *enqueued* on NCCL's own stream and its
result is ordered before later work of the current stream, not that it finished (PyTorch docs,
"Synchronous and asynchronous collective operations",
https://docs.pytorch.org/docs/stable/distributed.html): kernels on another stream need explicit
synchronisation, a tensor given to ``isend`` must stay untouched and alive until its work
completes, and host timers (our ``perf_counter``) need ``torch.cuda.synchronize()`` or CUDA events.
That separate stream is what lets a stage compute while its hand-off travels; a host sync inside
the loop (``.item()``, ``.cpu()``) serialises the two again.

Pitfalls
========
* Fair baseline: two 1-thread stage processes are compared with **one process with 2 threads**
  (the same cores), not with one thread.
* Staleness is not free: report the fidelity (the per-sample distance to the converged solution of
  the same noise) of AsyncDiff and of the single process, and the distribution metrics, beside
  the speedup. Both must take the same step: DDIM on the clipped ODE of `reference.harness.ode`
  ([`ClippedDDIM`][reference.async_pipeline.step.ClippedDDIM]), not diffusers' DDIM with the raw
  noise.
* The stage split must compose to the full model exactly (tested), including the skip
  concatenations and the time embedding (each stage recomputes it for its own step).
* Never leave stage processes behind: [`StagePool`][reference.async_pipeline.runtime.StagePool]
  joins (or kills) them.
* Two hosts must agree on the split: rank 0 measures it and broadcasts it, and both load the same
  sha-checked weights from their own checkout; only rank 0 writes files.

In production: the AsyncDiff reference code builds on diffusers pipelines with
``torch.distributed``; PyTorch's ``torch.distributed.pipelining`` implements GPipe/1F1B
schedules; xDiT (``xfuser``) offers PipeFusion/DistriFusion-style patch parallelism for DiTs.
"""

from __future__ import annotations

from reference.lazy import attributes

_EXPORTS: dict[str, str] = {
    "Config": "bench",
    "ClippedDDIM": "step",
    "MODES": "runtime",
    "Job": "runtime",
    "JobResult": "runtime",
    "StagePool": "runtime",
    "job_noise": "runtime",
    "run_job": "runtime",
    "single_process": "runtime",
    "stage_group": "runtime",
    "run_ranks": "launch",
    "Handoff": "stages",
    "balanced_split": "stages",
    "run_units": "stages",
    "split_forward": "stages",
    "unit_names": "stages",
    "unit_times_ms": "stages",
}
__all__ = sorted(_EXPORTS)


__getattr__ = attributes(__name__, _EXPORTS)
