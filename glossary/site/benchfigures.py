"""The benchmarks' own figures, redrawn per language at build time from the result rows.

A benchmark saves its charts as PNG files with English text (``figures`` in a result). A
reader of the Spanish or Russian page should not meet them, so each chart whose data the rows
hold is described here (:data:`CHARTS`, read from the figure function of the technique's
``bench.py``) and drawn like the page's own chart: one SVG per language, the words from the
catalogs (series names ``chart.series-<id>`` in the technique's catalog, axis titles in the
shared ``results`` catalog), the values and their 95% intervals from the rows. Four kinds:

* :class:`Curves`: one metric against a metric or a configuration value, one line per series
  of rows (a series of one row is a single point, named by its configuration);
* :class:`Dots`: one or more metrics per row, a dot plot with one line per configuration;
* :class:`Sweep`: a sweep the benchmark kept in its settings or in the parameters of one of
  its notes (one run, no interval) instead of rows, drawn like :class:`Curves`;
* :class:`Payoff`: the benchmark's straight-line model of a cost from two metrics per row;
* :class:`Shares`: shares of a whole per group (each group's shares sum to 1) kept in the
  parameters of one of its notes, drawn as grouped bars in percent beside the even share.

A chart whose data is not in the result (a sweep the benchmark ran but did not store) is
listed in :data:`NOT_IN_ROWS`; it is not drawn, and the pages say so (:mod:`glossary.site.terms`).
A chart described here whose committed result predates its data is drawn as soon as a rerun
stores it; until then its committed PNG stays (:data:`AWAITING_RERUN`).

Sample grids (digits, no text) stay PNG; :func:`sample_rows` says which row of the result each
grid row shows, top to bottom, in the order the benchmark concatenated them
(:data:`SAMPLE_ROWS`), so that the page can label them in its language.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from glossary.resulttext import ResultText
from glossary.site import plotdraw as draw
from glossary.site.plotdata import Point, finite, needs_log, span_of
from glossary.site.plots import ROLES, Chart, chart_key
from glossary.site.results import Result

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#666666")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
ROW_LABEL_LINES = 5
"""Lines a row label of a dot plot may take (the configurations' names are long)."""


@dataclass(frozen=True)
class Series:
    """Rows drawn as one line, in order; ``label`` is a message id of the technique's catalog
    (empty: a single row, named by its configuration)."""

    rows: tuple[str, ...]
    label: str = ""
    metric: str = ""
    """Another metric than the chart's (a limit stored beside the speedup)."""
    dashed: bool = False


@dataclass(frozen=True)
class Curves:
    """``y`` against ``x`` (a metric, or ``config.<key>`` for a configuration value)."""

    y: str
    x: str
    series: tuple[Series, ...]
    log_x: bool = False
    log_y: bool = False
    ref_line: float | None = None
    """A horizontal line (1 for a speedup: no gain)."""


@dataclass(frozen=True)
class Dots:
    """Each of ``metrics`` per row of ``rows`` (top to bottom)."""

    metrics: tuple[str, ...]
    rows: tuple[str, ...]
    log: bool = False
    ref_line: float | None = None


@dataclass(frozen=True)
class Sweep:
    """A sweep the benchmark kept in its settings, not in rows: ``values`` (a list per series
    of ``series``, one value of metric ``y`` per x) against ``x`` (one list, or a list per
    series); ``x_title`` is a metric or ``chart.axis-*`` message; each series is named by the
    technique's message ``<label><name>``. With ``note``, the three lists are parameters of
    the result's note of that id instead of settings."""

    y: str
    values: str
    x: str
    x_title: str
    series: str
    log_x: bool = False
    log_y: bool = False
    label: str = "chart.series-"
    """The prefix of the series' message ids (the name follows it)."""
    rows: bool = False
    """The series names are row ids: the message is the prefix and the row's method, filled
    with its configuration."""
    note: str = ""
    """The id of the note whose parameters hold the sweep (empty: the settings)."""
    y_title: str = ""
    """A message for the y axis when ``y`` is not a metric of the result (``y`` is then only
    the caption's name for it, the same message)."""
    caption: str = ""
    """A message for the caption (empty: the shared sweep captions)."""


@dataclass(frozen=True)
class Payoff:
    """What serving ``x`` images costs per row, the benchmark's own model of it: the metric
    ``fixed`` (seconds, paid once) plus ``x`` times the metric ``per`` (ms per image), for
    ``x`` in ``multiples`` of the settings' batch size ``batch``."""

    fixed: str
    per: str
    rows: tuple[str, ...]
    batch: str
    multiples: tuple[int, ...]
    log_x: bool = False
    log_y: bool = False


@dataclass(frozen=True)
class Shares:
    """Shares kept in the parameters of the result's note ``note``: ``values`` is a list per
    group, one share per category (a fraction; a group's shares sum to 1). Drawn as grouped
    bars in percent, one colour per group named by the message ``group`` (its ``block``: the
    group's number from 1), the categories named ``<prefix><index from 0>``, with the even
    share 100 / k % of k categories as a dashed line named by the message ``even``."""

    note: str
    values: str
    x_title: str
    y_title: str
    group: str
    even: str
    caption: str
    alt: str
    prefix: str = ""


Spec = Curves | Dots | Sweep | Payoff | Shares


def _caching_series() -> tuple[Series, ...]:
    return (
        Series(("dc5", "dc3", "dc2", "ddim50"), "chart.series-deepcache"),
        Series(("ddim-dc5", "ddim-dc3", "ddim-dc2", "ddim50"), "chart.series-ddim"),
    )


def _forecast_series() -> tuple[Series, ...]:
    return (
        Series(("ddim-k4", "ddim-k3", "ddim-same", "ddim50"), "chart.series-ddim"),
        Series(("newton-k4", "newton-k3", "newton"), "chart.series-forecast"),
        Series(("reuse",)),
        Series(("taylor",)),
        Series(("newton1",)),
    )


_FIDELITY_NFE = (
    Curves("rms_to_solution", "nfe", _forecast_series(), log_y=True),
    Curves("fd_digits", "nfe", _forecast_series()),
)


_BUDGETS = (0.35, 0.5, 0.75)
"""The budgets of the low-rank benchmark's standard run (its ``Config.budgets``), in order."""


def _batch_series(prefix: str, kinds: tuple[str, ...], batches: tuple[int, ...]) -> Any:
    return tuple(
        Series(tuple(f"{prefix}b{b}-{k}" for b in batches), f"chart.series-{prefix}{k}")
        for k in kinds
    )


CHARTS: dict[tuple[str, str], tuple[Spec, ...]] = {
    # reference/accelerate_method/figures.py: plot_fidelity_vs_nfe (two panels)
    ("accelerate-method", "fidelity-vs-nfe"): _FIDELITY_NFE,
    # reference/async_pipeline/bench.py: _figure (sync, async, stream against the batch)
    ("async-pipeline", "speedup-vs-batch"): (
        Curves(
            "speedup",
            "config.batch",
            _batch_series("", ("sync", "async", "stream"), (1, 8, 64)),
            log_x=True,
            ref_line=1.0,
        ),
    ),
    # reference/classifier_guidance/figures.py: plot_study: accuracy and FDD against the
    # scale, accuracy against NFE (all from rows: the curves are reference rows at fewer steps)
    ("classifier-guidance", "scales-and-nfe"): (
        Curves(
            "accuracy",
            "config.scale",
            (
                Series(("cg-1", "cg-2", "cg-4"), "chart.series-cg"),
                Series(("ddim50", "cfg-1.5", "cfg-2", "cfg-3"), "chart.series-cfg"),
            ),
        ),
        Curves(
            "fd_digits",
            "config.scale",
            (
                Series(("uncond", "cg-1", "cg-2", "cg-4"), "chart.series-cg"),
                Series(("ddim50", "cfg-1.5", "cfg-2", "cfg-3"), "chart.series-cfg"),
            ),
            log_y=True,
        ),
        Curves(
            "accuracy",
            "nfe",
            (
                Series(
                    ("cg-2-nfe2", "cg-2-nfe5", "cg-2-nfe10", "cg-2-nfe20", "cg-2"), "chart.nfe-cg"
                ),
                Series(
                    ("cfg-1.5-nfe2", "cfg-1.5-nfe5", "cfg-1.5-nfe10", "cfg-1.5-nfe20", "cfg-1.5"),
                    "chart.nfe-cfg",
                ),
                Series(("ddim2", "ddim5", "ddim10", "ddim20", "ddim50"), "chart.curve-conditional"),
            ),
            log_x=True,
        ),
    ),
    # reference/consistency_latent_diffusion/figures.py: fdd_bars (bar chart of FDD)
    ("consistency-latent-diffusion", "fdd-bars"): (
        Dots(("fd_digits",), ("ddim50", "cm1", "cm2", "cm4", "dpm1", "dpm2", "dpm4")),
    ),
    # reference/conv_fusion: the fused network's speedup against the batch, with its limit
    ("conv-fusion", "speedup-vs-batch"): (
        Curves(
            "speedup",
            "config.batch",
            (
                *_batch_series("classifier-", ("fused",), (1, 8, 32, 128)),
                *_batch_series("denoiser-", ("fused",), (1, 8, 32, 128)),
                Series(
                    tuple(f"classifier-b{b}-eager" for b in (1, 8, 32, 128)),
                    "chart.series-classifier-limit",
                    metric="speedup_limit",
                    dashed=True,
                ),
                Series(
                    tuple(f"denoiser-b{b}-eager" for b in (1, 8, 32, 128)),
                    "chart.series-denoiser-limit",
                    metric="speedup_limit",
                    dashed=True,
                ),
            ),
            log_x=True,
            ref_line=1.0,
        ),
    ),
    # reference/feature_caching/figures.py: plot_speed_and_fidelity (speedup against N; the
    # distance to the solution and the FDD against the full passes)
    ("feature-caching", "speed-and-quality"): (
        Curves(
            "speedup",
            "config.interval",
            (Series(("dc2", "dc3", "dc5"), "chart.series-deepcache"),),
            ref_line=1.0,
        ),
        Curves("rms_to_solution", "full_steps", _caching_series(), log_y=True),
        Curves("fd_digits", "full_steps", _caching_series()),
    ),
    # reference/gradient_checkpointing/figures.py: the policies figure (memory; the step's speed
    # against the baseline, the inverse of the figure's step-time ratio)
    ("gradient-checkpointing", "policies"): (
        Dots(
            ("activation_mb", "peak_activation_mb"),
            ("none", "diffusers", "module", "stage", "sqrt", "accum"),
        ),
        Dots(("speedup",), ("none", "diffusers", "module", "stage", "sqrt", "accum"), ref_line=1.0),
    ),
    # reference/gradient_checkpointing/figures.py: chain_figure, retained and peak memory per
    # chain length (kept in the chain-law note: ns, series, retained, peak)
    ("gradient-checkpointing", "chain"): tuple(
        Sweep(
            "",
            values,
            "ns",
            "chart.axis-chain-blocks",
            "series",
            log_x=True,
            log_y=True,
            label="chart.chain-",
            note="chain-law",
            y_title=f"chart.axis-chain-{values}",
            caption="chart.caption-chain",
        )
        for values in ("retained", "peak")
    ),
    # reference/grid_search/figures.py: pareto_figure, the selection's Pareto front with the
    # default and the choice (kept in the pareto-front note: series, latency_ms, fd_select)
    ("grid-search", "pareto"): (
        Sweep(
            "fd_select",
            "fd_select",
            "latency_ms",
            "chart.axis-grid-latency",
            "series",
            log_x=True,
            label="chart.pareto-",
            note="pareto-front",
            y_title="chart.axis-select-fdd",
            caption="chart.caption-pareto",
        ),
    ),
    # reference/grid_search/figures.py: strategies_figure, best selection FDD found per trial
    # count (kept in the search-curves note: trials, series, best)
    ("grid-search", "strategies"): (
        Sweep(
            "fd_select",
            "best",
            "trials",
            "chart.axis-trials",
            "series",
            label="chart.strategy-",
            note="search-curves",
            y_title="chart.axis-best-fdd",
            caption="chart.caption-strategies",
        ),
    ),
    # reference/mixture_of_experts/figures.py: utilisation_figure, each expert's share of a
    # block's first choices while sampling (kept in the utilisation note: shares)
    ("mixture-of-experts", "utilisation"): (
        Shares(
            "utilisation",
            "shares",
            "chart.axis-expert",
            "chart.axis-share",
            "chart.series-block",
            "chart.even-share",
            "chart.caption-utilisation",
            "chart.alt-utilisation",
            prefix="E",
        ),
    ),
    # reference/low_rank_inference/figures.py: budget_figure, per method: the fidelity and FDD of
    # the sampling rows, the speedup of the layers-only rows and of the whole sampling
    ("low-rank-inference", "budget"): (
        *(
            Curves(
                metric,
                "config.budget",
                tuple(
                    Series(tuple(f"{m}-{b}" for b in _BUDGETS), f"chart.series-{m}")
                    for m in ("svd", "asvd")
                ),
                log_y=True,
            )
            for metric in ("rms_to_solution", "fd_digits")
        ),
        Curves(
            "speedup",
            "config.budget",
            tuple(
                Series(tuple(f"{prefix}{m}-{b}" for b in _BUDGETS), f"chart.series-{m}-{part}")
                for prefix, part in (("layers-", "layers"), ("", "whole"))
                for m in ("svd", "asvd")
            ),
            ref_line=1.0,
        ),
    ),
    # reference/low_rank_inference/figures.py: error_vs_rank, the output error of two layers per
    # rank and method (kept in the break-even-error note: ranks, series, errors)
    ("low-rank-inference", "error-vs-rank"): (
        Sweep(
            "",
            "errors",
            "ranks",
            "chart.axis-rank",
            "series",
            log_y=True,
            label="chart.rank-",
            note="break-even-error",
            y_title="chart.axis-output-error",
            caption="chart.caption-error-vs-rank",
        ),
    ),
    # reference/pruning/measure.py: save_figures (FDD against the ratio, per criterion)
    ("pruning", "fdd-vs-ratio"): (
        Curves(
            "fd_digits",
            "config.ratio",
            (
                Series(("l1-0.25", "l1-0.5", "l1-0.75"), "chart.series-l1"),
                Series(("taylor-0.25", "taylor-0.5", "taylor-0.75"), "chart.series-taylor"),
                Series(("finetuned",)),
                Series(("scratch",)),
            ),
            log_y=True,
        ),
    ),
    # reference/scheduler_tradeoff/figures.py: plot_tradeoff, the sweep on the first seed
    # (kept in the settings: sweep_fd_digits, sweep_seconds and, for the ODE samplers,
    # sweep_rms_to_solution per scheduler and NFE)
    ("scheduler-tradeoff", "tradeoff"): tuple(
        Sweep(y, values, x, title, "schedulers", log_x=True, log_y=True, label="chart.sampler-")
        for y, values, x, title in (
            ("fd_digits", "sweep_fd_digits", "nfe_grid", "nfe"),
            ("fd_digits", "sweep_fd_digits", "sweep_seconds", "chart.axis-sweep-seconds"),
            ("rms_to_solution", "sweep_rms_to_solution", "nfe_grid", "nfe"),
        )
    ),
    # reference/tpu_deployment/report.py: figures (compile_s + images x median per image)
    ("tpu-deployment", "payoff"): (
        Payoff(
            "compile_s",
            "ms_per_image",
            ("torch", "per-step", "compiled"),
            "batch_latency",
            (0, 1, 4, 16, 64),
        ),
    ),
    # reference/stochastic_reparameterization/figures.py: the variance figure
    ("stochastic-reparameterization", "variance"): (
        Dots(
            ("loss_var_reduction", "grad_var_reduction"),
            (
                "var-eps-ld",
                "var-eps-anti",
                "var-eps-ld-anti",
                "var-eps-is",
                "var-eps-is-ld-anti",
                "var-eps-2x",
                "var-edm-uniform",
                "var-edm-ld-anti",
            ),
            log=True,
            ref_line=1.0,
        ),
    ),
    # reference/stochastic_reparameterization/figures.py: mechanism_figure, the teacher's loss
    # per timestep bin, the proposals' densities and the parameterizations' weights (kept in
    # the mechanism note: t_loss, loss, t, proposal, weight and their series)
    ("stochastic-reparameterization", "mechanism"): tuple(
        Sweep(
            "",
            values,
            x,
            "chart.axis-timestep",
            f"{values}_series",
            log_y=log_y,
            label=f"chart.{values}-",
            note="mechanism",
            y_title=f"chart.axis-{title}",
            caption=f"chart.caption-{title}",
        )
        for values, x, title, log_y in (
            ("loss", "t_loss", "per-t-loss", True),
            ("proposal", "t", "proposal", False),
            ("weight", "t", "weight", True),
        )
    ),
    # reference/stochastic_reparameterization/figures.py: training_figure, held-out eps- and
    # x0-MSE per training scheme against examples seen (kept in the training note: the
    # seed-mean curves)
    ("stochastic-reparameterization", "training"): tuple(
        Sweep(
            "",
            values,
            "examples_seen",
            "chart.axis-examples",
            "schemes",
            log_y=True,
            label="chart.scheme-",
            note="training",
            y_title=f"chart.axis-heldout-{name}",
            caption="chart.caption-training",
        )
        for values, name in (("eps_mse", "eps"), ("x0_mse", "x0"))
    ),
    # reference/timestep_distillation/figures.py: quality_curve (students, the teacher on the
    # same timesteps and on trailing ones; the baseline and the 64-step nested grid as points)
    ("timestep-distillation", "quality-vs-steps"): (
        Curves(
            "fd_digits",
            "nfe",
            (
                Series(("student2", "student4", "student8"), "chart.series-student"),
                Series(("teacher2", "teacher4", "teacher8"), "chart.series-teacher"),
                Series(("ddim2", "ddim4", "ddim8"), "chart.series-ddim"),
                Series(("ddim50",)),
                Series(("teacher64",)),
            ),
            log_x=True,
        ),
    ),
    # reference/tpu_deployment/report.py: figures (latency bar chart; its error bars were the
    # inter-quartile range, which the rows keep as a spread, not as an interval)
    ("tpu-deployment", "latency"): (
        Dots(("latency_ms",), ("torch", "compiled", "per-step", "sharded", "bf16")),
    ),
}

NOT_IN_ROWS: dict[tuple[str, str], str] = {}
"""Charts that are not redrawn, and why (the data behind them is not in the result rows)."""

AWAITING_RERUN: dict[tuple[str, str], str] = {}
"""Charts of :data:`CHARTS` whose committed result may predate the data they are drawn from:
the site keeps the committed PNG (:func:`replaced` is false) until the rerun stores it."""


def _row(result: Result, rid: str) -> dict[str, Any] | None:
    return next((r for r in result["rows"] if r["id"] == rid), None)


def _with_config(result: Result, **config: Any) -> str | None:
    for row in result["rows"]:
        if all(row["config"].get(k) == v for k, v in config.items()):
            return str(row["id"])
    return None


def _caching_rows(result: Result) -> list[str | None]:
    """Baseline, headline DeepCache row, the DDIM control at the headline's interval."""
    head = (result["headline"] or {}).get("row")
    row = _row(result, head) if head else None
    interval = row["config"].get("interval") if row else None
    return ["ddim50", head, _with_config(result, method="ddim-matched", interval=interval)]


def _few_step_rows(result: Result, base: str, technique: str, control: str) -> list[str | None]:
    """Baseline, the headline row, the control at the headline's step count (if measured)."""
    head = (result["headline"] or {}).get("row")
    row = _row(result, head) if head else None
    steps = row["config"].get("steps") if row else None
    return [base, head, _with_config(result, method=control, steps=steps)]


def _scheduler_rows(result: Result) -> list[str | None]:
    """One row per scheduler, in the order of the settings, at the headline NFE."""
    settings = result["settings"]
    nfe = settings.get("headline_nfe")
    return [_with_config(result, method=s, nfe=nfe) for s in settings.get("schedulers", [])]


def _guidance_rows(result: Result) -> list[str | None]:
    """Unguided, classifier guidance at its headline scale, classifier-free guidance at its
    headline scale, the conditional baseline (``grid_rows`` of the benchmark's figures)."""
    settings = result["settings"]
    s, w, k = settings.get("cg_scale"), settings.get("cfg_scale"), settings.get("baseline_steps")
    return [
        "uncond",
        None if s is None else f"cg-{s:g}",
        None if w is None else f"cfg-{w:g}",
        None if k is None else f"ddim{k}",
    ]


@dataclass(frozen=True)
class Grid:
    """How to find a sample grid's rows: ids in order, and how many image rows each fills."""

    rows: Callable[[Result], list[str | None]]
    repeat: int = 1


SAMPLE_ROWS: dict[str, Grid] = {
    # GRID_ROWS of reference/accelerate_method/bench.py
    "accelerate-method": Grid(lambda r: ["ddim50", "newton", "reuse", "ddim-same"]),
    "classifier-guidance": Grid(_guidance_rows),
    # measure() of reference/consistency_latent_diffusion/bench.py: ddim50, cm<h>, dpm<h>
    "consistency-latent-diffusion": Grid(
        partial(_few_step_rows, base="ddim50", technique="consistency", control="dpm-solver-pp")
    ),
    # benchmark() of reference/feature_caching/bench.py: base, headline, its matched control
    "feature-caching": Grid(_caching_rows),
    # MODELS of reference/mixture_of_experts/bench.py, two image rows per model (the order
    # is the benchmark's model order; the result rows follow it, the caption names it too)
    "mixture-of-experts": Grid(lambda r: ["dense", "dense_wide", "sparse", "timestep"], 2),
    # save_figures of reference/pruning/measure.py: teacher / fine-tuned / scratch
    "pruning": Grid(lambda r: ["teacher", "finetuned", "scratch"]),
    "scheduler-tradeoff": Grid(_scheduler_rows),
    # measure of reference/timestep_distillation/bench.py: the baseline, the headline student,
    # the teacher on the student's timesteps
    "timestep-distillation": Grid(
        partial(_few_step_rows, base="ddim50", technique="student", control="teacher-grid-ddim")
    ),
}


def sample_rows(result: Result) -> list[tuple[str, int]]:
    """``(row id, image rows)`` of the result's sample grid, top to bottom; rows the result
    lacks are left out (empty when the technique's grid is not described)."""
    grid = SAMPLE_ROWS.get(result["slug"])
    if grid is None:
        return []
    ids = [rid for rid in grid.rows(result) if rid and _row(result, rid) is not None]
    return [(rid, grid.repeat) for rid in ids]


# ---------------------------------------------------------------------------------- drawing


def _x_value(row: dict[str, Any], x: str) -> float | None:
    if x.startswith("config."):
        return finite(row["config"].get(x.removeprefix("config.")))
    return finite(row["values"].get(x))


@dataclass(frozen=True)
class Line:
    """One drawn series: its label, points ``(x, y, interval)`` and style."""

    label: str
    points: tuple[tuple[float, float, tuple[float, float] | None], ...]
    dashed: bool = False


def curve_lines(result: Result, spec: Curves, text: ResultText) -> list[Line]:
    """The series of ``spec`` that have at least one measured point."""
    lines = []
    for series in spec.series:
        metric = series.metric or spec.y
        points = []
        for rid in series.rows:
            row = _row(result, rid)
            if row is None:
                continue
            x, y = _x_value(row, spec.x), finite(row["values"].get(metric))
            if x is None or y is None:
                continue
            points.append((x, y, span_of(row.get("intervals", {}).get(metric))))
        if not points:
            continue
        if series.label:
            label = text.message(series.label)
        else:
            label = text.config(_row(result, series.rows[0])["config"])  # type: ignore[index]
        lines.append(Line(label, tuple(points), series.dashed))
    return lines


def _sweep_label(result: Result, spec: Sweep, name: str, text: ResultText) -> str:
    row = _row(result, name) if spec.rows else None
    if row is None:
        return text.message(f"{spec.label}{name}")
    return text.config(row["config"], prefix=spec.label)


def sweep_source(result: Result, spec: Sweep | Shares) -> dict[str, Any]:
    """Where a sweep's lists are: the parameters of its note, or the settings."""
    if not spec.note:
        return dict(result["settings"])
    return next((n["params"] for n in result["notes"] if n["id"] == spec.note), {})


def sweep_lines(result: Result, spec: Sweep, text: ResultText) -> list[Line]:
    """One line per series of a sweep (no interval: one run); a value that is not a finite
    number is left out."""
    source = sweep_source(result, spec)
    names, values, xs = source.get(spec.series), source.get(spec.values), source.get(spec.x)
    if not isinstance(names, list) or not isinstance(values, list) or not isinstance(xs, list):
        return []
    lines = []
    for i, (name, ys) in enumerate(zip(names, values, strict=False)):
        row_xs = xs[i] if xs and isinstance(xs[0], list) else xs
        points = tuple(
            (float(x), float(y), None)
            for x, y in zip(row_xs, ys, strict=False)
            if finite(x) is not None and finite(y) is not None
        )
        if points:
            lines.append(Line(_sweep_label(result, spec, str(name), text), points))
    return lines


def share_groups(result: Result, spec: Shares) -> list[list[float]]:
    """The groups of shares of ``spec`` (empty when the note lacks them, or when they are not
    a list per group of the same number of finite shares)."""
    groups = sweep_source(result, spec).get(spec.values)
    if not isinstance(groups, list) or not groups:
        return []
    if not all(isinstance(g, list) and g and len(g) == len(groups[0]) for g in groups):
        return []
    values = [[finite(v) for v in g] for g in groups]
    if any(v is None for g in values for v in g):
        return []
    return [[float(v) for v in g] for g in values]  # type: ignore[arg-type]


def payoff_lines(result: Result, spec: Payoff, text: ResultText) -> list[Line]:
    """One straight line per row that measured both metrics: seconds against images."""
    batch = finite(result["settings"].get(spec.batch))
    lines = []
    for rid in spec.rows:
        row = _row(result, rid)
        fixed = finite(row["values"].get(spec.fixed)) if row else None
        per = finite(row["values"].get(spec.per)) if row else None
        if row is None or fixed is None or per is None or not batch:
            continue
        images = [m * batch for m in spec.multiples]
        points = tuple((x, fixed + x * per / 1000, None) for x in images)
        lines.append(Line(text.config(row["config"]), points))
    return lines


def dot_points(result: Result, spec: Dots, metric: str, text: ResultText) -> list[Point]:
    """The rows of ``spec`` that measured ``metric``, as points (value in ``speedup``)."""
    points = []
    for rid in spec.rows:
        row = _row(result, rid)
        value = finite(row["values"].get(metric)) if row else None
        if row is None or value is None:
            continue
        span = span_of(row.get("intervals", {}).get(metric))
        label = text.config(row["config"])
        points.append(Point(rid, label, row["role"], speedup=value, speedup_interval=span))
    return points


def axis_title(result: Result, name: str, text: ResultText, direction: bool = True) -> str:
    """An axis title: a configuration value's name, or a metric with its unit and, for a
    measured value (``direction``), which way is better."""
    if name.startswith("config."):
        return text.message(f"chart.axis-{name.removeprefix('config.')}")
    meta = result["metrics"][name]
    params = {"metric": text.metric(name), "unit": text.unit(meta["unit"])}
    if not direction:
        return text.message("chart.axis-x-unit" if params["unit"] else "chart.axis-x", params)
    better = "plot.lower-better" if meta["better"] == "lower" else "plot.higher-better"
    params["better"] = text.message(better)
    return text.message(
        "chart.axis-metric" if params["unit"] else "chart.axis-metric-plain", params
    )


def _log(ax: Any, which: str, values: list[float], wanted: bool) -> None:
    if values and (wanted or needs_log(values)) and min(values) > 0:
        draw.log_axis(ax, which, values)


def curve_titles(
    result: Result, spec: Curves | Sweep | Payoff, text: ResultText
) -> tuple[str, str]:
    """The x and y axis titles of a line chart."""
    if isinstance(spec, Payoff):
        return text.message("chart.axis-images"), text.message("chart.axis-seconds-total")
    x = spec.x if isinstance(spec, Curves) else spec.x_title
    if x.startswith("chart."):
        x_title = text.message(x)
    else:
        x_title = axis_title(result, x, text, direction=False)
    if isinstance(spec, Sweep) and spec.y_title:
        return x_title, text.message(spec.y_title)
    return x_title, axis_title(result, spec.y, text)


def _draw_curves(
    result: Result, spec: Curves | Sweep | Payoff, lines: list[Line], lang: str
) -> bytes:
    text = ResultText(result["slug"], lang)
    ref_line = spec.ref_line if isinstance(spec, Curves) else None
    with draw.figure(4.6) as (fig, ax):
        xs, ys = [], []
        for i, line in enumerate(lines):
            pts = sorted(line.points)
            err = [
                [max(0.0, y - s[0]) if s else 0.0 for _x, y, s in pts],
                [max(0.0, s[1] - y) if s else 0.0 for _x, y, s in pts],
            ]
            ax.errorbar(
                [p[0] for p in pts],
                [p[1] for p in pts],
                yerr=err,
                fmt=MARKERS[i % len(MARKERS)] + ("--" if line.dashed else "-"),
                color=PALETTE[i % len(PALETTE)],
                capsize=2.5,
                markersize=5,
                linewidth=1.2,
                label=draw.plain(line.label, 34),
            )
            xs += [p[0] for p in pts]
            ys += [v for _x, y, s in pts for v in ((y, *s) if s else (y,))]
        if ref_line is not None:
            ax.axhline(ref_line, color=draw.FOREGROUND, linewidth=0.8, zorder=1)
            ys.append(ref_line)
        _log(ax, "x", xs, spec.log_x)
        _log(ax, "y", ys, spec.log_y)
        draw.locale_axis(ax.xaxis, lang)
        draw.locale_axis(ax.yaxis, lang)
        draw.labels(ax, *curve_titles(result, spec, text))
        draw.legend(fig, ax.get_legend_handles_labels()[0])
        return draw.to_svg(fig)


def _draw_shares(result: Result, spec: Shares, groups: list[list[float]], lang: str) -> bytes:
    text = ResultText(result["slug"], lang)
    k = len(groups[0])
    width = 0.8 / len(groups)
    even = 100 / k
    with draw.figure(4.2) as (fig, ax):
        handles = []
        for i, shares in enumerate(groups):
            xs = [e + (i - (len(groups) - 1) / 2) * width for e in range(k)]
            label = draw.plain(text.message(spec.group, {"block": i + 1}), 34)
            colour = PALETTE[i % len(PALETTE)]
            handles.append(ax.bar(xs, [100 * v for v in shares], width, color=colour, label=label))
        # the even share in the text colour: the limit colour is also a block's bars
        line = ax.axhline(even, linestyle="--", color=draw.FOREGROUND, linewidth=1.2, zorder=3)
        line.set_label(draw.plain(text.message(spec.even, {"share": even}), 34))
        handles.append(line)
        ax.set_xticks(range(k), [f"{spec.prefix}{e}" for e in range(k)])
        ax.grid(False, axis="x")
        draw.locale_axis(ax.yaxis, lang)
        draw.labels(ax, text.message(spec.x_title), text.message(spec.y_title))
        draw.legend(fig, handles)
        return draw.to_svg(fig)


def dots_title(result: Result, spec: Dots, text: ResultText) -> str:
    """The value axis of a dot plot: the metric's title, or for several metrics (which share
    a unit and a direction; the legend names them) the unit and the direction alone."""
    if len(spec.metrics) == 1:
        return axis_title(result, spec.metrics[0], text)
    meta = result["metrics"][spec.metrics[0]]
    better = "plot.lower-better" if meta["better"] == "lower" else "plot.higher-better"
    params = {"unit": text.unit(meta["unit"]), "better": text.message(better)}
    return text.message("chart.axis-value" if params["unit"] else "chart.axis-value-plain", params)


def _spread(value: float, span: tuple[float, float] | None) -> list[list[float]] | None:
    """Error-bar lengths below and above ``value`` for its interval (``None``: no interval)."""
    if span is None:
        return None
    return [[max(0.0, value - span[0])], [max(0.0, span[1] - value)]]


def _dots_height(rows: list[Point], metrics: int) -> float:
    """Room for each row's label (up to :data:`ROW_LABEL_LINES` lines) and the legend."""
    import textwrap

    lines = max((len(textwrap.wrap(p.label, draw.ROW_LABEL_WIDTH)) for p in rows), default=1)
    per_row = 0.14 + 0.15 * min(lines, ROW_LABEL_LINES)
    return 1.9 + len(rows) * per_row + 0.45 * (metrics - 1)


def _draw_dots(result: Result, spec: Dots, lang: str) -> bytes:
    text = ResultText(result["slug"], lang)
    per = {m: dot_points(result, spec, m, text) for m in spec.metrics}
    order = [rid for rid in spec.rows if any(p.key == rid for ps in per.values() for p in ps)]
    labels = {p.key: p.label for ps in per.values() for p in ps}
    rows = [Point(rid, labels[rid], "technique") for rid in order]
    with draw.figure(_dots_height(rows, len(spec.metrics))) as (fig, ax):
        values: list[float] = []
        handles = []
        for j, (metric, points) in enumerate(per.items()):
            shift = (j - (len(per) - 1) / 2) * 0.22
            for p in points:
                y = order.index(p.key) + shift
                x = p.speedup or 0.0
                err = _spread(x, p.speedup_interval)
                values += [x, *(p.speedup_interval or ())]
                if len(per) == 1:  # one metric: the roles' shapes and colours, as elsewhere
                    draw.draw_point(ax, x, y, p, xerr=err, yerr=None)
                else:
                    style = {"fmt": MARKERS[j], "color": PALETTE[j], "capsize": 2.5}
                    ax.errorbar(x, y, xerr=err, **style)
            if len(per) > 1:
                handles.append(
                    draw.legend_marker(text.metric(metric), "technique", colour=PALETTE[j])
                )
                handles[-1].set_marker(MARKERS[j])
        if len(per) == 1:
            roles = [r for r in ROLES if any(p.role == r for ps in per.values() for p in ps)]
            handles = [draw.legend_marker(text.role(r), r) for r in roles]
        if spec.ref_line is not None:
            ax.axvline(spec.ref_line, color=draw.FOREGROUND, linewidth=0.8, zorder=1)
            values.append(spec.ref_line)
        ax.set_yticks(
            range(len(rows)),
            [draw.plain(p.label, draw.ROW_LABEL_WIDTH, ROW_LABEL_LINES) for p in rows],
            fontsize=draw.MIN_FONT_PT,
        )
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.grid(False, axis="y")
        _log(ax, "x", values, spec.log)
        draw.locale_axis(ax.xaxis, lang)
        draw.labels(ax, dots_title(result, spec, text))
        if handles:
            draw.legend(fig, handles)
        return draw.to_svg(fig)


def chart_name(file: str, index: int) -> str:
    """The drawn chart's file name (without language) for the ``index``-th chart of a PNG."""
    stem = file.removesuffix(".png")
    return f"{stem}-chart-{index + 1}"


def charts_of(file: str, charts: list[Chart]) -> list[Chart]:
    """The charts among ``charts`` that replace the committed figure ``file``, in order."""
    prefix = file.removesuffix(".png") + "-chart-"
    return [c for c in charts if c.name.startswith(prefix)]


def replaced(result: Result, figure: dict[str, Any]) -> bool:
    """Whether the committed figure is redrawn (its PNG is then not published)."""
    return bool(figure_charts(result, figure, "en"))


def _caption(result: Result, spec: Spec, text: ResultText) -> tuple[str, str]:
    if isinstance(spec, Shares):
        groups = share_groups(result, spec)
        params = {"blocks": len(groups), "experts": len(groups[0]) if groups else 0}
        return text.message(spec.caption, params), text.message(spec.alt, params)
    if isinstance(spec, Payoff):
        params = {"fixed": text.metric(spec.fixed), "per": text.metric(spec.per)}
        alt = {"y": curve_titles(result, spec, text)[1], "x": curve_titles(result, spec, text)[0]}
        return text.message("chart.caption-payoff", params), text.message("chart.alt-curves", alt)
    if isinstance(spec, Curves | Sweep):
        x_title, y_title = curve_titles(result, spec, text)
        named = isinstance(spec, Sweep) and spec.y_title
        params = {"y": y_title if named else text.metric(spec.y), "x": x_title}
        kind = "chart.caption-curves"
        if isinstance(spec, Sweep):
            kind = "chart.caption-sweep-rows" if spec.rows else "chart.caption-sweep"
            kind = spec.caption or kind
        return text.message(kind, params), text.message("chart.alt-curves", params)
    names = ", ".join(text.metric(m) for m in spec.metrics)
    params = {"metrics": names, "n": len(spec.rows)}
    return text.message("chart.caption-dots", params), text.message("chart.alt-dots", params)


def figure_charts(result: Result, figure: dict[str, Any], lang: str) -> list[Chart]:
    """The SVG charts (not drawn yet) that replace one committed figure in ``lang``; empty
    when the figure is a sample grid or its data is not in the rows."""
    specs = CHARTS.get((result["slug"], figure["caption"]), ())
    text = ResultText(result["slug"], lang)
    charts = []
    for i, spec in enumerate(specs):
        if isinstance(spec, Shares):
            groups = share_groups(result, spec)
            if not groups:
                continue
            drawing = partial(_draw_shares, result, spec, groups, lang)
        elif isinstance(spec, Curves):
            lines = curve_lines(result, spec, text)
            if not lines:
                continue
            drawing = partial(_draw_curves, result, spec, lines, lang)
        elif isinstance(spec, Sweep | Payoff):
            if isinstance(spec, Sweep):
                lines = sweep_lines(result, spec, text)
            else:
                lines = payoff_lines(result, spec, text)
            if not lines:
                continue
            drawing = partial(_draw_curves, result, spec, lines, lang)
        else:
            if not any(dot_points(result, spec, m, text) for m in spec.metrics):
                continue
            drawing = partial(_draw_dots, result, spec, lang)
        caption, alt = _caption(result, spec, text)
        name = chart_name(figure["file"], i)
        inputs = [result["rows"], result["metrics"], result["settings"], repr(spec)]
        if isinstance(spec, Sweep | Shares) and spec.note:
            inputs.append(sweep_source(result, spec))
        data = json.dumps(inputs, sort_keys=True)
        key = chart_key(name, lang, data, domains=(result["slug"], "results"))
        charts.append(Chart(name=name, caption=caption, alt=alt, key=key, draw=drawing))
    return charts
