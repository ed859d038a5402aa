"""Cost measurements: parameters, FLOPs, activation memory, peak RSS and interleaved latency.

Latency: interleaved, warmed-up, fixed threads
==============================================
`compare_latency` times a baseline and its alternatives **in one process, interleaved**:
after warm-up, every round runs each function once (in a rotating order), so slow drifts of the
machine (other processes, frequency scaling, cache state) hit all of them alike. It reports the
median and the inter-quartile range (IQR) of the per-call times rather than mean +- std, because
timing noise is one-sided and heavy-tailed, and the speedup as ``median(baseline) /
median(function)``. The thread count is fixed with ``torch.set_num_threads`` (and recorded): on
a shared 2-core machine more threads than cores only add noise. Production counterparts:
``torch.utils.benchmark.Timer`` (``blocked_autorange``) and ``pyperf``.

FLOPs
=====
`count_flops` uses ``torch.utils.flop_counter.FlopCounterMode``, which counts the
floating-point operations of matrix multiplications and convolutions (a multiply-add = 2 FLOPs;
``nn.Linear(i, o)`` on a batch of ``b`` rows costs ``2 * b * i * o``). Element-wise operations,
normalisation and softmax are not counted, so FLOPs are a lower bound that tracks the dense
compute which pruning, low-rank factorisation and caching remove - not latency.

Activation memory
=================
`bytes_saved_for_backward` installs ``torch.autograd.graph.saved_tensors_hooks`` and adds
up ``numel * element_size`` of every tensor autograd saves for the backward pass while ``fn``
runs. Tensors are deduplicated by (storage pointer, storage offset, shape, stride), so a tensor
saved by several operations is counted once. Parameters (``nn.Parameter`` objects and views of
them, such as the transposed weight ``F.linear`` saves) are excluded by default: they are alive
anyway and gradient checkpointing does not change them. Inputs that require grad are counted. The
count is exact for what autograd retains; allocator fragmentation and temporary buffers are not
included (``torch.cuda.max_memory_allocated`` measures those on a GPU).

Peak RSS
========
`peak_rss_bytes` is the high-water mark of the resident set of the **whole process since
it started** (``VmHWM`` in ``/proc/self/status`` on Linux, ``getrusage`` ``ru_maxrss``
elsewhere); it never goes down, so two configurations can only be compared in separate processes
(`peak_rss_of`). Pitfall: ``ru_maxrss`` is inherited through ``fork`` and kept across
``exec`` on Linux, so a child started from a big parent reports at least the parent's peak;
``VmHWM`` belongs to the new address space and does not have this problem.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


def count_parameters(module: torch.nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters (shared parameters counted once)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def parameter_bytes(module: torch.nn.Module) -> int:
    """Bytes of the parameters and buffers of ``module`` (what a state_dict stores)."""
    tensors = {id(t): t for t in [*module.parameters(), *module.buffers()]}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """FLOPs of ``fn(*args, **kwargs)`` counted by ``FlopCounterMode`` (matmul/conv only)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        fn(*args, **kwargs)
    return int(counter.get_total_flops())


def _is_parameter(t: torch.Tensor) -> bool:
    return isinstance(t, torch.nn.Parameter) or isinstance(t._base, torch.nn.Parameter)


def bytes_saved_for_backward(
    fn: Callable[..., Any], *args: Any, include_parameters: bool = False, **kwargs: Any
) -> int:
    """Bytes autograd keeps for the backward pass while running ``fn(*args, **kwargs)``.

    ``fn`` must run with gradients enabled (e.g. a forward pass that returns the loss). Each
    saved tensor contributes ``numel * element_size`` once (deduplicated by storage, offset,
    shape and stride); parameters and their views are skipped unless ``include_parameters``.
    """
    seen: dict[tuple[int, int, tuple[int, ...], tuple[int, ...]], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if include_parameters or not _is_parameter(t):
            key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride())
            seen[key] = t.numel() * t.element_size()
        return t

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args, **kwargs)
    return sum(seen.values())


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (monotone; see the module docstring)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def peak_rss_of(code: str, timeout: float = 600.0) -> int:
    """Peak RSS in bytes of a fresh Python process running ``code`` (``python -c code``).

    Peak memory of two configurations can only be compared in separate processes: run each
    through this function. The child uses this interpreter and ``sys.path``; the figure includes
    the interpreter itself (and torch, if ``code`` imports it), so compare differences.
    """
    import json
    import subprocess

    wrapper = (
        f"import sys; sys.path[:0] = {json.dumps(sys.path)}\n{code}\n"
        "import resource\n"
        "try:\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "    peak = int(hwm[0].split()[1]) * 1024\n"
        "except (OSError, IndexError):\n"
        "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "    peak = peak if sys.platform == 'darwin' else peak * 1024\n"
        "print('PEAK_RSS', peak)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", wrapper], capture_output=True, text=True, timeout=timeout
    )
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"peak_rss_of: child process failed: {last}")
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("PEAK_RSS ")][-1]
    return int(line.split()[1])


@dataclass(frozen=True)
class LatencyStats:
    """Timing of one function: all samples (ms), their median and inter-quartile range."""

    samples_ms: list[float]
    median_ms: float
    iqr_ms: float
    q1_ms: float
    q3_ms: float


@dataclass(frozen=True)
class LatencyComparison:
    """Result of `compare_latency`.

    ``stats[name]`` per function; ``speedup[name] = median(baseline) / median(name)`` (> 1 means
    faster than the baseline); ``threads`` the torch thread count used.
    """

    baseline: str
    stats: dict[str, LatencyStats]
    speedup: dict[str, float]
    threads: int
    repeats: int
    warmup: int
    order: list[str] = field(default_factory=list)

    def median_ms(self, name: str) -> float:
        return self.stats[name].median_ms

    def speedup_over(self, name: str, against: str) -> float:
        """``median(against) / median(name)``: how much faster ``name`` ran than ``against``
        (another function of the same comparison, not necessarily the baseline)."""
        return self.stats[against].median_ms / self.stats[name].median_ms

    def speedup_interval(
        self,
        name: str,
        confidence: float = 0.95,
        resamples: int = 2000,
        seed: int = 0,
        against: str | None = None,
    ) -> tuple[float, float]:
        """Percentile-bootstrap interval of ``speedup[name]`` over timing rounds (of
        `speedup_over` ``against`` another function, when given).

        Rounds are resampled with replacement, keeping each round's pair of times together
        (both functions ran in the same round, under the same machine state), and the ratio of
        medians is recomputed per resample (`reference.harness.stats.bootstrap_interval`).
        """
        from .stats import bootstrap_interval

        base = self.stats[against or self.baseline].samples_ms
        other = self.stats[name].samples_ms
        pairs = list(zip(base, other, strict=True))

        def ratio_of_medians(rounds: Sequence[Any]) -> float:
            return statistics.median(b for b, _ in rounds) / statistics.median(o for _, o in rounds)

        return bootstrap_interval(
            pairs, ratio_of_medians, confidence=confidence, resamples=resamples, seed=seed
        )

    def iqr_ms(self, name: str) -> float:
        return self.stats[name].iqr_ms


def _stats(samples: list[float]) -> LatencyStats:
    if len(samples) >= 2:
        q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    else:
        q1 = q3 = samples[0]
    return LatencyStats(
        samples_ms=samples, median_ms=statistics.median(samples), iqr_ms=q3 - q1, q1_ms=q1, q3_ms=q3
    )


def compare_latency(
    funcs: Mapping[str, Callable[[], Any]],
    *,
    repeats: int = 20,
    warmup: int = 3,
    threads: int | None = None,
    baseline: str | None = None,
) -> LatencyComparison:
    """Time zero-argument callables interleaved; the first (or ``baseline``) is the reference.

    Every function is called ``warmup`` times first (allocations, lazy initialisation, caches),
    then ``repeats`` rounds run each function once, rotating the order every round. Wrap calls
    in ``torch.inference_mode()`` yourself if the code being timed does not need autograd.
    ``threads`` defaults to the process's torch thread count, which the technique command line
    sets for the whole run (``--threads``, default 2).
    """
    if not funcs:
        raise ValueError("compare_latency: no functions given")
    names = list(funcs)
    baseline = baseline or names[0]
    if baseline not in funcs:
        raise ValueError(f"compare_latency: baseline {baseline!r} is not one of {names}")
    if repeats < 1 or warmup < 0:
        raise ValueError("compare_latency: repeats must be >= 1 and warmup >= 0")
    previous = torch.get_num_threads()
    threads = threads or previous
    torch.set_num_threads(threads)
    try:
        for name in names:
            for _ in range(warmup):
                funcs[name]()
        samples: dict[str, list[float]] = {name: [] for name in names}
        for r in range(repeats):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                start = time.perf_counter_ns()
                funcs[name]()
                samples[name].append((time.perf_counter_ns() - start) / 1e6)
    finally:
        torch.set_num_threads(previous)
    stats = {name: _stats(s) for name, s in samples.items()}
    base = stats[baseline].median_ms
    speedup = {
        name: base / s.median_ms if s.median_ms > 0 else float("inf") for name, s in stats.items()
    }
    return LatencyComparison(baseline, stats, speedup, threads, repeats, warmup, names)


def latency_note(repeats: int, batch: int) -> Any:
    """The shared ``latency-protocol`` note of a result: ``repeats`` interleaved, warmed-up
    timing rounds of ``batch`` rows each, on this process's torch thread count."""
    from .results import note

    return note("latency-protocol", repeats=repeats, batch=batch, threads=torch.get_num_threads())
