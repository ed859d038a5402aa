"""Benchmark and demo of [`reference.pruning`][reference.pruning] (the technique contract of
`reference.harness.entry`: it declares a comparison, the harness measures).

Rows (`reference.pruning.measure.networks`), every one sampled with DDIM on the clipped ODE
(`reference.harness.ode`) from the same noise and labels on every seed:

* ``teacher``: the zoo U-Net, DDIM-``steps`` (baseline);
* ``<criterion>-<ratio>``: one-shot structured prunes (DepGraph, L1 or Taylor importance), no
  fine-tuning: **approximations** of the teacher (techniques, not timed: they share the
  fine-tuned prune's architecture at 0.5);
* ``finetuned``: the zoo's prune at 0.5 fine-tuned for 600 steps, the **trained change** the
  headline shows (technique);
* ``scratch``: the same architecture trained from scratch on the same budget (control);
* ``fewer-steps``: the teacher with the DDIM steps whose FLOPs match the prune's sampling,
  `measure.control_steps` (control);
* ``unstructured-<amount>``: magnitude pruning, zeros in dense kernels (reference).

Two yardsticks
==============
Issue 21's rule, declared per row rather than per benchmark. The fine-tuned and from-scratch
networks were trained: their samples need not stay near the teacher's, so they are judged on the
distribution, by `reference.harness.scores.held_out_score` (FDD and class-weighted KID against the
held-out reference half, accuracy, diversity); the headline and all four aims use the FDD. The
one-shot prunes are training-free approximations of the teacher: their primary figure is the
fidelity ``rms_to_solution`` to the teacher's converged solution of the same noise
(`Comparison.solution`, DPM-Solver++(2M) at ``solution_steps``, cached by content), with the FDD
beside it. One comparison measures both, so every row carries both figures from the same samples:

    rms_to_solution(row) = (1/N) Σ_i ‖x_i − x*_i‖ / √D,   x* = teacher's solution   (1)
    quality ratio        = exp((1/S) Σ_s log(FDD_row(s) / FDD_against(s)))          (2)
    speedup              = median_r T_teacher(r) / median_r T_row(r)                 (3)

The teacher's own (1) at DDIM-``steps`` is the floor a one-shot row is read against (the
``one-shot`` note quotes both).

Claims, each judged on its 95% interval: the fine-tuned prune samples at least 1.5× faster than
the teacher (3) with an FDD within 1.3× of the teacher's (2), and beats both controls on FDD (2).

Sources: Fang et al. 2023, Structural Pruning for Diffusion Models (Diff-Pruning,
arXiv:2305.10924); Fang et al. 2023, DepGraph (arXiv:2301.12900); Liu et al. 2018, Rethinking the
Value of Network Pruning (arXiv:1810.05270), the from-scratch control.

Pitfalls
========
* The FLOP ratio's inverse is an estimate of the speed limit, not a bound: the fixed cost of each
  operator does not shrink with its width.
* The one-shot rows are sampled and scored but not timed; a speed figure for them is the
  fine-tuned row's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from reference.harness import compare, sizes
from reference.harness.builders import held_out_comparison
from reference.harness.compare import HeadlineSpec, QualityAim, SpeedupAim, Variant
from reference.harness.cost import latency_note
from reference.harness.declared import SAMPLED_COLUMNS, higher, lower, sampled_outcome
from reference.harness.entry import integer, names, reals
from reference.harness.results import Figure, Note, metrics, note
from reference.harness.seeds import quality_note

from .measure import (
    Network,
    networks,
    runner,
    save_figures,
    solution_of,
    torch_pruning_version,
)
from .structured import CRITERIA
from .zoo_specs import CALIBRATION, FINETUNE_STEPS, PRUNE_RATIO, TAYLOR_T_MAX, ZOO_SPECS

CONTRACT = 2
SLUG = "pruning"
HEAD = "finetuned"
SPEEDUP_AIM, QUALITY_AIM = 1.5, 1.3


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`), the pruning grid and the
    calibration batches of the Taylor criterion."""

    ratios: tuple[float, ...] = (0.25, 0.5, 0.75)
    criteria: tuple[str, ...] = ("l1", "taylor")
    unstructured: tuple[float, ...] = (0.5, 0.75)
    steps: int = 50
    solution_steps: int = sizes.SOLUTION_STEPS
    calib_batches: int = CALIBRATION["batches"]
    calib_batch: int = CALIBRATION["batch"]


FULL = Config()
QUICK = Config(
    ratios=(0.5,), unstructured=(0.5,), n_quality=20, seeds=(0, 1), steps=4, batch_latency=4,
    repeats=3, solution_steps=8, calib_batches=2, calib_batch=16,
)  # fmt: skip
# the quick run, longer
DEMO = replace(QUICK, steps=10, batch_latency=32, repeats=5, solution_steps=50)
OPTIONS = (
    reals("ratios", low=0.0, high=1.0, open_low=True, open_high=True),
    names("criteria", CRITERIA),
    reals("unstructured", low=0.0, high=1.0, open_low=True, open_high=True),
    *sizes.SCORED_OPTIONS,
    integer("steps", low=1, high=1000),
    *sizes.TIMED_OPTIONS,
    integer("solution_steps", low=2, high=1000),
)


def aims(steps: int, control_steps: int) -> tuple[QualityAim | SpeedupAim, ...]:
    """The fine-tuned prune's claims: faster than the teacher (3), within 1.3× of its FDD and
    better than both controls on FDD (2)."""

    def beats(id: str, against: str, **params: int) -> QualityAim:
        return QualityAim(id, HEAD, against, "fd_digits", "<=", 1.0, params=params)

    return (
        SpeedupAim("speedup", HEAD, "teacher", ">=", SPEEDUP_AIM, {"ratio": PRUNE_RATIO}),
        QualityAim("quality", HEAD, "teacher", "fd_digits", "<=", QUALITY_AIM),
        beats("beats-fewer-steps", "fewer-steps", steps=steps, control_steps=control_steps),
        beats("beats-scratch", "scratch", steps=FINETUNE_STEPS),
    )


def variant(net: Network, cfg: Config) -> Variant:
    """A row: sampled on every seed; timed on the latency batch unless it is a one-shot prune."""
    timed = runner(net, cfg.batch_latency, sizes.LATENCY_SEED) if net.timed else None
    return Variant(
        net.id,
        dict(net.config),
        net.role,
        sample=lambda seed: runner(net, cfg.n_quality, seed)(),
        timed=timed,
        facts=dict(net.facts),
    )


def comparison(cfg: Config, nets: list[Network]) -> compare.Comparison:
    """Every row on the same noise, scored on the held-out digits and against the teacher's
    converged solution (1); the fine-tuned prune is the headline, judged on FDD."""
    by_id = {n.id: n for n in nets}
    head, teacher = by_id[HEAD].facts, by_id["teacher"]
    columns = metrics(
        *SAMPLED_COLUMNS, "nfe", "gflops", "params_m", **lower("flops_ratio"), **higher("sparsity")
    )
    return held_out_comparison(
        cfg,
        [variant(n, cfg) for n in nets],
        columns,
        aims(cfg.steps, by_id["fewer-steps"].steps),
        HeadlineSpec(
            HEAD,
            quality="fd_digits",
            # FLOPs count products and convolutions only: the inverse ratio is an estimate
            limit=1 / head["flops_ratio"],
            limit_kind="estimate",
            memory_ratio=head["params_m"] / teacher.facts["params_m"],
        ),
        solution=solution_of(teacher.net, cfg.n_quality, cfg.solution_steps),
    )


def _one_shot_note(m: compare.Measured, cfg: Config) -> Note:
    """The best one-shot row's fidelity (1) and FDD beside the teacher's."""
    rows = {r.id: r.values for r in m.rows}
    one_shot = [f"{c}-{r}" for r in cfg.ratios for c in cfg.criteria]
    best = min(one_shot, key=lambda k: rows[k]["rms_to_solution"])
    return note(
        "one-shot",
        best=rows[best]["rms_to_solution"],
        best_fd=rows[best]["fd_digits"],
        teacher=rows["teacher"]["rms_to_solution"],
        teacher_fd=rows["teacher"]["fd_digits"],
        solution_steps=cfg.solution_steps,
    )


def _notes(m: compare.Measured, cfg: Config) -> list[Note]:
    from reference import zoo

    rows = {r.id: r.values for r in m.rows}
    h, base, control = rows[HEAD], rows["teacher"], rows["fewer-steps"]
    teacher_steps = int(zoo.manifest_entry("teacher")["steps"])
    notes = [
        latency_note(cfg.repeats, cfg.batch_latency),
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        note("same-noise", steps=cfg.steps),
        note("yardsticks"),
        note("depgraph", tp_version=torch_pruning_version()),
        note(
            "structured-is-smaller",
            ratio=PRUNE_RATIO,
            flops=h["flops_ratio"],
            params=h["params_m"] / base["params_m"],
        ),
        note(
            "fewer-steps-control",
            steps=cfg.steps,
            control_steps=int(control["nfe"]),
            flops=h["flops_ratio"],
            faster=h["latency_ms"] / control["latency_ms"],
        ),
        note("unstructured-dense"),
        _one_shot_note(m, cfg),
        note(
            "finetune-budget",
            steps=FINETUNE_STEPS,
            batch=ZOO_SPECS["pruned_teacher"].batch,
            share=100 * FINETUNE_STEPS * h["flops_ratio"] / teacher_steps,
            teacher_steps=teacher_steps,
            size=1 / h["flops_ratio"],
            fd_finetuned=h["fd_digits"],
            fd_scratch=rows["scratch"]["fd_digits"],
        ),
    ]
    if next(a for a in m.aims if a.id == "speedup").state != "met":
        notes.append(note("speedup-gap", speedup=h["speedup"], flop_speedup=1 / h["flops_ratio"]))
    return notes


def _measured(cfg: Config) -> tuple[compare.Measured, list[Network]]:
    nets = networks(cfg)
    return compare.measure(comparison(cfg, nets)), nets


def measure(cfg: Config, staging: Path) -> compare.Outcome:
    """Sample (paired seeds), score, time and count every row; write the two figures."""

    m, nets = _measured(cfg)
    figures = [Figure(f"{SLUG}.png", "fdd-vs-ratio"), Figure(f"{SLUG}-samples.png", "samples")]
    curve, grid = (staging / f.file for f in figures)
    save_figures(m, cfg.ratios, cfg.criteria, curve, grid)
    return sampled_outcome(
        m,
        cfg,
        notes=_notes(m, cfg),
        figures=figures,
        taylor_t_max=TAYLOR_T_MAX,
        finetune_steps=FINETUNE_STEPS,
        control_steps=next(n.steps for n in nets if n.id == "fewer-steps"),
    )


def demo(cfg: Config, out: Path) -> None:
    """Prune at one ratio; print FLOPs, NFE, speedup, FDD and fidelity per row; write figures."""
    m, _ = _measured(cfg)
    print(f"{'row':18} {'role':9} {'FLOPs':>6} {'NFE':>4} {'speedup':>8} {'FDD':>8} {'RMS':>7}")
    for r in m.rows:
        v = r.values
        speed = "   —    " if "speedup" not in v else f"{v['speedup']:7.2f}x"
        print(
            f"{r.id:18} {r.role:9} {v['flops_ratio']:6.2f} {int(v['nfe']):4d} {speed} "
            f"{v['fd_digits']:8.2f} {v['rms_to_solution']:7.3f}"
        )
    curve, grid = out / f"{SLUG}-demo.png", out / f"{SLUG}-demo-samples.png"
    save_figures(m, cfg.ratios, cfg.criteria, curve, grid)
    print(f"{curve}: FDD against the fraction of channels removed")
    print(f"{grid}: rows teacher, fine-tuned prune, from-scratch control")
