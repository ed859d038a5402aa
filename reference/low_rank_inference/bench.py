"""Benchmark and demo of [`reference.low_rank_inference`][reference.low_rank_inference] (the
technique contract of `reference.harness.entry`: it declares comparisons, the harness measures).

Three comparisons, joined into one result:

* **sampling** (paired seeds, timed whole samplings): the dense zoo DiT (baseline); its
  token-wise Linear layers factorised by plain and by activation-aware truncated SVD at each
  multiply-add budget (techniques); the dense DiT with fewer DDIM steps at the headline's sampling
  FLOPs (control). Every row solves the clipped ODE (`reference.harness.ode`, DDIM on the
  trailing grid) from the same noise on every seed.
* **layers** (timed only): the factorised layers alone, dense and factorised, on inputs recorded
  from a dense forward: what the multiply-adds saved buy before Amdahl's law dilutes it.
* **lora** (timed only): a LoRA adapter on one layer, unmerged and merged, against the dense
  layer: the training-time low rank, which costs nothing once merged.

Truncated SVD without fine-tuning is a training-free approximation of the dense model, so its
primary figure is the fidelity ``rms_to_solution``: each sample's RMS distance to the converged
solution of the same noise (DPM-Solver++(2M), ``solution_steps`` steps, shared on disk through
`reference.harness.solutions`). FDD, KID, accuracy and diversity against the held-out reference
half stand beside it (`reference.harness.scores.held_out_score`).

Aims
====
By the triangle inequality, with ``x`` a factorised sample, ``x_d`` the dense DiT's sample of the
same noise and ``x*`` the solution,

    ‖x − x*‖ ≤ ‖x − x_d‖ + ‖x_d − x*‖                                                 (1)

so the factorised model's distance to the solution stays within ``QUALITY_AIM = 2`` times the
dense model's whenever the error the factorisation adds is no larger than DDIM's own
discretisation error at the same steps (``quality``). ``beats-fewer-steps``: closer to the
solution than the dense DiT with the steps of the same sampling FLOPs. ``layers-speedup``: the
factorised layers alone at least 1.5 times faster at budget 0.5, which halves their multiply-adds
(`reference.low_rank_inference.timed`).

Sources: Eckart & Young 1936 (doi:10.1007/BF02288367); SVD-LLM, Wang et al. 2024
(arXiv:2403.07378), the whitening; LoRA, Hu et al. 2021 (arXiv:2106.09685); DDIM, Song et al.
2021 (arXiv:2010.02502); DPM-Solver++, Lu et al. 2022 (arXiv:2211.01095), the solution.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from reference.harness import compare, sizes
from reference.harness.builders import held_out_comparison
from reference.harness.compare import FIDELITY, HeadlineSpec, QualityAim, Variant
from reference.harness.declared import SAMPLED_COLUMNS, lower, sampled_outcome
from reference.harness.entry import choice, integer, names, real, reals
from reference.harness.results import Figure, metrics

CONTRACT = 2
SLUG = "low-rank-inference"
METHODS = ("svd", "asvd")
QUALITY_AIM = 2.0
"""(1): the factorised DiT's distance to the solution at most twice the dense DiT's."""


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`), the factorisations it compares and
    their calibration, and the LoRA contrast."""

    budgets: tuple[float, ...] = (0.75, 0.5, 0.35)
    methods: tuple[str, ...] = METHODS
    headline_method: str = "asvd"
    headline_budget: float = 0.5
    steps: int = 50
    solution_steps: int = sizes.SOLUTION_STEPS
    calib_n: int = 64
    calib_steps: int = 10
    lora_rank: int = 8
    lora_steps: int = 300

    def validate(self) -> None:
        super().validate()
        sizes.check_one_of("headline_method", self.headline_method, "methods", self.methods)
        sizes.check_one_of("headline_budget", self.headline_budget, "budgets", self.budgets)


FULL = Config()
QUICK = Config(
    budgets=(0.5,), n_quality=sizes.MIN_QUALITY, seeds=(0, 1), steps=4, solution_steps=8,
    calib_n=16, calib_steps=3, batch_latency=4, repeats=2, warmup=0, lora_steps=30,
)  # fmt: skip
DEMO = replace(  # the quick run, longer and larger
    QUICK, steps=20, solution_steps=50, calib_n=32, batch_latency=8, repeats=3, lora_steps=100
)
OPTIONS = (
    reals("budgets", low=0.0, high=1.0, open_low=True),
    names("methods", METHODS),
    choice("headline_method", METHODS),
    real("headline_budget", low=0.0, high=1.0),
    *sizes.SCORED_OPTIONS,
    integer("steps", low=1, high=1000),
    integer("solution_steps", low=1, high=1000),
    integer("calib_n", low=1, high=1024),
    integer("calib_steps", low=1, high=1000),
    *sizes.TIMED_OPTIONS,
    integer("lora_rank", low=1, high=96),
    integer("lora_steps", low=1, high=10000),
)


def head_key(cfg: Config) -> str:
    """The headline row: the headline method at the headline budget."""
    return f"{cfg.headline_method}-{cfg.headline_budget}"


def sampling_aims(cfg: Config, control_steps: int) -> tuple[QualityAim, ...]:
    """``quality`` (1) and ``beats-fewer-steps``, on paired-seed ratios of the fidelity."""
    head = head_key(cfg)
    budget = {"budget": cfg.headline_budget}
    steps = {"steps": cfg.steps, "control_steps": control_steps}
    return (
        QualityAim("quality", head, "dense", FIDELITY, "<=", QUALITY_AIM, params=budget),
        QualityAim("beats-fewer-steps", head, "control", FIDELITY, "<=", 1.0, params=steps),
    )


def sampling(cfg: Config, run: SimpleNamespace) -> compare.Comparison:
    """The dense DiT, its factorisations and the control on the same noise; the headline is
    judged on its fidelity to the solution, its limit the FLOP ratio (an estimate)."""

    from .measure import sampler

    def sample(m: Any) -> Callable[[int], Any]:
        return lambda seed: sampler(m.model, cfg.n_quality, m.steps, seed)()

    variants = tuple(
        Variant(
            m.key,
            m.config,
            m.role,
            sample=sample(m),
            timed=sampler(m.model, cfg.batch_latency, m.steps, sizes.LATENCY_SEED),
            facts=m.facts,
        )
        for m in run.models
    )
    dense, head = run.models[0].facts, run.head.facts
    columns = metrics(
        *SAMPLED_COLUMNS, "gflops", "params_m", "nfe",
        **lower("rms_to_solution", "kept", "eps_rel_error"),
    )  # fmt: skip
    return held_out_comparison(
        cfg,
        variants,
        columns,
        sampling_aims(cfg, run.control.steps),
        # FLOPs count only the matrix products: an estimate of the speedup, not a bound
        HeadlineSpec(
            head_key(cfg),
            quality=FIDELITY,
            limit=dense["gflops"] / head["gflops"],
            limit_kind="estimate",
            memory_ratio=head["params_m"] / dense["params_m"],
        ),
        solution=run.solution,
    )


def prepare(cfg: Config) -> SimpleNamespace:
    """Everything the comparisons compare: the models with their facts, the control, the layer
    inputs, the solution of each quality seed, the curves and the LoRA contrast."""
    from reference import zoo
    from reference.harness import class_labels, make_noise
    from reference.harness.sampling import frozen
    from reference.harness.solutions import solution

    from . import measure as lr
    from .plan import calibrate_second_moments, dit_target_layers

    dit = frozen(zoo.load_dit())
    names = dit_target_layers(dit)
    moments = calibrate_second_moments(dit, names, lr.calibration(cfg.calib_n, cfg.calib_steps))
    models = lr.models(dit, names, moments, cfg)
    lr.fill_facts(models, cfg.n_quality)
    head = next(m for m in models if m.key == head_key(cfg))
    control = lr.add_control(models, head)

    def solution_of(seed: int) -> Any:
        n = cfg.n_quality
        return solution(dit, make_noise(n, seed), class_labels(n), steps=cfg.solution_steps)

    return SimpleNamespace(
        dit=dit,
        names=names,
        models=models,
        head=head,
        control=control,
        solution=solution_of,
        inputs=lr.layer_inputs(dit, names, cfg.batch_latency),
        curves=lr.error_curves(dit, moments),
        full_rank=lr.full_rank_error(dit, names, moments),
        lora=lr.lora_contrast(dit, cfg.lora_rank, cfg.lora_steps, cfg.batch_latency),
    )


def measured(cfg: Config) -> tuple[SimpleNamespace, list[Any]]:
    """The three comparisons measured by the harness: sampling, layers, LoRA."""
    from reference.harness.compare import measure as measure_comparison

    from .timed import layers, lora

    run = prepare(cfg)
    comparisons = (sampling(cfg, run), layers(cfg, run, head_key(cfg)), lora(cfg, run))
    return run, [measure_comparison(c) for c in comparisons]


def measure(cfg: Config, staging: Path) -> compare.Outcome:
    """Sample (paired seeds) and time the models, time the layers and LoRA; write figures."""

    from .figures import budget_figure, error_vs_rank
    from .notes import result_notes

    run, (m, lay, lo) = measured(cfg)
    figures = [
        Figure(f"{SLUG}-error-vs-rank.png", "error-vs-rank"),
        Figure(f"{SLUG}-budget.png", "budget"),
    ]
    error_vs_rank(run.curves, staging / figures[0].file)
    budget_figure([*m.rows, *lay.rows], cfg, staging / figures[1].file)
    factorised = [x for x in run.models if x.role == "technique"]
    return sampled_outcome(
        m,
        cfg,
        notes=result_notes(cfg, run, m, lay),
        figures=figures,
        more=[lay, lo],
        target_layers=len(run.names),
        control_steps=run.control.steps,
        rank_rows=[x.key for x in factorised],
        ranks=[[x.ranks.get(n) for n in run.names] for x in factorised],
    )


def demo(cfg: Config, out: Path) -> None:
    """Factorise at one budget; print fidelity, FDD and speed per row; write a sample grid."""
    import torch

    from reference.harness import save_grid

    run, (m, lay, _) = measured(cfg)
    layer_speed = {r.id.removeprefix("layers-"): r.values["speedup"] for r in lay.rows}
    nan = float("nan")
    print(f"{'row':10} {'kept':>5} {'layers x':>8} {'model x':>7} {'RMS to x*':>9} {'FDD':>7}")
    for r in m.rows:
        v = r.values
        print(
            f"{r.id:10} {v['kept']:5.2f} {layer_speed.get(r.id, nan):8.2f} {v['speedup']:7.2f} "
            f"{v[FIDELITY]:9.4f} {v['fd_digits']:7.2f}"
        )
    print(f"control: the dense DiT with {run.control.steps} DDIM steps")
    print(f"full rank reproduces every layer to {run.full_rank:.1e} (max abs difference)")
    print(f"LoRA merged vs adapter: max abs difference {run.lora.max_diff:.1e}")
    grid = torch.cat([m.first[r.id][:10] for r in m.rows])
    path = save_grid(grid, out / f"{SLUG}-demo.png", nrow=10)
    print(f"{path} (rows: {', '.join(r.id for r in m.rows)})")
