"""Real shapes: how close each technique gets to its own estimate when compute decides latency,
and how it compares with the production counterpart a user would pick instead.

Idea
====
The zoo's models are so small that Python and operator overhead decide their latency: several
zoo speedups sit far below their FLOP estimates. Here every inference-time technique is applied,
through its public ``apply_x(model, config)`` shape, to a diffusers production class built at
its published shape with random weights (`reference.zoo.shapes.real`), and a short denoising loop
is timed at batch 1 against the same loop on the untouched model:

    speedup       = median(baseline loop) / median(technique loop)                  (1)
    estimate      = FLOPs(baseline loop) / FLOPs(technique loop)                    (2)
    efficiency    = speedup / estimate                                              (3)
    vs_counterpart = median(counterpart loop) / median(technique loop)              (4)

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one loop (a skipped network
call counts nothing). The techniques of one group (`reference.realshape.variants.GROUPS`), their
diffusers counterparts (TaylorSeer, first-block cache, ``fuse_qkv_projections``,
``compile_repeated_blocks``) and the untouched model are timed in the same interleaved rounds
(`reference.harness.cost.compare_latency`), so (1) and (4) are paired round by round and each
interval (a bootstrap over rounds) is over one machine state. Each row keeps its raw rounds, so
``--check`` recomputes (1)-(4) and their intervals from the file.

The aim beside a counterpart is to match or beat it: (4) at least ``MATCH`` (ours at most 5%
slower), judged on its interval.

What this measures, and what not
================================
* Cost only: random weights make every quality figure meaningless; the zoo benchmarks measure
  quality. A caching schedule here is fixed (interval) or, for first-block caching, decided by
  a threshold on random features: the estimate (2) follows whatever the loop skipped.
* Techniques that only change the number of steps (scheduler choice, grid search's choice, the
  distilled and consistency students) do not change a step's cost, so at a shape where the
  network dominates their speedup is their NFE ratio; they are not timed here.
* One machine: the hardware is recorded in the result's provenance.

Sources: Rombach et al. 2022 (arXiv:2112.10752) for the SD U-Net; Peebles and Xie 2023
(arXiv:2212.09748) for DiT-XL/2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reference.harness.entry import UsageError, choice, integer, names
from reference.harness.results import Metric, metrics, note, settings_of

if TYPE_CHECKING:
    from reference.harness.compare import Outcome

CONTRACT = 2
SLUG = "realshape"
MODELS = {"sd15": "unet2d-condition", "dit-xl-2": "dit"}
"""Study model id -> `reference.zoo.shapes` kind."""
TECHNIQUES = (
    "deepcache",
    "forecasting",
    "first-block-cache",
    "low-rank",
    "fusion",
    "compile",
    "pruning",
    "cfg",
)
"""The timed techniques (`reference.realshape.variants.VARIANTS`, kept torch-free here)."""
MATCH = 0.95
"""(4) at or above this: the technique matches or beats its counterpart."""
DEVICES = ("cpu", "cuda")
DTYPES = ("float32", "bfloat16")


@dataclass(frozen=True)
class Config:
    """``models``: study model ids; ``techniques``: what is timed; ``side``: latent side (the
    models are built for it); ``steps``: loop length; ``repeats``: timing rounds; ``warmup``:
    untimed runs of each loop before the rounds (the FLOP-counting run already ran each loop
    once); ``device`` and ``dtype``: where and in which precision the loops run; ``real``:
    published shapes (``False``: tiny, for tests)."""

    models: tuple[str, ...] = ("sd15", "dit-xl-2")
    techniques: tuple[str, ...] = TECHNIQUES
    side: int = 32
    steps: int = 6
    repeats: int = 5
    warmup: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    real: bool = True

    def validate(self) -> None:
        """One-line ``ValueError`` for an unknown model or technique, or a size out of range."""
        unknown = [m for m in self.models if m not in MODELS]
        if unknown:
            raise ValueError(f"unknown model {unknown[0]!r}; known: {', '.join(MODELS)}")
        bad = [t for t in self.techniques if t not in TECHNIQUES]
        if bad:
            raise ValueError(f"unknown technique {bad[0]!r}; known: {', '.join(TECHNIQUES)}")
        if not (1 <= self.side <= 128 and 3 <= self.steps <= 100 and 2 <= self.repeats <= 100):
            raise ValueError("side must be in 1..128, steps in 3..100, repeats in 2..100")
        if self.device not in DEVICES or self.dtype not in DTYPES:
            raise ValueError(f"device must be one of {DEVICES}, dtype one of {DTYPES}")
        if self.device == "cuda":
            _cuda_present(self.device)  # the default of the accelerator study, too


def _cuda_present(device: str) -> None:
    """A CUDA device must be there before any model is built (imports torch: only for cuda)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available on this machine")


FULL = Config()
QUICK = Config(side=8, steps=6, repeats=2, warmup=0, real=False)
OPTIONS = (
    names("models", tuple(MODELS)),
    names("techniques", TECHNIQUES),
    integer("side", low=1, high=128),
    integer("steps", low=3, high=100),
    integer("repeats", low=2, high=100),
    integer("warmup", low=0, high=10),
    choice("device", DEVICES),
    choice("dtype", DTYPES),
)


def measure(cfg: Config, staging: Path) -> Outcome:
    """Every group of ``cfg``'s techniques on every model of ``cfg`` it applies to."""
    from tqdm.auto import tqdm

    from reference.harness.compare import Outcome, body_of
    from reference.harness.results import Measurement
    from reference.zoo import shapes

    from . import timing, variants

    plans = {m: variants.timed(MODELS[m], cfg.techniques) for m in cfg.models}
    rows: list[Any] = []
    rounds: dict[str, dict[str, Any]] = {}
    sizes: dict[str, float] = {}
    total = sum(bool(g) for groups in plans.values() for g in groups)
    with tqdm(total=total, desc="real shapes") as bar:
        for model_id in cfg.models:
            base = timing.place(shapes.build(MODELS[model_id], cfg.real, sample_size=cfg.side), cfg)
            sizes.update(timing.model_sizes(model_id, base, cfg))
            for index, pairs in enumerate(plans[model_id], start=1):
                if pairs:
                    bar.set_postfix_str(f"{model_id} {'+'.join(t for t, _ in pairs)}")
                    group = timing.time_group(cfg, model_id, index, pairs, base)
                    rows += group.rows
                    rounds.update(group.rounds)
                    bar.update()
            del base
    measurement = Measurement(
        settings=settings_of(cfg, batch=1, **sizes, **timing.accelerator(cfg)),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "gflops",
            baseline_ms=Metric("ms", "lower"),
            flop_speedup=Metric("x", "higher"),
            efficiency=Metric("", "higher"),
            counterpart_ms=Metric("ms", "lower"),
            vs_counterpart=Metric("x", "higher"),
        ),
        rows=rows,
        headline=None,
        aims=timing.counterpart_aims(rows, MATCH),
        notes=[note("counterparts"), note("no-counterpart"), note("groups")]
        + ([note("accelerator", dtype=cfg.dtype)] if cfg.device == "cuda" else []),
        figures=[],
    )
    body = body_of(measurement)
    for row in body["rows"]:
        row["rounds"] = rounds[row["id"]]
    return Outcome(body, [])


def demo(cfg: Config, out: Path) -> None:
    """The quick configuration measured once per round pair, printed."""
    import dataclasses

    outcome = measure(dataclasses.replace(cfg, repeats=2), out)
    for row in outcome.body["rows"]:
        v = row["values"]
        if row["role"] != "baseline":
            print(f"{row['id']:32} {v['speedup']:.2f}x of estimate {v['flop_speedup'] or 0:.2f}x")
