"""Benchmark and demo of [`reference.low_rank_inference`][reference.low_rank_inference] (the
technique contract of `reference.harness.cli`).

Rows: the dense zoo DiT (baseline); its token-wise Linear layers factorised by plain and by
activation-aware truncated SVD at each multiply-add budget (technique); the dense DiT with fewer
DDIM steps at the headline's sampling FLOPs (control, timed with the others); and a LoRA adapter
on one layer, unmerged and merged (reference: the training-time low rank, which costs nothing
once merged). Quality: every sampler over paired noise seeds. Latency: whole DDIM samplings,
and the factorised layers alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from reference.harness.cli import (
    Option,
    at_least,
    check_seeds,
    float_tuple,
    int_tuple,
    name_tuple,
)
from reference.harness.cost import latency_note
from reference.harness.results import (
    Aim,
    Figure,
    Measurement,
    Metric,
    Note,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)
from reference.harness.seeds import N_QUALITY, SEEDS, quality_note, real_reference_row

from .measure import (
    add_control,
    build_variants,
    error_at_break_even,
    fill_costs,
    full_rank_error,
    lora_demo,
    measure_latency,
    measure_quality,
    sampler,
)
from .plan import calibrate_second_moments, dit_target_layers

METHODS = ("svd", "asvd")


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    budgets: tuple[float, ...] = (0.75, 0.5, 0.35)
    methods: tuple[str, ...] = METHODS
    headline_method: str = "asvd"
    headline_budget: float = 0.5
    n_eval: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    steps: int = 20
    calib_n: int = 64
    calib_steps: int = 10
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 1
    lora_rank: int = 8
    lora_steps: int = 300

    def validate(self) -> None:
        if not self.budgets or not all(0.0 < b <= 1.0 for b in self.budgets):
            raise ValueError(f"--budgets must be in (0, 1], got {list(self.budgets)}")
        unknown = [m for m in self.methods if m not in METHODS] or ([] if self.methods else [""])
        if unknown:
            raise ValueError(f"--methods: unknown {unknown[0]!r}; choose from svd, asvd")
        if self.headline_method not in self.methods:
            raise ValueError(f"--headline-method {self.headline_method!r} is not one of --methods")
        if self.headline_budget not in self.budgets:
            raise ValueError(
                f"--headline-budget {self.headline_budget} is not one of --budgets "
                f"{list(self.budgets)}"
            )
        for name in ("steps", "calib_n", "calib_steps", "latency_batch", "repeats", "lora_steps"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}"
                )
        if self.n_eval < 2:
            raise ValueError(f"--n-eval must be >= 2 (FDD needs a covariance), got {self.n_eval}")
        at_least(self, warmup=0)
        check_seeds(self.seeds)
        if not 1 <= self.lora_rank <= 96:
            raise ValueError(
                f"--lora-rank must be in 1..96 (the layer is 96 wide), got {self.lora_rank}"
            )


FULL = Config()
QUICK = Config(
    budgets=(0.5,),
    n_eval=24,
    seeds=(0, 1),
    steps=3,
    calib_n=16,
    calib_steps=3,
    latency_batch=4,
    repeats=3,
    warmup=1,
    lora_steps=30,
)
DEMO = Config(
    budgets=(0.5,), n_eval=100, seeds=(0, 1), steps=10, calib_n=32, repeats=5, lora_steps=100
)
OPTIONS = (
    Option("budgets", float_tuple, "X,X,..."),
    Option("methods", name_tuple, "NAME,..."),
    Option("headline_method", str, "NAME"),
    Option("headline_budget", float, "X"),
    Option("n_eval"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("steps"),
    Option("calib_n"),
    Option("calib_steps"),
    Option("latency_batch"),
    Option("repeats"),
    Option("warmup"),
    Option("lora_rank"),
)


def _metrics() -> dict[str, Metric]:
    return metrics(
        "latency_ms",
        "speedup",
        "fd_digits",
        "kid_digits",
        "accuracy",
        "mse_vs_baseline",
        "gflops",
        "params_m",
        "nfe",
        layers_ms=Metric("ms", "lower"),
        layers_speedup=Metric("x", "higher"),
        kept=Metric("", "lower"),
        eps_rel_error=Metric("", "lower"),
        lora_gflops=Metric("GFLOP", "lower"),
        lora_layer_ms=Metric("ms", "lower"),
        max_abs_diff=Metric("", "lower"),
    )


def _run(cfg: Config) -> SimpleNamespace:
    """Every measurement of the benchmark (also the demo's)."""
    from reference import zoo

    dit = zoo.load_dit()
    names = dit_target_layers(dit)
    moments = calibrate_second_moments(dit, names, sampler(cfg.calib_n, cfg.calib_steps, seed=1))
    variants = build_variants(dit, names, moments, cfg)
    fill_costs(variants, cfg)
    head = next(v for v in variants if v.key == f"{cfg.headline_method}-{cfg.headline_budget}")
    control = add_control(variants, head)
    quality = measure_quality(variants, cfg)
    whole, layers = measure_latency(variants, names, cfg)
    return SimpleNamespace(
        dit=dit,
        names=names,
        moments=moments,
        variants=variants,
        quality=quality,
        whole=whole,
        layers=layers,
        head=head,
        control=control,
        lora=lora_demo(dit, cfg),
        full_err=full_rank_error(dit, names, moments),
    )


def _rows(r: SimpleNamespace) -> list[Row]:
    rows = []
    for v in r.variants:
        values, intervals, seeds = r.quality.row_fields(v.key)
        rows.append(
            Row(
                v.key,
                v.config,
                v.role,
                {**v.values, **values},
                {**v.intervals, **intervals},  # type: ignore[arg-type]
                dict(v.spread),
                seeds,
            )
        )
    lora = r.lora
    for key in ("lora-dense", "lora-adapter", "lora-merged"):
        config = {"method": key} if key == "lora-dense" else {"method": key, "rank": lora.rank}
        values = {"lora_gflops": lora.gflops[key], "lora_layer_ms": lora.latency.median_ms(key)}
        if key == "lora-merged":
            values["max_abs_diff"] = lora.max_diff
        spread = {"lora_layer_ms": lora.latency.iqr_ms(key)}
        rows.append(Row(key, config, "reference", values, spread=spread))
    return rows


def _aims(cfg: Config, r: SimpleNamespace) -> list[Aim]:
    """The factorised layers' speed, and the headline's quality against the dense DiT and
    against the fewer-steps control at the same sampling FLOPs (paired over seeds)."""
    head = r.head
    quality = r.quality.ratio(head.key, "dense", "fd_digits")
    vs_control = r.quality.ratio(head.key, "control", "fd_digits")
    return [
        aim(
            "layers-speedup",
            head.values["layers_speedup"],
            1.5,
            ">=",
            interval=r.layers.speedup_interval(head.key),
            row=head.key,
            against="dense",
            budget=cfg.headline_budget,
        ),
        aim(
            "quality",
            quality.value,
            1.2,
            "<=",
            interval=quality.interval,
            row=head.key,
            against="dense",
            budget=cfg.headline_budget,
        ),
        aim(
            "beats-fewer-steps",
            vs_control.value,
            1.0,
            "<=",
            interval=vs_control.interval,
            row=head.key,
            against="control",
            steps=head.steps,
            control_steps=r.control.steps,
        ),
    ]


def _notes(cfg: Config, r: SimpleNamespace, flop_limit: float) -> list[Note]:
    head, control, lora = r.head.values, r.control, r.lora
    layer_speed = head["layers_speedup"]
    notes = [
        latency_note(cfg.repeats, cfg.latency_batch),
        quality_note(cfg.n_eval, cfg.seeds),
        note("timed-units", batch=cfg.latency_batch, steps=cfg.steps, layers=len(r.names)),
        note("calibration", steps=cfg.steps, calib_n=cfg.calib_n, calib_steps=cfg.calib_steps),
        note(
            "amdahl",
            budget=cfg.headline_budget,
            speedup=head["speedup"],
            limit=flop_limit,
            layers_speedup=layer_speed,
            mac_speedup=1 / r.head.kept,
        ),
        note(
            "fewer-steps-control",
            steps=r.head.steps,
            control_steps=control.steps,
            flops=float(head["gflops"]) / float(r.variants[0].values["gflops"]),
            faster=r.whole.speedup_over(control.key, r.head.key),
        ),
        note("full-rank", max_diff=r.full_err),
        note(
            "lora-merge",
            max_diff=lora.max_diff,
            gflops=lora.gflops["lora-merged"],
            extra=lora.gflops["lora-adapter"] - lora.gflops["lora-dense"],
        ),
        note("break-even-error", **error_at_break_even(r.dit, r.moments)),
    ]
    if layer_speed < 1.5:
        notes.append(note("layers-speedup-gap", speedup=layer_speed, mac_speedup=1 / r.head.kept))
    return notes


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure low-rank inference on the zoo DiT; write the figures into ``out``."""
    from .figures import budget_curves, error_vs_rank

    r = _run(cfg)
    dense, head = r.variants[0].values, r.head.values
    quality = r.quality.ratio(r.head.key, "dense", "fd_digits")
    flop_limit = dense["gflops"] / head["gflops"]
    figures = [
        Figure("low-rank-inference-error-vs-rank.png", "error-vs-rank"),
        Figure("low-rank-inference-budget.png", "budget"),
    ]
    error_vs_rank(r.dit, r.moments, out / figures[0].file)
    budget_curves(r.variants, cfg, out / figures[1].file)
    factorised = [v for v in r.variants if v.role == "technique"]
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            target_layers=len(r.names),
            control_steps=r.control.steps,
            rank_rows=[v.key for v in factorised],
            ranks=[[v.ranks.get(n) for n in r.names] for v in factorised],
        ),
        metrics=_metrics(),
        rows=[*_rows(r), real_reference_row(cfg.n_eval)],
        headline=speedup_headline(
            r.head.key,
            r.whole,
            limit=flop_limit,
            limit_kind="estimate",
            memory_ratio=head["params_m"] / dense["params_m"],
            quality_ratio=quality.value,
            quality_interval=quality.interval,
        ),
        aims=_aims(cfg, r),
        notes=_notes(cfg, r, flop_limit),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Factorise at one budget, print error, speed and FDD per row, write the figures."""
    from .figures import budget_curves, error_vs_rank

    r = _run(cfg)
    print(f"{'row':12} {'kept':>5} {'layers x':>8} {'model x':>7} {'eps err':>8} {'FDD':>7}")
    nan = float("nan")
    for v in r.variants:
        val = v.values
        print(
            f"{v.key:12} {val.get('kept') or 1.0:5.2f} {val.get('layers_speedup') or nan:8.2f} "
            f"{val.get('speedup') or nan:7.2f} {val.get('eps_rel_error') or 0.0:8.4f} "
            f"{val['fd_digits']:7.2f}"
        )
    print(f"control: dense DiT with {r.control.values['nfe']:.0f} DDIM steps")
    print(f"full rank reproduces every layer to {r.full_err:.1e} (max abs difference)")
    print(f"LoRA merged vs adapter: max abs difference {r.lora.max_diff:.1e}")
    a, b = (
        out / "low-rank-inference-demo-error-vs-rank.png",
        out / "low-rank-inference-demo-budget.png",
    )
    error_vs_rank(r.dit, r.moments, a)
    budget_curves(r.variants, cfg, b)
    print(f"{a}: relative output error against rank, plain and activation-aware SVD")
    print(f"{b}: FDD ratio and measured speedups against the budget")
