"""Benchmark and demo of :mod:`reference.low_rank_inference` (the technique contract of
:mod:`reference.harness.cli`).

Rows: the dense zoo DiT (baseline); its token-wise Linear layers factorised by plain and by
activation-aware truncated SVD at each multiply-add budget (technique); the dense DiT with fewer
DDIM steps, about the technique's sampling time (control); and a LoRA adapter on one layer,
unmerged and merged (reference: the training-time low rank, which costs nothing once merged).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from reference.harness.cli import Option, at_least, float_tuple, name_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)

from .measure import (
    build_variants,
    error_at_break_even,
    full_rank_error,
    lora_demo,
    measure,
    run_control,
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
    n_eval: int = 256
    steps: int = 20
    calib_n: int = 64
    calib_steps: int = 10
    latency_batch: int = 64
    repeats: int = 30
    warmup: int = 3
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
        if not 1 <= self.lora_rank <= 96:
            raise ValueError(
                f"--lora-rank must be in 1..96 (the layer is 96 wide), got {self.lora_rank}"
            )


FULL = Config()
QUICK = Config(
    budgets=(0.5,),
    n_eval=24,
    steps=3,
    calib_n=16,
    calib_steps=3,
    latency_batch=16,
    repeats=3,
    warmup=1,
    lora_steps=30,
)
DEMO = Config(budgets=(0.5,), n_eval=100, steps=10, calib_n=32, repeats=5, lora_steps=100)
OPTIONS = (
    Option("budgets", float_tuple, "X,X,..."),
    Option("methods", name_tuple, "NAME,..."),
    Option("headline_method", str, "NAME"),
    Option("headline_budget", float, "X"),
    Option("n_eval"),
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
    whole, layers = measure(variants, names, cfg)
    head = next(v for v in variants if v.key == f"{cfg.headline_method}-{cfg.headline_budget}")
    control_steps = max(1, round(cfg.steps / max(head.values["speedup"], 1e-9)))
    return SimpleNamespace(
        dit=dit,
        names=names,
        moments=moments,
        variants=variants,
        whole=whole,
        layers=layers,
        head=head,
        control=run_control(dit, control_steps, cfg, variants[0]),
        lora=lora_demo(dit, cfg),
        full_err=full_rank_error(dit, names, moments),
    )


def _rows(r: SimpleNamespace) -> list[Row]:
    rows = [
        Row(v.key, v.config, v.role, dict(v.values), intervals=v.intervals, spread=v.spread)  # type: ignore[arg-type]
        for v in [*r.variants, r.control]
    ]
    lora = r.lora
    for key in ("lora-dense", "lora-adapter", "lora-merged"):
        config = {"method": key} if key == "lora-dense" else {"method": key, "rank": lora.rank}
        values = {"lora_gflops": lora.gflops[key], "lora_layer_ms": lora.latency.median_ms(key)}
        if key == "lora-merged":
            values["max_abs_diff"] = lora.max_diff
        spread = {"lora_layer_ms": lora.latency.iqr_ms(key)}
        rows.append(Row(key, config, "reference", values, spread=spread))
    return rows


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure low-rank inference on the zoo DiT; write the figures into ``out``."""
    from reference.harness import fdd_floor

    from .figures import budget_curves, error_vs_rank

    r = _run(cfg)
    dense, head, control = r.variants[0].values, r.head.values, r.control.values
    q_ratio = head["fd_digits"] / dense["fd_digits"]
    flop_limit = dense["gflops"] / head["gflops"]
    layer_speed = head["layers_speedup"]
    figures = [
        Figure("low-rank-inference-error-vs-rank.png", "error-vs-rank"),
        Figure("low-rank-inference-budget.png", "budget"),
    ]
    error_vs_rank(r.dit, r.moments, out / figures[0].file)
    budget_curves(r.variants, cfg, out / figures[1].file)
    lora = r.lora
    better = "control" if control["fd_digits"] < head["fd_digits"] else "technique"
    notes = [
        latency_note(cfg.repeats, cfg.latency_batch),
        note("timed-units", batch=cfg.latency_batch, layers=len(r.names)),
        note("fdd-at-n", n=cfg.n_eval, floor=fdd_floor(cfg.n_eval)),
        note("calibration", steps=cfg.steps, calib_n=cfg.calib_n, calib_steps=cfg.calib_steps),
        note(
            "amdahl",
            budget=cfg.headline_budget,
            speedup=head["speedup"],
            limit=flop_limit,
            layers_speedup=layer_speed,
            mac_speedup=1 / r.head.kept,
        ),
        note("full-rank", max_diff=r.full_err),
        note(
            "lora-merge",
            max_diff=lora.max_diff,
            gflops=lora.gflops["lora-merged"],
            extra=lora.gflops["lora-adapter"] - lora.gflops["lora-dense"],
        ),
        note("break-even-error", **error_at_break_even(r.dit, r.moments)),
        note(
            f"matched-time-{better}-better",
            control_steps=control["nfe"],
            fd_control=control["fd_digits"],
            fd_head=head["fd_digits"],
            steps=cfg.steps,
        ),
    ]
    if layer_speed < 1.5:
        notes.append(note("layers-speedup-gap", speedup=layer_speed, mac_speedup=1 / r.head.kept))
    aims = [
        aim(
            "layers-speedup",
            layer_speed,
            1.5,
            ">=",
            interval=r.layers.speedup_interval(r.head.key),
            budget=cfg.headline_budget,
        ),
        aim("quality", q_ratio, 1.2, "<=", budget=cfg.headline_budget),
    ]
    factorised = [v for v in r.variants if v.role == "technique"]
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            target_layers=len(r.names),
            rank_rows=[v.key for v in factorised],
            ranks=[[v.ranks.get(n) for n in r.names] for v in factorised],
        ),
        metrics=_metrics(),
        rows=_rows(r),
        headline=speedup_headline(
            r.head.key,
            r.whole,
            limit=flop_limit,
            limit_kind="bound",
            memory_ratio=head["params_m"] / dense["params_m"],
            quality_ratio=q_ratio,
        ),
        aims=aims,
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Factorise at one budget, print error, speed and FDD per row, write the figures."""
    from .figures import budget_curves, error_vs_rank

    r = _run(cfg)
    print(f"{'row':12} {'kept':>5} {'layers x':>8} {'model x':>7} {'eps err':>8} {'FDD':>7}")
    nan = float("nan")
    for v in [*r.variants, r.control]:
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
