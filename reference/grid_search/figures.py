"""The grid search's figures: the Pareto front of the selection FDD (against the training digits)
against latency, and the best selection FDD found against trials for grid, random and TPE
search. The PNG files are the English drawings; the data of both is kept in the result's
``pareto-front`` and ``search-curves`` notes (`reference.grid_search.notes`), from which the
site draws them in each language."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reference.harness.results import Figure


def label(p: Mapping[str, Any]) -> str:
    return f"{p['sampler']} {p['steps']} steps, guidance {p['guidance']:g}"


def pareto_figure(rows: Sequence[Any], front: Sequence[Any], chosen: Any, base: Any, path: Path):  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(7, 4.5), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    lat, fd = [r["latency_ms"] for r in rows], [r["fd_digits"] for r in rows]
    ax.scatter(lat, fd, s=14, color="0.6", label="grid points")
    ax.plot([r["latency_ms"] for r in front], [r["fd_digits"] for r in front], "o-", label="front")
    for p, marker, color, name in (
        (base, "s", "tab:red", "default"),
        (chosen, "*", "tab:green", "choice"),
    ):
        legend = f"{name} ({label(p)})"
        ax.scatter(
            [p["latency_ms"]], [p["fd_digits"]], marker=marker, s=100, color=color, label=legend
        )
    ax.set_xscale("log")
    ax.set_xlabel("latency per batch, ms (one run per point)")
    ax.set_ylabel("selection FDD, training digits (lower is better)")
    ax.legend(fontsize=7)
    fig.savefig(path)


def strategies_figure(curves: Mapping[str, Any], path: Path) -> None:
    from reference.harness import curve_plot

    k = list(range(1, len(curves["grid"]) + 1))
    series = {"grid": curves["grid"], "random": curves["random"], "TPE": curves["tpe"]}
    curve_plot(
        k, series, path, xlabel="trials", ylabel="best selection FDD found (mean over seeds)"
    )


def write_figures(sel: Any, staging: Path, slug: str) -> list[Figure]:
    """The Pareto and strategies figures of a selection ``sel``, written into ``staging``."""
    figures = [Figure(f"{slug}.png", "pareto"), Figure(f"{slug}-strategies.png", "strategies")]
    pareto_figure(sel.grid, sel.front, sel.row_of("chosen"), sel.base, staging / figures[0].file)
    strategies_figure(sel.curves, staging / figures[1].file)
    return figures
