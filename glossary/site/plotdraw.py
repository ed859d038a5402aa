"""Drawing the charts with matplotlib (Agg, no pyplot state), written as deterministic SVG.

One panel per figure, sized for a 720 px column and legible when scaled to a 390 px phone. Text
stays text (``svg.fonttype: none``), so a chart's words can be read, searched and tested; ticks
are formatted for the page's locale by Babel (``1,5×`` in es and ru, ``1.5×`` in en). The
background is transparent and text and axes are one dark grey; the site's stylesheet inverts
the chart (keeping hues) in Material's dark scheme. The same input gives the same bytes: the
SVG ids are salted with a constant (``svg.hashsalt``) and no date is written.

Every word is passed in by :mod:`glossary.site.plots`; nothing here is language-specific.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from contextlib import contextmanager
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from glossary.resulttext import format_number
from glossary.site.plotdata import Limit, Point

if TYPE_CHECKING:
    from collections.abc import Iterator

    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

FOREGROUND = "#333333"
GRID = "#d0d0d0"
LIMIT = "#009E73"
ANOMALY = "#D55E00"
ROLE_STYLE = {  # Okabe-Ito colours, distinguishable with colour-blindness; shapes as well
    "baseline": ("s", "#666666"),
    "technique": ("o", "#0072B2"),
    "control": ("^", "#E69F00"),
    "reference": ("D", "#CC79A7"),
}
# Drawn narrow with large type: on a 390 px phone the figure shows about 358 px wide, and the
# smallest text (MIN_FONT_PT, 9 pt of a 309.6 pt wide figure) stays above 10 CSS px there.
WIDTH_IN = 4.3
MIN_FONT_PT = 9
ROW_LABEL_WIDTH = 26
MIN_WRAP = 14
"""The narrowest an axis title is wrapped to (characters per line) to fit in its figure."""
TEXT_LINES = 8
"""Lines a title or an axis title may take: enough that none is cut with "…"."""
LABEL_LINES = 20
"""Lines a point's or a row's label may take: never cut (the longest configuration label of the
committed results wraps to 8 lines of `ROW_LABEL_WIDTH`)."""
RC = {
    "svg.hashsalt": "diffusion-efficiency-glossary",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 10,
    "text.color": FOREGROUND,
    "axes.edgecolor": FOREGROUND,
    "axes.labelcolor": FOREGROUND,
    "xtick.color": FOREGROUND,
    "ytick.color": FOREGROUND,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": MIN_FONT_PT,
    "legend.frameon": False,
}
_OFFSETS = tuple(  # label positions tried around a point, nearest first: dx, dy (points), ha, va
    (sx * dx, sy * dy, "left" if sx > 0 else "right", "bottom" if sy > 0 else "top")
    for dx, dy in ((6, 5), (14, 14), (24, 24), (36, 12), (12, 36), (48, 48))
    for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1))
)


def plain(text: str, width: int = 0, lines: int = 3) -> str:
    """Text that matplotlib shows as written (a ``$`` would start mathtext), wrapped at
    ``width`` characters into at most ``lines`` lines (``…`` marks a cut)."""
    import textwrap

    if width:
        text = "\n".join(textwrap.wrap(text, width, max_lines=lines, placeholder=" …"))
    return text.replace("$", r"\$")


@contextmanager
def figure(height_in: float) -> Iterator[tuple[Figure, Axes]]:
    """A one-panel figure with the chart style, closed with its rc settings afterwards."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(WIDTH_IN, height_in), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.set_facecolor("none")
        ax.grid(True, color=GRID, linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        yield fig, ax


def to_svg(fig: Figure) -> bytes:
    """The figure as SVG bytes, its texts fitted inside it first (:func:`fit`): transparent,
    no date, ids from the constant salt."""
    fit(fig)
    out = io.BytesIO()
    fig.savefig(out, format="svg", transparent=True, metadata={"Date": None})
    return out.getvalue()


def _outside(box: Bbox, frame: Bbox) -> bool:
    return (
        box.x0 < frame.x0 - 0.5
        or box.x1 > frame.x1 + 0.5
        or box.y0 < frame.y0 - 0.5
        or (box.y1 > frame.y1 + 0.5)
    )


def _rewrap(text: Any) -> bool:
    """Wrap ``text`` (a matplotlib Text) a few characters narrower; ``False`` at the minimum."""
    import textwrap

    words = " ".join(text.get_text().split())
    longest = max(len(line) for line in text.get_text().split("\n"))
    width = longest - 4
    if width < MIN_WRAP:
        return False
    text.set_text("\n".join(textwrap.wrap(words, width)))
    return True


def _crowded(labels: list[Any], renderer: Any) -> bool:
    """Whether two tick labels of one axis touch (they are in tick order)."""
    boxes = [t.get_window_extent(renderer) for t in labels if t.get_visible() and t.get_text()]
    return any(a.padded(1).overlaps(b.padded(1)) for a, b in pairwise(boxes))


def fit(fig: Figure) -> None:
    """Keep every axis title and the figure title inside the figure (wrapped narrower until
    they fit) and thin out tick labels that touch (every other tick), laying out again after
    each change: a reader never sees a cut or overlapping word."""
    from matplotlib.ticker import FixedLocator

    for _ in range(12):
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        frame = fig.bbox
        changed = False
        titles = [fig._suptitle] if fig._suptitle is not None else []  # type: ignore[attr-defined]
        for ax in fig.axes:
            titles += [ax.xaxis.label, ax.yaxis.label]
            for axis in (ax.xaxis, ax.yaxis):
                ticks = list(axis.get_majorticklocs())
                if len(ticks) > 2 and _crowded(axis.get_ticklabels(), renderer):
                    axis.set_major_locator(FixedLocator(ticks[::2]))
                    changed = True
        for text in titles:
            if text.get_text() and _outside(text.get_window_extent(renderer), frame):
                changed = _rewrap(text) or changed
        if not changed:
            return


def _nice_log_ticks(lo: float, hi: float) -> list[float]:
    for steps in ((1, 2, 3, 5), (1, 2, 5), (1, 3), (1,)):
        ticks = [
            s * 10.0**k
            for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
            for s in steps
            if lo <= s * 10.0**k <= hi
        ]
        if len(ticks) <= 7:
            return ticks if len(ticks) >= 2 else [lo, hi]
    return [lo, hi]


def locale_axis(axis: Axis, lang: str, suffix: str = "") -> None:
    """Tick labels of ``axis`` in the locale's digits, with ``suffix`` (``×``)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(
        FuncFormatter(lambda v, _pos: format_number(float(v), lang, ".3g") + suffix)
    )


def log_axis(ax: Axes, which: str, values: Sequence[float]) -> None:
    """Make ``which`` ('x' or 'y') logarithmic with a few round ticks spanning ``values``."""
    from matplotlib.ticker import FixedLocator, NullLocator

    lo, hi = min(values) / 1.15, max(values) * 1.15
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    (ax.set_xlim if which == "x" else ax.set_ylim)(lo, hi)
    axis.set_major_locator(FixedLocator(_nice_log_ticks(lo, hi)))
    axis.set_minor_locator(NullLocator())


def _err(value: float | None, span: tuple[float, float] | None) -> Any:
    if value is None or span is None:
        return None
    return [[max(0.0, value - span[0])], [max(0.0, span[1] - value)]]


def draw_point(ax: Axes, x: float, y: float, point: Point, *, xerr: Any, yerr: Any) -> None:
    """One marker in its role's shape and colour, larger and outlined for the headline."""
    marker, colour = ROLE_STYLE.get(point.role, ROLE_STYLE["technique"])
    if point.anomaly:
        colour = ANOMALY
    ax.errorbar(
        x,
        y,
        xerr=xerr,
        yerr=yerr,
        fmt=marker,
        color=colour,
        ecolor=colour,
        elinewidth=1,
        capsize=2.5,
        markersize=9 if point.headline else 6,
        markeredgecolor=FOREGROUND if point.headline else colour,
        markeredgewidth=1.2 if point.headline else 0.8,
        zorder=3 if point.headline else 2,
    )


def scatter(ax: Axes, points: Sequence[Point]) -> None:
    """Quality ratio (up) against speedup (across), with 95% intervals as bars."""
    for p in points:
        assert p.speedup is not None and p.quality is not None
        xerr, yerr = _err(p.speedup, p.speedup_interval), _err(p.quality, p.quality_interval)
        draw_point(ax, p.speedup, p.quality, p, xerr=xerr, yerr=yerr)


def rows(ax: Axes, points: Sequence[Point], value: str) -> None:
    """A dot plot: one line per point (top to bottom), its ``value`` ('speedup' or 'quality')
    across with its interval."""
    for i, p in enumerate(points):
        x = getattr(p, value)
        draw_point(ax, x, i, p, xerr=_err(x, getattr(p, f"{value}_interval")), yerr=None)
    shown = [plain(p.label, ROW_LABEL_WIDTH, LABEL_LINES) for p in points]  # wrapped, never cut
    ax.set_yticks(range(len(points)), shown, fontsize=MIN_FONT_PT)
    ax.set_ylim(len(points) - 0.5, -0.5)
    ax.grid(False, axis="y")


def limit_line(ax: Axes, limit: Limit) -> None:
    """The limit of the headline speedup as a vertical line: solid bound, dashed estimate."""
    ax.axvline(limit.value, color=LIMIT, linewidth=1.4, linestyle=limit_style(limit), zorder=1)


def limit_style(limit: Limit) -> str:
    """Solid for an analytic bound, dashed for an estimate."""
    return "-" if limit.kind == "bound" else "--"


def limit_segments(ax: Axes, points: Sequence[Point]) -> None:
    """For each point, a line from it to its own limit, ending in a tick."""
    for p in points:
        if p.limit is None or p.speedup is None or p.quality is None:
            continue
        style = limit_style(p.limit) if p.limit.kind == "bound" else ":"
        ax.plot([p.speedup, p.limit.value], [p.quality, p.quality], color=LIMIT, linestyle=style)
        ax.plot([p.limit.value], [p.quality], marker="|", markersize=10, color=LIMIT)


def limit_ticks(ax: Axes, points: Sequence[Point]) -> None:
    """In a dot plot, each point's limit as a tick on its line: thick bound, thin estimate."""
    for i, p in enumerate(points):
        if p.limit is not None:
            width = 2.6 if p.limit.kind == "bound" else 1.0
            ax.plot(
                [p.limit.value], [i], marker="|", markersize=13, mew=width, color=LIMIT, zorder=4
            )


def legend(fig: Figure, handles: list[Any]) -> None:
    """The legend below the panel, so that it never hides a point."""
    fig.legend(handles=handles, loc="outside lower center", ncols=1)


def legend_marker(label: str, role: str, *, headline: bool = False, colour: str = "") -> Any:
    """A legend entry showing a role's marker (or the headline's outlined one)."""
    from matplotlib.lines import Line2D

    marker, role_colour = ROLE_STYLE.get(role, ROLE_STYLE["technique"])
    return Line2D(
        [],
        [],
        linestyle="none",
        marker=marker,
        color=colour or role_colour,
        markersize=9 if headline else 6,
        markeredgecolor=FOREGROUND if headline else (colour or role_colour),
        label=plain(label, 34),
    )


def legend_line(label: str, style: str, marker: str = "", width: float = 1.0) -> Any:
    """A legend entry showing a limit: a line style, or a tick of some thickness."""
    from matplotlib.lines import Line2D

    return Line2D(
        [],
        [],
        color=LIMIT,
        linestyle=style,
        marker=marker,
        markersize=11,
        markeredgewidth=width,
        label=plain(label, 34),
    )


def rows_height(points: Sequence[Point]) -> float:
    """The height of a dot plot, in inches, that leaves room for each row's wrapped label."""
    import textwrap

    lines = max((len(textwrap.wrap(p.label, ROW_LABEL_WIDTH)) for p in points), default=1)
    return 1.9 + len(points) * (0.14 + 0.15 * min(lines, LABEL_LINES))


def title(fig: Figure, text: str) -> None:
    """The figure's title, wrapped to its width, never cut (:func:`fit` narrows it further)."""
    fig.suptitle(plain(text, 44, TEXT_LINES), fontsize=11)


def labels(ax: Axes, x: str, y: str = "") -> None:
    """Axis labels, wrapped to fit beside the panel, never cut."""
    ax.set_xlabel(plain(x, 46, TEXT_LINES))
    if y:
        ax.set_ylabel(plain(y, 34, TEXT_LINES))


def _box(ax: Axes, x: float, y: float) -> Bbox:
    from matplotlib.transforms import Bbox

    px, py = ax.transData.transform((x, y))
    return Bbox.from_extents(px - 6, py - 6, px + 6, py + 6)


def _label(
    ax: Axes, text: str, xy: tuple[float, float], offset: tuple[Any, ...], leader: bool
) -> Any:
    dx, dy, ha, va = offset
    arrow = {"arrowstyle": "-", "color": FOREGROUND, "linewidth": 0.5, "shrinkB": 5}
    note = ax.annotate(
        text,
        xy,
        xytext=(dx, dy),
        textcoords="offset points",
        ha=ha,
        va=va,
        fontsize=MIN_FONT_PT,
        annotation_clip=False,
        arrowprops=arrow if leader else None,
    )
    note.set_in_layout(False)
    return note


def place_labels(fig: Figure, ax: Axes, items: Sequence[tuple[float, float, str]]) -> int:
    """Write each ``(x, y, label)`` beside its point, joined to it by a thin leader, where it
    overlaps no other label or point and stays inside the panel; return how many found a place
    (the others are left out)."""
    fig.draw_without_rendering()  # lays the figure out, so that positions are final
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    frame = ax.get_window_extent(renderer)
    taken = [_box(ax, x, y) for x, y, _label in items]
    placed = 0
    for x, y, label in items:
        text = plain(label, 26, LABEL_LINES)  # a label that does not fit whole is left out
        for offset in _OFFSETS:
            probe = _label(ax, text, (x, y), offset, leader=False)
            box = probe.get_window_extent(renderer)
            probe.remove()
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0
            if inside and box.y1 <= frame.y1 and not any(box.overlaps(t) for t in taken):
                _label(ax, text, (x, y), offset, leader=True)
                taken.append(box.padded(2))
                placed += 1
                break
    return placed
