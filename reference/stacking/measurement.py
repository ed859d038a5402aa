"""The `Measurement` of a study: what ``stacking.json`` holds besides the harness's envelope."""

from __future__ import annotations

from typing import Any

from .elements import ELEMENTS
from .rows import BUDGETS, fastest_within, frontier, matrices, row, speedup_of
from .stats import Term, speedup_product
from .study import EXACT_TOL, Study

REAL_DRAWS = 50
"""Class-balanced draws of held-out real digits behind the ``real`` row."""


def _aims(study: Study, rows: dict[str, Any], head: str | None) -> list[Any]:
    from reference.harness import aim

    out = []
    for k, r in rows.items():
        ctrl = r.config.get("control")
        if ctrl is not None:
            q = study.table.ratio(k, ctrl, "fd_digits")
            out.append(aim("beats-control", q.value, 1.0, "<=", q.interval, row=k, against=ctrl))
    if head is None:
        return out
    q = study.table.ratio(head, "base", "fd_digits")
    budget = study.cfg.budget
    out.append(aim("within-budget", q.value, budget, "<=", q.interval, row=head, against="base"))
    singles = [k for k in rows if rows[k].config.get("size") == 1]
    single = max(
        (k for k in singles if rows[k].values["fd_ratio"] <= budget),
        key=lambda k: rows[k].values["speedup"],
        default=None,
    )
    if single is not None:
        v, ci = speedup_product(
            [
                Term(study.latency[head], head, "base"),
                Term(study.latency[single], single, "base", -1),
            ]
        )
        out.append(aim("beats-best-single", v, 1.0, ">", ci, row=head, against=single))
    return out


def _headline(study: Study, rows: dict[str, Any], head: str | None) -> Any:
    from reference.harness import Headline

    if head is None:
        return None
    r = rows[head]
    limit = 1.0
    for m in r.config["members"]:
        limit *= rows[m].values["speedup"]
    speed, ci = speedup_of(study, head)
    return Headline(
        head,
        speedup=speed,
        speedup_interval=ci,
        speedup_limit=limit,
        limit_kind="estimate",
        quality_metric="fd_digits",
        quality_ratio=r.values["fd_ratio"],
        quality_interval=r.intervals["fd_ratio"],
    )


def _notes(study: Study, rows: dict[str, Any], wall_s: float) -> list[Any]:
    from reference.harness import note
    from reference.harness.cost import latency_note

    cfg = study.cfg
    exact = [r.values["max_abs_vs_parent"] for r in rows.values() if r.config.get("quality_of")]
    out = [
        note("quality-protocol", n=cfg.n, seeds=len(cfg.seeds), draws=REAL_DRAWS),
        note("held-out-reference"),
        note("clipped-ode"),
        latency_note(cfg.repeats, cfg.latency_batch),
        note("exact-inherit", tol=EXACT_TOL, max_abs=max(exact, default=0.0), rows=len(exact)),
        note("greedy-rule", budget=cfg.budget, floor=1.01),
        note("control-grid"),
        note("latent-pairing"),
        note("study-time", minutes=round(wall_s / 60.0, 1)),
        note(f"compile-{study.compile_status}", seconds=round(study.compile_seconds)),
    ]
    return out


def measurement(study: Study, wall_s: float) -> Any:
    """Rows, settings (matrices, frontier, greedy path), headline, aims and notes."""
    from reference.harness import Measurement, Metric, metrics, settings_of
    from reference.harness.scores import real_row

    rows = {k: row(study, c) for k, c in study.configs.items()}
    head = fastest_within(rows, study.cfg.budget)
    cfg = study.cfg
    settings = settings_of(
        cfg,
        element_slugs=[ELEMENTS[e].slug for e in cfg.elements],
        element_levels=[ELEMENTS[e].level for e in cfg.elements],
        single_speedup=[rows[e].values["speedup"] for e in cfg.elements],
        **matrices(study, rows),
        budgets=list(BUDGETS),
        pareto=frontier(rows),
        greedy=list(study.greedy),
        greedy_left=study.greedy_left,
        compile_status=study.compile_status,
        compile_s=round(study.compile_seconds, 1),
        wall_s=round(wall_s, 1),
    )
    ratio = Metric("", "lower")
    return Measurement(
        settings=settings,
        metrics=metrics(
            "latency_ms",
            "speedup",
            "fd_digits",
            "kid_digits",
            "accuracy",
            "diversity",
            fd_ratio=ratio,
            interaction=Metric("x", "higher"),
            control_latency_ratio=Metric("", "higher"),
            max_abs_vs_parent=Metric("", "lower"),
        ),
        rows=[*rows.values(), real_row(cfg.n, REAL_DRAWS).as_row("fd_digits", "kid_digits")],
        headline=_headline(study, rows, head),
        aims=_aims(study, rows, head),
        notes=_notes(study, rows, wall_s),
        figures=[],
    )
