"""The two charts of the comparison page, one SVG per language.

* ``compare-quality``: each technique's headline quality ratio against its headline speedup,
  with the 95% intervals the results have, and a line from each point to its speedup limit
  (solid for an analytic bound, dotted for an estimate); points are named where they fit.
* ``compare-speedup``: one line per technique, fastest first: the headline speedup with its
  interval and the limit as a tick (thick: bound; thin: estimate); a speedup the result flags as
  above its bound is drawn as an anomaly.

A technique that lacks one of the numbers is left out of a chart and named in its caption.
"""

from __future__ import annotations

from collections.abc import Sequence

from glossary.resulttext import ResultText
from glossary.site import plotdraw as draw
from glossary.site.plotdata import Point, needs_log
from glossary.site.plots import Chart, chart_key


def _names(points: Sequence[Point]) -> str:
    return ", ".join(p.label for p in points)


def _legend(text: ResultText, points: Sequence[Point], *, ticks: bool) -> list[object]:
    handles: list[object] = [draw.legend_marker(text.message("plot.legend-headline"), "technique")]
    if any(p.anomaly for p in points):
        label = text.message("plot.legend-anomaly")
        handles.append(draw.legend_marker(label, "technique", colour=draw.ANOMALY))
    kinds = [k for k in ("bound", "estimate") if any(p.limit and p.limit.kind == k for p in points)]
    for kind in kinds:
        label = text.message(f"site.limit-{kind}")
        if ticks:
            width = 2.6 if kind == "bound" else 1.0
            handles.append(draw.legend_line(label, "none", marker="|", width=width))
        else:
            handles.append(draw.legend_line(label, "-" if kind == "bound" else ":", marker="|"))
    return handles


def _quality_svg(text: ResultText, points: Sequence[Point], lang: str) -> bytes:
    xs = [p.speedup for p in points if p.speedup] + [p.limit.value for p in points if p.limit]
    ys = [p.quality for p in points if p.quality]
    with draw.figure(5.2) as (fig, ax):
        draw.limit_segments(ax, points)
        draw.scatter(ax, points)
        ax.axhline(1.0, color=draw.FOREGROUND, linewidth=0.8, zorder=1)
        if needs_log(xs):
            draw.log_axis(ax, "x", xs)
        if needs_log(ys):
            draw.log_axis(ax, "y", [*ys, 1.0])
        draw.locale_axis(ax.xaxis, lang, "×")
        draw.locale_axis(ax.yaxis, lang)
        draw.title(fig, text.message("plot.title-compare-quality"))
        draw.labels(ax, text.message("plot.axis-speedup"), text.message("plot.axis-quality-ratio"))
        draw.legend(fig, _legend(text, points, ticks=False))
        items = [(p.speedup, p.quality, p.label) for p in points]
        draw.place_labels(fig, ax, items)  # type: ignore[arg-type]
        return draw.to_svg(fig)


def _speedup_svg(text: ResultText, points: Sequence[Point], lang: str) -> bytes:
    xs = [p.speedup for p in points if p.speedup] + [p.limit.value for p in points if p.limit]
    labelled = [p if not p.anomaly else _flagged(p) for p in points]
    with draw.figure(draw.rows_height(points)) as (fig, ax):
        draw.rows(ax, labelled, "speedup")
        draw.limit_ticks(ax, points)
        ax.axvline(1.0, color=draw.FOREGROUND, linewidth=0.8, zorder=1)
        if needs_log(xs):
            draw.log_axis(ax, "x", [*xs, 1.0])
        draw.locale_axis(ax.xaxis, lang, "×")
        draw.title(fig, text.message("plot.title-compare-speedup"))
        draw.labels(ax, text.message("plot.axis-speedup"))
        draw.legend(fig, _legend(text, points, ticks=True))
        return draw.to_svg(fig)


def _flagged(point: Point) -> Point:
    from dataclasses import replace

    return replace(point, label=f"⚠ {point.label}")


def _quality_chart(text: ResultText, points: Sequence[Point], lang: str) -> Chart:
    shown = [p for p in points if p.speedup is not None and p.quality is not None]
    left = [p for p in points if p not in shown]
    caption = [text.message("plot.caption-compare-quality")]
    if left:
        caption.append(text.message("plot.caption-compare-left-out", {"names": _names(left)}))
    best = min(shown, key=lambda p: p.quality or 0.0)
    fastest = max(shown, key=lambda p: p.speedup or 0.0)
    alt = [
        text.message("plot.alt-compare-quality", {"n": len(shown)}),
        text.message(
            "plot.alt-compare-extremes",
            {
                "fast": fastest.label,
                "speedup": fastest.speedup,
                "best": best.label,
                "ratio": best.quality,
            },
        ),
    ]
    return Chart(
        name="compare-quality",
        caption=" ".join(caption),
        alt=" ".join(alt),
        key=chart_key("compare-quality", lang, shown, domains=("results",)),
        draw=lambda: _quality_svg(text, shown, lang),
    )


def _speedup_chart(text: ResultText, points: Sequence[Point], lang: str) -> Chart:
    shown = sorted((p for p in points if p.speedup is not None), key=lambda p: -(p.speedup or 0))
    left = [p for p in points if p.speedup is None]
    caption = [text.message("plot.caption-compare-speedup")]
    if left:
        caption.append(text.message("plot.caption-compare-left-out", {"names": _names(left)}))
    anomalies = [p for p in shown if p.anomaly]
    alt = [text.message("plot.alt-compare-speedup", {"n": len(shown)})]
    if anomalies:
        params = {"n": len(anomalies), "names": _names(anomalies)}
        alt.append(text.message("plot.alt-anomalies", params))
    return Chart(
        name="compare-speedup",
        caption=" ".join(caption),
        alt=" ".join(alt),
        key=chart_key("compare-speedup", lang, shown, domains=("results",)),
        draw=lambda: _speedup_svg(text, shown, lang),
    )


def compare_charts(points: Sequence[Point], lang: str) -> list[Chart]:
    """The comparison charts of the techniques' headline ``points`` (alphabetical order) in
    ``lang``, not drawn yet; a chart with nothing to show is left out."""
    text = ResultText("results", lang)
    charts = []
    if any(p.speedup is not None and p.quality is not None for p in points):
        charts.append(_quality_chart(text, points, lang))
    if any(p.speedup is not None for p in points):
        charts.append(_speedup_chart(text, points, lang))
    return charts
