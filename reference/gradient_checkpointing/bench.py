"""Measurements: checkpointing policies on a training step of the zoo U-Net, and the chain law.

Every policy runs the same training step (epsilon-prediction MSE, Ho et al. 2020 arXiv
2006.11239, on a fixed batch of noised training digits) on its own copy of the same weights.
For each one this module measures, in one process:

* ``activation_mb`` - bytes autograd retains for the backward pass at the end of the forward
  pass (:func:`reference.harness.bytes_saved_for_backward`, exact);
* ``peak_activation_mb`` - the peak of live activation bytes over forward, recomputation and
  backward (:func:`~reference.gradient_checkpointing.memory.peak_activation_bytes`);
* ``latency_ms`` - the step time, interleaved with the other policies
  (:func:`reference.harness.compare_latency`), and its ratio to the baseline;
* ``gflops`` - matmul/conv FLOPs per sample of the whole step, recomputation included; the ratio
  baseline/technique is the analytic speed limit;
* ``grad_max_abs_diff`` - the largest parameter-gradient difference to the baseline.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from reference.harness import (
    BenchmarkResult,
    Headline,
    MetricSpec,
    Row,
    aim,
    bytes_saved_for_backward,
    compare_latency,
    count_flops,
    load_digits_tensors,
    metrics,
    output_dir,
    peak_rss_of,
    provenance,
)

from .memory import peak_activation_bytes
from .policies import (
    chain_loss,
    checkpoint_modules,
    even_segments,
    make_chain,
    sqrt_segments,
    staged_forward,
    unet_module_types,
    unet_stages,
)

SLUG = "gradient-checkpointing"
MB = 2**20
POLICIES = ("none", "diffusers", "module", "stage", "sqrt")
"""Checkpointing policies: none, diffusers' switch, per module, per stage, sqrt(n) segments."""

ForwardFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Config:
    """One measured row: a checkpointing policy, optionally with gradient accumulation."""

    key: str
    name: str
    role: str
    policy: str
    microbatches: int = 1


CONFIGS = (
    Config("none", "No checkpointing (baseline)", "baseline", "none"),
    Config("diffusers", "diffusers enable_gradient_checkpointing()", "reference", "diffusers"),
    Config("module", "Per module: every ResNet and attention block", "technique", "module"),
    Config("stage", "Per stage: conv_in, each down/mid/up block, head", "technique", "stage"),
    Config("sqrt", "sqrt(n) segments of stages (Chen et al.)", "technique", "sqrt"),
    Config("accum", "Control: 4 micro-batches, no checkpointing", "control", "none", 4),
)
HEADLINE = "sqrt"


@dataclass(frozen=True)
class Batch:
    """A fixed training batch: noised images ``x_t``, timesteps, labels and the target noise."""

    x_t: torch.Tensor
    t: torch.Tensor
    labels: torch.Tensor
    noise: torch.Tensor

    def tensors(self) -> list[torch.Tensor]:
        return [self.x_t, self.t, self.labels, self.noise]


def training_batch(batch: int, seed: int = 0) -> Batch:
    """``batch`` training digits noised at uniform timesteps of the zoo schedule (seeded)."""
    from reference.zoo import teacher_scheduler

    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    x, y = load_digits_tensors("train")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(x), (batch,), generator=gen)
    noise = torch.randn(x[idx].shape, generator=gen)
    t = torch.randint(0, 1000, (batch,), generator=gen)
    x_t = teacher_scheduler("DDPMScheduler").add_noise(x[idx], noise, t)
    return Batch(x_t, t, y[idx], noise)


def prepare(unet: nn.Module, policy: str) -> tuple[nn.Module, ForwardFn]:
    """A copy of ``unet`` (train mode) and its forward function under ``policy``."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
    model = copy.deepcopy(unet).train()
    if policy == "diffusers":
        model.enable_gradient_checkpointing()
    elif policy == "module":
        checkpoint_modules(model, unet_module_types())
    if policy in ("stage", "sqrt"):
        n = len(unet_stages(model))
        segments = even_segments(n, n if policy == "stage" else sqrt_segments(n))

        def staged(x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return staged_forward(model, x, t, y, segments)

        return model, staged

    def plain(x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return model(x, t, class_labels=y, return_dict=False)[0]

    return model, plain


def microbatch_loss(forward: ForwardFn, b: Batch, part: slice, total: int) -> torch.Tensor:
    """Epsilon MSE of the rows ``part``, weighted so that the parts sum to the full-batch mean."""
    eps = forward(b.x_t[part], b.t[part], b.labels[part])
    return F.mse_loss(eps, b.noise[part]) * (eps.shape[0] / total)


def make_step(
    model: nn.Module, forward: ForwardFn, b: Batch, microbatches: int = 1
) -> tuple[Callable[[], None], slice]:
    """A zero-argument training step (zero the gradients in place, forward + backward per
    micro-batch) and the rows of its first micro-batch."""
    n = b.x_t.shape[0]
    if not 1 <= microbatches <= n:
        raise ValueError(f"microbatches must be between 1 and the batch size {n}")
    bounds = [round(i * n / microbatches) for i in range(microbatches + 1)]
    parts = [slice(bounds[i], bounds[i + 1]) for i in range(microbatches)]

    def step() -> None:
        model.zero_grad(set_to_none=False)
        for part in parts:
            microbatch_loss(forward, b, part, n).backward()

    return step, parts[0]


@dataclass
class PolicyMeasurement:
    """Everything measured for one :class:`Config` except latency."""

    saved_bytes: int
    peak_bytes: int
    flops: int
    grads: list[torch.Tensor]


def measure_policy(unet: nn.Module, config: Config, b: Batch) -> tuple[PolicyMeasurement, Callable]:
    """Retained bytes, peak bytes, FLOPs and gradients of one policy; also returns its step."""
    model, forward = prepare(unet, config.policy)
    step, first = make_step(model, forward, b, config.microbatches)
    n = b.x_t.shape[0]
    saved = bytes_saved_for_backward(lambda: microbatch_loss(forward, b, first, n))
    step()  # creates the .grad buffers, so the peak below measures activations only
    params = list(model.parameters())
    exclude = [*params, *(p.grad for p in params if p.grad is not None), *b.tensors()]
    peak = peak_activation_bytes(step, exclude)
    step()
    grads = [p.grad.detach().clone() for p in params]
    flops = count_flops(step)
    return PolicyMeasurement(saved, peak, flops, grads), step


def max_grad_difference(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> float:
    """``max |a_i - b_i|`` over all parameter gradients."""
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


# --------------------------------------------------------------------------- chain law


@dataclass
class ChainCurves:
    """Retained and peak activation bytes of a chain, in units of one block input."""

    ns: list[int]
    saved: dict[str, list[float]]
    peak: dict[str, list[float]]


def chain_policies(n: int) -> dict[str, int]:
    """Segment counts for the chain: none (1), per block (n), sqrt(n) segments."""
    return {"none": 1, "per block": n, "sqrt(n) segments": sqrt_segments(n)}


def chain_point(chain: nn.Sequential, x: torch.Tensor, segments: int) -> tuple[int, int]:
    """Retained bytes (harness counter) and peak live bytes of one chain training step."""

    def loss() -> torch.Tensor:
        return chain_loss(chain, x, segments)

    def step() -> None:
        chain.zero_grad(set_to_none=False)
        loss().backward()

    saved = bytes_saved_for_backward(loss)
    step()
    params = list(chain.parameters())
    return saved, peak_activation_bytes(step, [*params, *(p.grad for p in params), x])


def chain_curves(ns: Sequence[int], width: int = 64, batch: int = 128) -> ChainCurves:
    """Measure the chain of :func:`~.policies.make_chain` for every ``n`` and policy."""
    unit = batch * width * 4
    curves = ChainCurves(list(ns), {}, {})
    for n in ns:
        chain = make_chain(n, width)
        x = torch.randn(batch, width, generator=torch.Generator().manual_seed(n))
        for label, segments in chain_policies(n).items():
            saved, peak = chain_point(chain, x, segments)
            curves.saved.setdefault(label, []).append(saved / unit)
            curves.peak.setdefault(label, []).append(peak / unit)
    return curves


# --------------------------------------------------------------------------- peak RSS


def rss_probe(policy: str | None, batch: int, microbatches: int = 1) -> None:
    """Build the teacher architecture and, unless ``policy`` is None, run two training steps.

    Run in a fresh process by :func:`reference.harness.peak_rss_of`; the weights do not change
    the memory, so a freshly initialised model of the zoo configuration is used.
    """
    from reference.zoo import SPECS

    torch.manual_seed(0)
    unet = SPECS["teacher"].build_model()
    b = training_batch(batch)
    if policy is not None:
        model, forward = prepare(unet, policy)
        step, _ = make_step(model, forward, b, microbatches)
        step()
        step()


def peak_rss_mb(policy: str | None, batch: int, microbatches: int = 1) -> float:
    """Peak resident set size (MB) of a fresh process running :func:`rss_probe`."""
    code = (
        "import torch; torch.set_num_threads(2)\n"
        "from reference.gradient_checkpointing.bench import rss_probe\n"
        f"rss_probe({policy!r}, {batch}, {microbatches})"
    )
    return peak_rss_of(code) / MB


# --------------------------------------------------------------------------- the benchmark


@dataclass
class Settings:
    """Sizes of one measurement run (``quick`` for tests, full for the committed result)."""

    batch: int
    repeats: int
    warmup: int
    chain_ns: list[int]
    rss: bool


def settings(quick: bool) -> Settings:
    if quick:
        return Settings(batch=8, repeats=2, warmup=1, chain_ns=[4, 9, 16], rss=False)
    return Settings(batch=64, repeats=15, warmup=2, chain_ns=[4, 9, 16, 25, 36, 49, 64, 81, 100],
                    rss=True)  # fmt: skip


def measure(
    unet: nn.Module,
    s: Settings,
    configs: Sequence[Config] = CONFIGS,
    threads: int = 2,
    progress: bool = False,
) -> tuple[dict[str, PolicyMeasurement], dict[str, float], dict[str, float]]:
    """Measure ``configs`` (the first is the baseline); returns measurements, medians, IQRs."""
    from tqdm.auto import tqdm

    torch.set_num_threads(threads)
    b = training_batch(s.batch)
    results, steps = {}, {}
    for config in tqdm(configs, desc="memory, FLOPs, gradients", disable=not progress):
        results[config.key], steps[config.key] = measure_policy(unet, config, b)
    if progress:
        print(f"timing {len(steps)} policies, {s.warmup} warm-up + {s.repeats} interleaved rounds")
    lat = compare_latency(steps, repeats=s.repeats, warmup=s.warmup, threads=threads)
    medians = {k: lat.median_ms(k) for k in steps}
    iqrs = {k: lat.iqr_ms(k) for k in steps}
    return results, medians, iqrs


def rows_of(
    configs: Sequence[Config],
    m: dict[str, PolicyMeasurement],
    medians: dict[str, float],
    iqrs: dict[str, float],
    batch: int,
    rss: dict[str, float],
) -> list[Row]:
    base = configs[0].key
    rows = []
    for c in configs:
        values: dict[str, float | None] = {
            "activation_mb": m[c.key].saved_bytes / MB,
            "peak_activation_mb": m[c.key].peak_bytes / MB,
            "latency_ms": medians[c.key],
            "step_time_ratio": medians[c.key] / medians[base],
            "gflops": m[c.key].flops / batch / 1e9,
            "grad_max_abs_diff": max_grad_difference(m[c.key].grads, m[base].grads),
        }
        if rss:
            values["peak_rss_mb"] = rss.get(c.key)
        rows.append(Row(c.name, c.role, values, {"latency_ms": iqrs[c.key]}))  # type: ignore[arg-type]
    return rows


METRICS = metrics(
    "activation_mb",
    peak_activation_mb=MetricSpec(
        "Peak live activation memory (forward + backward)", "MB", "lower"
    ),
    latency_ms=MetricSpec("Training-step time (forward + backward)", "ms", "lower"),
    step_time_ratio=MetricSpec("Step time vs baseline", "x", "lower"),
    gflops=MetricSpec("Step compute per sample (recomputation included)", "GFLOP", "lower"),
    grad_max_abs_diff=MetricSpec("Max |gradient difference| vs baseline", "", "lower"),
    peak_rss_mb=MetricSpec("Peak resident memory of a fresh process", "MB", "lower"),
)


def unet_figure(configs: Sequence[Config], rows: Sequence[Row], path: Path) -> Path:
    """Two panels: retained and peak activation MB per policy; step time vs baseline."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 0.5 * len(rows) + 1.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, sharey=True, width_ratios=[2, 1])
    y = np.arange(len(rows))
    saved = [r.values["activation_mb"] for r in rows]
    peak = [r.values["peak_activation_mb"] for r in rows]
    left.barh(y - 0.2, saved, height=0.4, color="#4c72b0", label="retained after forward")
    left.barh(y + 0.2, peak, height=0.4, color="#dd8452", label="peak over the step")
    left.set_yticks(y, labels=[c.key for c in configs])
    left.invert_yaxis()
    left.set_xlabel("activation memory (MB)")
    left.legend(loc="lower right", fontsize=8)
    left.grid(axis="x", alpha=0.3)
    right.barh(y, [r.values["step_time_ratio"] for r in rows], color="#8c8c8c")
    right.axvline(1.0, color="black", linewidth=0.8)
    right.axvline(4 / 3, color="#c44e52", linestyle="--", linewidth=1, label="+1 forward (4/3)")
    right.set_xlabel("step time / baseline")
    right.legend(loc="lower right", fontsize=8)
    right.grid(axis="x", alpha=0.3)
    fig.suptitle("Gradient checkpointing on the zoo U-Net (one training step)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def chain_figure(curves: ChainCurves, path: Path) -> Path:
    """Retained (solid) and peak (dashed) activation memory of the chain against ``n``."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import ScalarFormatter

    fig = Figure(figsize=(6.4, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    colors = dict(zip(curves.saved, ("#4c72b0", "#8c8c8c", "#dd8452"), strict=False))
    for label, color in colors.items():
        ax.plot(curves.ns, curves.saved[label], "o-", color=color, label=f"{label}: retained")
        ax.plot(curves.ns, curves.peak[label], "s--", color=color, label=f"{label}: peak")
    n = np.array(curves.ns, dtype=float)
    ax.plot(n, 2 * np.sqrt(n), ":", color="black", linewidth=1, label="2 sqrt(n)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("blocks n")
    ax.set_ylabel("activation memory (units of one block input)")
    ax.set_title("Chain of n residual blocks: O(n) vs O(sqrt(n)) memory")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def growth(values: Sequence[float], ns: Sequence[int]) -> float:
    """The exponent ``p`` of ``values ~ n^p`` fitted by least squares on log-log axes."""
    import numpy as np

    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


def benchmark(quick: bool = False) -> BenchmarkResult:
    """Measure all policies on the zoo teacher and the chain; write figures; return the result."""
    from reference import zoo

    s = settings(quick)
    load = os.getloadavg()[0]
    unet = zoo.load_teacher()
    m, medians, iqrs = measure(unet, s)
    rss: dict[str, float] = {}
    idle = 0.0
    if s.rss:
        idle = peak_rss_mb(None, s.batch)
        for c in CONFIGS:
            if c.key in ("none", "module", "sqrt", "accum"):
                rss[c.key] = peak_rss_mb(c.policy, s.batch, c.microbatches)
    rows = rows_of(CONFIGS, m, medians, iqrs, s.batch, rss)
    curves = chain_curves(s.chain_ns)
    out = output_dir(quick)
    figures = [f"{SLUG}-unet.png", f"{SLUG}-chain.png"]
    unet_figure(CONFIGS, rows, out / figures[0])
    chain_figure(curves, out / figures[1])

    v = {c.key: r.values for c, r in zip(CONFIGS, rows, strict=True)}
    h, base = v[HEADLINE], v["none"]
    mem_gain = base["activation_mb"] / h["activation_mb"]
    peak_gain = base["peak_activation_mb"] / h["peak_activation_mb"]
    worst_diff = max(
        r.values["grad_max_abs_diff"] for r in rows if r.role in ("technique", "reference")
    )
    best_peak = min(
        (c for c in CONFIGS if c.role == "technique"), key=lambda c: v[c.key]["peak_activation_mb"]
    )
    stages = [name for name, _ in unet_stages(unet)]
    seg = even_segments(len(stages), sqrt_segments(len(stages)))
    last = ", ".join(stages[i] for i in seg[-1])
    notes = [
        f"One training step (epsilon MSE) of the zoo teacher U-Net at batch {s.batch}, float32, "
        f"2 threads on a shared 2-core CPU (load average {load:.1f} when the run started). "
        f"Parameters: {sum(p.numel() for p in unet.parameters()) * 4 / MB:.1f} MB; activations "
        f"retained without checkpointing: {base['activation_mb']:.1f} MB.",
        f"Gradients of every checkpointing policy equal the baseline's to max |difference| "
        f"{worst_diff:.1e}: recomputation repeats the same float32 operations. The micro-batch "
        f"control differs by {v['accum']['grad_max_abs_diff']:.1e} (summation order only).",
        f"Retained is not peak. sqrt(n) segments retain {h['activation_mb']:.1f} MB "
        f"({mem_gain:.1f}x less) but the step's peak is {h['peak_activation_mb']:.1f} MB "
        f"({peak_gain:.1f}x less): recomputing the last segment ({last}) brings back the "
        "full-resolution activations at once, and the skip tensors and their gradients are alive "
        "whatever the policy. Chen et al.'s sqrt(n) bound assumes a chain of equal blocks; in a "
        "U-Net the cost is concentrated at 16x16, so segments should be balanced by memory. "
        f"Lowest peak: {best_peak.name} ({v[best_peak.key]['peak_activation_mb']:.1f} MB).",
        f"Step time: medians of {s.repeats} interleaved rounds after {s.warmup} warm-up steps; the "
        f"baseline's IQR is {iqrs['none'] / medians['none']:.0%} of its median, so smaller "
        f"differences are noise. The FLOP ratio is the noise-free cost of recomputation: "
        f"{m[HEADLINE].flops / m['none'].flops:.2f}x the baseline's matmul/conv FLOPs for "
        f"sqrt(n) segments (one extra forward pass = 4/3 if backward costs two forwards).",
        f"Control: gradient accumulation over 4 micro-batches retains "
        f"{base['activation_mb'] / v['accum']['activation_mb']:.1f}x less at "
        f"{v['accum']['step_time_ratio']:.2f}x the step time and gives the same gradient; "
        "checkpointing is for when the batch cannot shrink (batch-coupled losses or BatchNorm, "
        "a per-device batch of 1, or throughput that needs large matrix products).",
        f"Chain of n residual MLP blocks (width 64, batch 128): retained memory grows like "
        f"n^{growth(curves.saved['none'], curves.ns):.2f} without checkpointing, "
        f"n^{growth(curves.saved['per block'], curves.ns):.2f} per block and "
        f"n^{growth(curves.saved['sqrt(n) segments'], curves.ns):.2f} with sqrt(n) segments; "
        f"the peak grows like n^{growth(curves.peak['sqrt(n) segments'], curves.ns):.2f} "
        "with sqrt(n) segments (Chen et al.: O(sqrt(n))).",
        "The harness's saved-tensor counter sees the inputs torch.utils.checkpoint saves only when "
        "they are passed as positional tensors; tensors inside tuples or keyword arguments are "
        "held in a closure, invisible to saved_tensors_hooks, so this module passes them "
        "positionally.",
    ]
    if rss:
        notes.append(
            f"Peak RSS of a fresh process (model + batch only: {idle:.0f} MB): "
            + ", ".join(f"{k} {rss[k]:.0f} MB" for k in rss)
            + "; RSS includes the allocator's retained pages, so it moves less than the exact "
            "counters."
        )
    return BenchmarkResult(
        slug=SLUG,
        module="reference.gradient_checkpointing",
        title="Gradient checkpointing on the zoo U-Net: memory retained, peak and step time",
        quick=quick,
        settings={
            "batch": s.batch,
            "repeats": s.repeats,
            "warmup": s.warmup,
            "threads": 2,
            "dtype": "float32",
            "use_reentrant": False,
            "chain_ns": s.chain_ns,
            "chain_width": 64,
            "chain_batch": 128,
            "load_average": round(load, 2),
        },
        metrics=METRICS,
        rows=rows,
        headline=Headline(
            speedup=base["latency_ms"] / h["latency_ms"],
            speedup_limit=m["none"].flops / m[HEADLINE].flops,
            memory_ratio=h["activation_mb"] / base["activation_mb"],
        ),
        aims=[
            aim(
                ">= 3x less activation memory saved for backward (sqrt(n) segments)", mem_gain, 3.0
            ),
            aim("<= 1.4x training-step time (sqrt(n) segments)", h["step_time_ratio"], 1.4, "<="),
            aim(
                "gradients equal without checkpointing: max |difference| <= 1e-6",
                worst_diff,
                1e-6,
                "<=",
            ),
            aim(
                ">= 3x lower peak activation memory over the step (sqrt(n) segments)",
                peak_gain,
                3.0,
            ),
        ],
        notes=notes,
        figures=figures,
        provenance=provenance(package_files()),
    )


def package_files() -> list[Path]:
    """The source files of this package (their sha256 go into the result's provenance)."""
    return sorted(Path(__file__).parent.glob("*.py"))
