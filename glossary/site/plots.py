"""The chart of a technique page, drawn at build time from its result, one SVG per language.

:func:`result_chart` plots the quality ratio of every configuration against its speedup (or,
when only one of them was measured, a dot plot of it), with the 95% intervals the result has and
the limit of the headline speedup drawn as a line, solid for an analytic bound and dashed for an
estimate. The comparison page's charts are :mod:`glossary.site.compareplots`.

A :class:`Chart` carries its caption (what the axes, rows and lines show) and its alt text (what
the figure shows), in the page's language from the ``results`` catalog with numbers formatted
for the locale; the title, axis labels and legend inside the SVG come from the same messages.
Drawing is deferred (:attr:`Chart.draw`) and keyed (:attr:`Chart.key`: a hash of everything the
drawing depends on), so that an unchanged chart is not drawn again (:meth:`Chart.rendered`).
Drawing is :mod:`glossary.site.plotdraw`; what is drawn, :mod:`glossary.site.plotdata`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Any

from glossary.resulttext import ResultText, catalog_path
from glossary.site import plotdraw as draw
from glossary.site.plotdata import (
    Limit,
    Point,
    chart_kind,
    needs_log,
    quality_metric,
    result_limit,
    row_points,
)
from glossary.site.results import Result

ROLES = ("baseline", "technique", "control", "reference")
_CODE = (
    "plotdraw.py",
    "plots.py",
    "compareplots.py",
    "plotdata.py",
    "stackplots.py",
    "stackdata.py",
    "benchfigures.py",
)


@dataclass(frozen=True)
class Chart:
    """One chart: its file name (without language), caption, alt text and how to draw it."""

    name: str
    caption: str
    alt: str
    key: str
    draw: Callable[[], bytes] = field(compare=False, repr=False)
    svg: bytes = b""

    def rendered(self, existing: bytes | None = None) -> Chart:
        """This chart with its SVG: ``existing`` when that was drawn from the same inputs
        (it carries this chart's key), else drawn now."""
        mark = f"<!-- glossary chart {self.key} -->".encode()
        if existing is not None and mark in existing[:500]:
            return replace(self, svg=existing)
        head, _, rest = self.draw().partition(b"\n")
        return replace(self, svg=head + b"\n" + mark + b"\n" + rest)

    def size(self) -> tuple[int, int]:
        """Width and height in CSS pixels, from the SVG's ``pt`` size (0, 0 before drawing)."""
        head = self.svg[:2000].decode("utf-8", "replace")
        found = re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', head)
        if not found:
            return (0, 0)
        return (round(float(found[1]) * 4 / 3), round(float(found[2]) * 4 / 3))


@cache
def _code_fingerprint() -> bytes:
    from importlib.metadata import version

    folder = Path(__file__).resolve().parent
    sources = b"".join((folder / name).read_bytes() for name in _CODE)
    return version("matplotlib").encode() + sources


def chart_key(name: str, lang: str, *inputs: Any, domains: tuple[str, ...] = ()) -> str:
    """A hash of what a chart depends on: the drawing code, matplotlib's version, the chart's
    inputs and the catalogs its words come from."""
    digest = hashlib.sha256(_code_fingerprint())
    digest.update(f"{name}\0{lang}\0{inputs!r}".encode())
    for domain in domains:
        path = catalog_path(domain, lang)
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()[:20]


def _better(text: ResultText, result: Result, metric: str) -> str:
    better = result["metrics"][metric]["better"]
    return text.message("plot.lower-better" if better == "lower" else "plot.higher-better")


def _headline_alt(text: ResultText, points: list[Point]) -> list[str]:
    head = next((p for p in points if p.headline), None)
    if head is None:
        return []
    params = {"row": head.label, "speedup": head.speedup, "ratio": head.quality}
    if head.speedup is not None and head.quality is not None:
        return [text.message("plot.alt-headline-both", params)]
    if head.speedup is not None:
        return [text.message("plot.alt-headline-speedup", params)]
    return [text.message("plot.alt-headline-quality", params)]


def _legend(text: ResultText, points: list[Point], limit: Limit | None) -> list[Any]:
    roles = [r for r in ROLES if any(p.role == r for p in points)]
    handles = [draw.legend_marker(text.role(r), r) for r in roles]
    if any(p.headline for p in points):
        label = text.message("plot.legend-headline")
        handles.append(draw.legend_marker(label, "technique", headline=True))
    if limit is not None:
        label = text.message(f"plot.legend-limit-{limit.kind}", {"limit": limit.value})
        handles.append(draw.legend_line(label, draw.limit_style(limit)))
    return handles


def _quality_label(text: ResultText, result: Result) -> str:
    metric = quality_metric(result) or ""
    return text.message("plot.axis-quality", {"metric": text.metric(metric)})


def _draw_scatter(result: Result, text: ResultText, points: list[Point], lang: str) -> bytes:
    limit = result_limit(result)
    xs = [p.speedup for p in points if p.speedup] + ([limit.value] if limit else [])
    ys = [p.quality for p in points if p.quality]
    with draw.figure(5.2) as (fig, ax):
        draw.scatter(ax, points)
        if limit:
            draw.limit_line(ax, limit)
        if needs_log(xs):
            draw.log_axis(ax, "x", xs)
        if needs_log(ys):
            draw.log_axis(ax, "y", ys)
        draw.locale_axis(ax.xaxis, lang, "×")
        draw.locale_axis(ax.yaxis, lang)
        draw.title(fig, text.title())
        draw.labels(ax, text.message("plot.axis-speedup"), _quality_label(text, result))
        draw.legend(fig, _legend(text, points, limit))
        ordered = sorted(points, key=lambda p: not p.headline)
        draw.place_labels(fig, ax, [(p.speedup or 0.0, p.quality or 0.0, p.label) for p in ordered])
        return draw.to_svg(fig)


def _draw_rows(
    result: Result, text: ResultText, points: list[Point], lang: str, value: str
) -> bytes:
    limit = result_limit(result) if value == "speedup" else None
    xs = [getattr(p, value) for p in points] + ([limit.value] if limit else [])
    with draw.figure(draw.rows_height(points)) as (fig, ax):
        draw.rows(ax, points, value)
        ax.axvline(1.0, color=draw.FOREGROUND, linewidth=0.8, zorder=1)
        if limit:
            draw.limit_line(ax, limit)
        if needs_log(xs):
            draw.log_axis(ax, "x", [*xs, 1.0])
        draw.locale_axis(ax.xaxis, lang, "×" if value == "speedup" else "")
        draw.title(fig, text.title())
        if value == "speedup":
            draw.labels(ax, text.message("plot.axis-speedup"))
        else:
            draw.labels(ax, _quality_label(text, result))
        draw.legend(fig, _legend(text, points, limit))
        return draw.to_svg(fig)


def _caption(result: Result, text: ResultText, kind: str, points: list[Point]) -> str:
    metric = quality_metric(result)
    params = {"metric": text.metric(metric) if metric else "", "better": ""}
    if metric:
        params["better"] = _better(text, result, metric)
    sentences = [text.message(f"plot.caption-{kind}", params)]
    head = next((p for p in points if p.headline), None)
    if head is not None:
        sentences.append(text.message("plot.caption-headline", {"row": head.label}))
    limit = result_limit(result) if kind != "quality-rows" else None
    if limit is not None:
        sentences.append(text.message(f"plot.caption-limit-{limit.kind}", {"limit": limit.value}))
    if kind == "scatter":
        sentences.append(text.message("plot.caption-labels"))
    return " ".join(sentences)


def _alt(result: Result, text: ResultText, kind: str, points: list[Point]) -> str:
    metric = quality_metric(result)
    params = {"n": len(points), "metric": text.metric(metric) if metric else ""}
    sentences = [text.message(f"plot.alt-{kind}", params), *_headline_alt(text, points)]
    limit = result_limit(result) if kind != "quality-rows" else None
    if limit is not None:
        sentences.append(text.message(f"plot.alt-limit-{limit.kind}", {"limit": limit.value}))
    return " ".join(sentences)


def result_chart(result: Result, lang: str) -> Chart | None:
    """The chart of one result in ``lang`` (not drawn yet: see :meth:`Chart.rendered`), or
    ``None`` when the result measured neither a speedup nor its quality metric."""
    text = ResultText(result["slug"], lang)
    labels = {row["id"]: text.config(row["config"]) for row in result["rows"]}
    points = row_points(result, labels)
    kind = chart_kind(points)
    if kind is None:
        return None
    if kind == "scatter":
        shown = [p for p in points if p.speedup is not None and p.quality is not None]
        drawing = partial(_draw_scatter, result, text, shown, lang)
    else:  # the baseline is the line at 1; its rows would only repeat it
        shown = [p for p in points if getattr(p, kind) is not None and p.role != "baseline"]
        drawing = partial(_draw_rows, result, text, shown, lang, kind)
    kind_id = {"scatter": "scatter", "speedup": "speedup-rows", "quality": "quality-rows"}[kind]
    data = json.dumps(result, sort_keys=True)
    return Chart(
        name=result["slug"],
        caption=_caption(result, text, kind_id, shown),
        alt=_alt(result, text, kind_id, shown),
        key=chart_key(result["slug"], lang, data, domains=(result["slug"], "results")),
        draw=drawing,
    )
