"""The two charts of the stacking page (:mod:`glossary.site.stacking`), one SVG per language.

* ``stacking-pareto``: every measured configuration's speedup over the baseline (across, higher
  is faster, the same direction as the comparison page's charts) against its FDD ratio to the
  baseline (up, lower is better), both logarithmic;
  the marker gives the row's origin (baseline, single technique, variant, pair, stack, DDIM
  control), bars are the 95% intervals, the DDIM runs with fewer steps are joined as a line (the
  curve every stack has to beat), the Pareto frontier is a step line whose points are numbered
  (the caption names them, fastest first) and the quality budget is a dashed line.
* ``stacking-interaction``: a heat map over the study's elements; a cell is the interaction
  factor of a pair (its speedup over the product of the two own speedups) on a diverging colour
  scale centred at 1 on a logarithmic axis, with the value written in it; a pair that cannot be
  combined is hatched and marked ✗, one not measured shows —; the diagonal gives each element's
  own speedup. Rows and columns are numbered, and the key under the map names them.

Both are :class:`glossary.site.plots.Chart` objects keyed by the result and the ``stacking`` and
``results`` catalogs, drawn with :mod:`glossary.site.plotdraw` (4.3 in wide, text at least 9 pt,
the page's digits). Every word comes from ``ResultText("stacking", lang)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from glossary.resulttext import ResultText, format_number
from glossary.site import plotdraw as draw
from glossary.site import stackdata as data
from glossary.site.plots import Chart, chart_key
from glossary.site.results import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PARETO = "stacking-pareto"
INTERACTION = "stacking-interaction"
DOMAINS = (data.SLUG, "guide", "results")
ORIGIN_STYLE = {  # Okabe-Ito colours and distinct shapes
    "baseline": ("s", "#666666"),
    "single": ("o", "#0072B2"),
    "variant": ("v", "#56B4E9"),
    "pair": ("D", "#CC79A7"),
    "stack": ("P", "#D55E00"),
    "control": ("^", "#E69F00"),
}
FRONTIER = "#009E73"
CONTROL_LINE = "#E69F00"
CMAP = "PuOr"  # diverging, legible with colour-blindness: below 1 orange, above 1 purple
MIN_REACH = 1.25  # the colour scale spans at least 0.8-1.25, so small effects stay pale
NO_DATA = "—"
LEGEND_WIDTH = 20  # characters per line of a legend entry in two columns
LEGEND_LINES = 6  # lines of a legend entry at most: a term and its method are never cut
AXIS_WIDTH = 40  # characters per line of an axis label
CROSS = "✗"


@dataclass(frozen=True)
class ParetoPoint:
    """One measured configuration on the Pareto chart."""

    key: str
    origin: str
    speedup: float
    speedup_interval: data.Span | None
    quality: float
    quality_interval: data.Span | None


def pareto_points(result: Result) -> list[ParetoPoint]:
    """Every row with a measured speedup and FDD ratio (the real digits have neither)."""
    points = []
    for row in result["rows"]:
        kind = data.origin(row)
        x, x_span = data.value(row, "speedup"), data.span(row, "speedup")
        y = data.value(row, "fd_ratio")
        if kind in ORIGIN_STYLE and x is not None and x > 0 and y is not None:
            points.append(ParetoPoint(row["id"], kind, x, x_span, y, data.span(row, "fd_ratio")))
    return points


def frontier(result: Result, points: Sequence[ParetoPoint]) -> list[ParetoPoint]:
    """The points of ``settings.pareto`` that were drawn, fastest first."""
    by_key = {p.key: p for p in points}
    found = [by_key[k] for k in result["settings"].get("pareto", []) if k in by_key]
    return sorted(found, key=lambda p: -p.speedup)


def budget(result: Result) -> float | None:
    """The greedy's quality budget (``settings.budget``), else the first of ``budgets``."""
    found = data.finite(result["settings"].get("budget"))
    return found if found is not None else next(iter(data.budgets(result)), None)


def _bar(value: float, interval: data.Span | None) -> Any:
    if interval is None:
        return None
    return [[max(0.0, value - interval[0])], [max(0.0, interval[1] - value)]]


def _points(ax: Axes, points: Sequence[ParetoPoint]) -> None:
    for p in points:
        marker, colour = ORIGIN_STYLE[p.origin]
        ax.errorbar(
            p.speedup,
            p.quality,
            xerr=_bar(p.speedup, p.speedup_interval),
            yerr=_bar(p.quality, p.quality_interval),
            fmt=marker,
            color=colour,
            ecolor=colour,
            elinewidth=0.9,
            capsize=2,
            markersize=6,
            zorder=3,
        )


def _lines(ax: Axes, points: Sequence[ParetoPoint], front: Sequence[ParetoPoint]) -> None:
    ddim = sorted(
        (p for p in points if p.origin in ("control", "baseline")), key=lambda p: p.speedup
    )
    if len(ddim) >= 2:
        ax.plot([p.speedup for p in ddim], [p.quality for p in ddim], color=CONTROL_LINE, lw=1.2)
    if front:
        ax.step(
            [p.speedup for p in front],
            [p.quality for p in front],
            where="post",
            color=FRONTIER,
            linewidth=1.6,
            zorder=2,
        )


def _handle(label: str, width: int = LEGEND_WIDTH, **style: Any) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([], [], label=draw.plain(label, width, LEGEND_LINES), **style)


def _pareto_legend(
    text: ResultText, points: Sequence[ParetoPoint], limit: float | None
) -> list[Any]:
    handles = []
    for kind, (marker, colour) in ORIGIN_STYLE.items():
        if any(p.origin == kind for p in points):
            label = text.message(f"stacking.origin-{kind}")
            handles.append(_handle(label, linestyle="none", marker=marker, color=colour))
    if sum(p.origin == "control" for p in points):
        handles.append(_handle(text.message("stacking.legend-controls"), color=CONTROL_LINE))
    handles.append(_handle(text.message("stacking.legend-frontier"), color=FRONTIER, lw=1.6))
    if limit is not None:
        label = text.message("stacking.legend-budget", {"budget": limit})
        handles.append(_handle(label, color=draw.FOREGROUND, linestyle="--"))
    return handles


def _legend(fig: Figure, handles: list[Any], columns: int, **extra: Any) -> None:
    fig.legend(handles=handles, loc="outside lower center", ncols=columns, **extra)


def _draw_pareto(result: Result, text: ResultText, lang: str) -> bytes:
    points = pareto_points(result)
    front, limit = frontier(result, points), budget(result)
    xs = [v for p in points for v in (p.speedup, *(p.speedup_interval or ()))]
    ys = [v for p in points for v in (p.quality, *(p.quality_interval or ()))]
    with draw.figure(6.2) as (fig, ax):
        _lines(ax, points, front)
        _points(ax, points)
        if limit is not None:
            ax.axhline(limit, color=draw.FOREGROUND, linestyle="--", linewidth=1.0, zorder=1)
        draw.log_axis(ax, "x", xs)
        draw.log_axis(ax, "y", [*ys, *([limit] if limit else [])])
        draw.locale_axis(ax.xaxis, lang, "×")
        draw.locale_axis(ax.yaxis, lang)
        draw.title(fig, text.message("stacking.pareto-speed-title"))
        ax.set_xlabel(draw.plain(text.message("plot.axis-speedup"), AXIS_WIDTH, 2))
        ax.set_ylabel(draw.plain(text.message("stacking.axis-quality"), AXIS_WIDTH, 2))
        _legend(fig, _pareto_legend(text, points, limit), 2)
        numbered = [(p.speedup, p.quality, str(i)) for i, p in enumerate(front, 1)]
        draw.place_labels(fig, ax, numbered)
        return draw.to_svg(fig)


def numbered_names(text: ResultText, result: Result) -> str:
    """``1: A + B; 2: C`` for the frontier's numbered points, fastest first."""
    front = frontier(result, pareto_points(result))
    rows = {row["id"]: row for row in result["rows"]}
    return "; ".join(f"{i}: {data.label(text, rows[p.key])}" for i, p in enumerate(front, 1))


def pareto_chart(result: Result, lang: str, terms: Mapping[str, str] | None = None) -> Chart | None:
    """The Pareto chart of ``result`` in ``lang`` (not drawn yet), ``None`` with no points;
    ``terms``: each element's glossary term (:class:`glossary.site.stackdata.StudyText`)."""
    text = data.StudyText(lang, terms)
    points = pareto_points(result)
    if not points:
        return None
    steps = result["settings"].get("base_steps", 50)
    caption = [text.message("stacking.pareto-speed-caption", {"steps": steps})]
    front = frontier(result, points)
    if front:
        caption.append(
            text.message("stacking.pareto-numbered", {"names": numbered_names(text, result)})
        )
    alt = text.message("stacking.pareto-alt", {"n": len(points), "front": len(front)})
    return Chart(
        name=PARETO,
        caption=" ".join(caption),
        alt=alt,
        key=chart_key(PARETO, lang, _inputs(result, text), domains=DOMAINS),
        draw=lambda: _draw_pareto(result, text, lang),
    )


# ------------------------------------------------------------------------------ heat map


def _norm(result: Result) -> Any:
    from matplotlib.colors import LogNorm

    found = [data.finite(v) for line in data.matrix(result, "interaction") for v in line]
    reach = max([MIN_REACH] + [max(v, 1 / v) for v in found if v is not None and v > 0])
    return LogNorm(vmin=1 / reach, vmax=reach)


def _cell(ax: Axes, i: int, j: int, shown: str, face: Any, ink: str, hatch: str = "") -> None:
    from matplotlib.patches import Rectangle

    edge = draw.GRID if hatch else "white"
    box = Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=face, edgecolor=edge, hatch=hatch or None)
    ax.add_patch(box)
    ax.text(j, i, shown, ha="center", va="center", fontsize=draw.MIN_FONT_PT, color=ink)


def _cells(ax: Axes, result: Result, lang: str, norm: Any) -> None:
    from matplotlib import colormaps

    cmap = colormaps[CMAP]
    interaction, compatible = data.matrix(result, "interaction"), data.matrix(result, "compatible")
    singles = result["settings"].get("single_speedup", [])
    for i in range(len(interaction)):
        for j in range(len(interaction)):
            factor = data.finite(interaction[i][j])
            if i == j:
                own = data.finite(singles[i]) if i < len(singles) else None
                shown = format_number(own, lang, ".2g") + "×" if own is not None else NO_DATA
                _cell(ax, i, j, shown, "#ececec", draw.FOREGROUND)
            elif compatible[i][j] is False:
                _cell(ax, i, j, CROSS, "none", draw.FOREGROUND, hatch="///")
            elif factor is None or factor <= 0:
                _cell(ax, i, j, NO_DATA, "none", draw.FOREGROUND)
            else:
                level = float(norm(factor))
                ink = "white" if abs(level - 0.5) > 0.3 else draw.FOREGROUND
                _cell(ax, i, j, format_number(factor, lang, ".2f"), cmap(level), ink)


def _colour_ticks(norm: Any) -> list[float]:
    """1 and up to two round factors each side of it, symmetric on the log scale (0.8, 1.25)."""
    steps = [t for t in (1.25, 2.0, 5.0, 10.0) if t <= norm.vmax * 1.0001][-2:]
    return sorted({1.0, *steps, *(1 / t for t in steps)})


def _colourbar(fig: Figure, ax: Axes, text: ResultText, lang: str, norm: Any) -> None:
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    bar = fig.colorbar(
        ScalarMappable(norm=norm, cmap=colormaps[CMAP]),
        ax=ax,
        orientation="horizontal",
        location="top",
        shrink=0.8,
        aspect=30,
    )
    bar.ax.xaxis.set_major_locator(FixedLocator(_colour_ticks(norm)))
    bar.ax.xaxis.set_minor_locator(NullLocator())
    bar.ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _pos: format_number(float(v), lang, ".3g"))
    )
    bar.ax.tick_params(labelsize=draw.MIN_FONT_PT)
    bar.set_label(draw.plain(text.message("stacking.colourbar"), 50, 3), fontsize=draw.MIN_FONT_PT)


def _key(text: ResultText, result: Result) -> list[Any]:
    lines = [f"{i} {data.name(text, e)}" for i, e in enumerate(data.elements(result), 1)]
    lines += [
        f"{CROSS} {text.message('stacking.key-incompatible')}",
        f"{NO_DATA} {text.message('stacking.key-not-measured')}",
        text.message("stacking.key-diagonal"),
    ]
    return [_handle(line, linestyle="none") for line in lines]


def _draw_interaction(result: Result, text: ResultText, lang: str) -> bytes:
    n = len(data.elements(result))
    norm = _norm(result)
    key = _key(text, result)
    lines = sum(h.get_label().count("\n") + 1 for h in key)
    with draw.figure(draw.WIDTH_IN + 1.2 + 0.17 * (lines + 1) / 2) as (fig, ax):
        _cells(ax, result, lang, norm)
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_aspect("equal")
        ax.grid(False)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ticks = list(range(n))
        ax.set_xticks(ticks, [str(i + 1) for i in ticks])
        ax.set_yticks(ticks, [str(i + 1) for i in ticks])
        ax.tick_params(length=0)
        _colourbar(fig, ax, text, lang, norm)
        draw.title(fig, text.message("stacking.interaction-chart-title"))
        _legend(fig, key, 2, handlelength=0, handletextpad=0, columnspacing=1.2)
        return draw.to_svg(fig)


def _measured_pairs(result: Result) -> list[tuple[str, str, float]]:
    ids, found = data.elements(result), data.matrix(result, "interaction")
    return [
        (ids[i], ids[j], factor)
        for i in range(len(ids))
        for j in range(i + 1, len(ids))
        if (factor := data.finite(found[i][j])) is not None
    ]


def interaction_chart(
    result: Result, lang: str, terms: Mapping[str, str] | None = None
) -> Chart | None:
    """The interaction heat map of ``result`` in ``lang`` (not drawn yet), ``None`` when the
    study has fewer than two elements."""
    text = data.StudyText(lang, terms)
    ids = data.elements(result)
    if len(ids) < 2:
        return None
    pairs = _measured_pairs(result)
    alt = [text.message("stacking.interaction-alt", {"n": len(pairs), "k": len(ids)})]
    if pairs:
        low, high = min(pairs, key=lambda p: p[2]), max(pairs, key=lambda p: p[2])
        params = {
            "low": data.names(text, low[:2]),
            "low_value": low[2],
            "high": data.names(text, high[:2]),
            "high_value": high[2],
        }
        alt.append(text.message("stacking.interaction-alt-extremes", params))
    return Chart(
        name=INTERACTION,
        caption=text.message("stacking.interaction-caption"),
        alt=" ".join(alt),
        key=chart_key(INTERACTION, lang, _inputs(result, text), domains=DOMAINS),
        draw=lambda: _draw_interaction(result, text, lang),
    )


def _inputs(result: Result, text: data.StudyText) -> str:
    """What a chart is drawn from: the result and the terms that name its elements."""
    return json.dumps([result, text.terms], sort_keys=True)


def stacking_charts(
    result: Result, lang: str, terms: Mapping[str, str] | None = None
) -> list[Chart]:
    """The charts of the stacking page in ``lang``, not drawn yet (none that has no data)."""
    charts = (pareto_chart(result, lang, terms), interaction_chart(result, lang, terms))
    return [c for c in charts if c]
