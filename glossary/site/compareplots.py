"""The charts of the comparison page, one SVG per language.

Every point is one technique at the setting :mod:`glossary.site.picks` chooses (the rule the
page states), named by its entry's term:

* ``compare-quality``: quality ratio (up, lower is better) against speedup (across, higher is
  faster), with the 95% intervals the results have and a line from each point to its speedup
  limit (solid for an analytic bound, dotted for an estimate); every point carries a number and
  the caption keys the numbers to the techniques;
* ``compare-speedup``: one line per technique, fastest first: the speedup with its interval and
  the limit as a tick (thick: bound; thin: estimate); a speedup the result flags as above its
  bound is drawn as an anomaly;
* ``compare-memory``: one line per technique whose result states a memory ratio: how many times
  less memory it needs than its baseline (higher is better, as the speedup). The techniques whose
  purpose is memory (:data:`glossary.site.guide.GOALS`) are ranked here, not on the speed
  charts.

All three read the same direction: right is better. A caption names only what its chart draws
(the limits, the anomalies), and a technique that lacks a number is left out and named.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from glossary.resulttext import ResultText
from glossary.site import plotdraw as draw
from glossary.site.plotdata import Point, needs_log
from glossary.site.plots import Chart, chart_key

DOMAINS = ("results", "guide")


def _names(points: Sequence[Point]) -> str:
    return ", ".join(p.label for p in points)


def _key(points: Sequence[Point]) -> str:
    """``1 Feature Caching; 2 Network Pruning``: the numbers the quality chart draws."""
    return "; ".join(f"{i} {p.label}" for i, p in enumerate(points, 1))


def _legend(text: ResultText, points: Sequence[Point], *, ticks: bool) -> list[object]:
    handles: list[object] = [draw.legend_marker(text.message("plot.legend-technique"), "technique")]
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
        draw.title(fig, text.message("plot.compare-quality-title"))
        draw.labels(ax, text.message("plot.axis-speedup"), text.message("plot.axis-quality-ratio"))
        draw.legend(fig, _legend(text, points, ticks=False))
        items = [(p.speedup, p.quality, str(i)) for i, p in enumerate(points, 1)]
        draw.place_labels(fig, ax, items)  # type: ignore[arg-type]
        return draw.to_svg(fig)


def _rows_svg(text: ResultText, points: Sequence[Point], lang: str, value: str) -> bytes:
    """A dot plot of ``value`` (``speedup`` or ``memory``), one line per technique."""
    xs = [getattr(p, value) for p in points if getattr(p, value)]
    if value == "speedup":
        xs += [p.limit.value for p in points if p.limit]
    labelled = [p if not p.anomaly else replace(p, label=f"⚠ {p.label}") for p in points]
    with draw.figure(draw.rows_height(points)) as (fig, ax):
        draw.rows(ax, labelled, value)
        if value == "speedup":
            draw.limit_ticks(ax, points)
        ax.axvline(1.0, color=draw.FOREGROUND, linewidth=0.8, zorder=1)
        if needs_log([*xs, 1.0]):
            draw.log_axis(ax, "x", [*xs, 1.0])
        draw.locale_axis(ax.xaxis, lang, "×")
        draw.title(fig, text.message(f"plot.compare-{value}-title"))
        draw.labels(ax, text.message(f"plot.axis-{value}"))
        draw.legend(fig, _legend(text, points, ticks=True))
        return draw.to_svg(fig)


def _limits_caption(text: ResultText, points: Sequence[Point], part: str) -> list[str]:
    """The sentences on limits and anomalies, only for what the chart draws."""
    out = []
    if any(p.limit for p in points):
        out.append(text.message(f"plot.compare-{part}-limits"))
    if any(p.anomaly for p in points):
        out.append(text.message(f"plot.compare-{part}-anomaly"))
    return out


def _left(text: ResultText, left: Sequence[Point], memory: Sequence[Point]) -> list[str]:
    out = []
    if left:
        out.append(text.message("plot.caption-compare-left-out", {"names": _names(left)}))
    if memory:
        out.append(text.message("plot.compare-memory-elsewhere", {"names": _names(memory)}))
    return out


def _quality_chart(
    text: ResultText, points: Sequence[Point], lang: str, memory: Sequence[Point]
) -> Chart:
    shown = [p for p in points if p.speedup is not None and p.quality is not None]
    left = [p for p in points if p not in shown]
    caption = [text.message("plot.compare-quality-caption")]
    caption += _limits_caption(text, shown, "quality")
    caption.append(text.message("plot.compare-key", {"key": _key(shown)}))
    caption += _left(text, left, memory)
    best = min(shown, key=lambda p: p.quality or 0.0)
    fastest = max(shown, key=lambda p: p.speedup or 0.0)
    params = {"fast": fastest.label, "speedup": fastest.speedup, "best": best.label}
    alt = [
        text.message("plot.alt-compare-quality", {"n": len(shown)}),
        text.message("plot.alt-compare-extremes", {**params, "ratio": best.quality}),
    ]
    return Chart(
        name="compare-quality",
        caption=" ".join(caption),
        alt=" ".join(alt),
        key=chart_key("compare-quality", lang, shown, domains=DOMAINS),
        draw=lambda: _quality_svg(text, shown, lang),
    )


def _speedup_chart(
    text: ResultText, points: Sequence[Point], lang: str, memory: Sequence[Point]
) -> Chart:
    shown = sorted((p for p in points if p.speedup is not None), key=lambda p: -(p.speedup or 0))
    left = [p for p in points if p.speedup is None]
    caption = [text.message("plot.compare-speedup-caption")]
    caption += _limits_caption(text, shown, "speedup")
    caption += _left(text, left, memory)
    anomalies = [p for p in shown if p.anomaly]
    alt = [text.message("plot.alt-compare-speedup", {"n": len(shown)})]
    if anomalies:
        params = {"n": len(anomalies), "names": _names(anomalies)}
        alt.append(text.message("plot.alt-anomalies", params))
    return Chart(
        name="compare-speedup",
        caption=" ".join(caption),
        alt=" ".join(alt),
        key=chart_key("compare-speedup", lang, shown, domains=DOMAINS),
        draw=lambda: _rows_svg(text, shown, lang, "speedup"),
    )


def _memory_chart(text: ResultText, points: Sequence[Point], lang: str) -> Chart:
    shown = sorted((p for p in points if p.memory is not None), key=lambda p: -(p.memory or 0))
    plain = [replace(p, limit=None, anomaly=False) for p in shown]
    best = shown[0]
    alt = [
        text.message("plot.compare-memory-alt", {"n": len(shown)}),
        text.message("plot.compare-memory-alt-best", {"name": best.label, "saving": best.memory}),
    ]
    return Chart(
        name="compare-memory",
        caption=text.message("plot.compare-memory-caption"),
        alt=" ".join(alt),
        key=chart_key("compare-memory", lang, plain, domains=DOMAINS),
        draw=lambda: _rows_svg(text, plain, lang, "memory"),
    )


def compare_charts(
    points: Sequence[Point], lang: str, memory_first: Collection[str] = ()
) -> list[Chart]:
    """The comparison charts of the techniques' picked ``points`` (alphabetical order) in
    ``lang``, not drawn yet; a chart with nothing to show is left out. The points whose key is
    in ``memory_first`` (techniques whose purpose is memory) are only on the memory chart."""
    text = ResultText("guide", lang)
    speed = [p for p in points if p.key not in memory_first]
    memory = [p for p in points if p.key in memory_first]
    charts = []
    if any(p.speedup is not None and p.quality is not None for p in speed):
        charts.append(_quality_chart(text, speed, lang, memory))
    if any(p.speedup is not None for p in speed):
        charts.append(_speedup_chart(text, speed, lang, memory))
    if any(p.memory is not None for p in points):
        charts.append(_memory_chart(text, points, lang))
    return charts
