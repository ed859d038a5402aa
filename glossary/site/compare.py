"""The comparison page of each language: every technique's headline side by side.

A reading guide, two charts drawn at build time (:mod:`glossary.site.compareplots`) and one table
with a row per technique: category, speedup [95% interval], its limit (analytic bound or
estimate), quality ratio, the states of its aims, whether it beat its matched-cost control and a
flag where the speedup is above its limit. The table is plain HTML that works without
JavaScript; ``assets/javascripts/sortable-table.js`` turns each header with a ``data-sort-type``
into a sort button (``aria-sort`` on the sorted header) and sorts by each cell's ``data-sort``.

"Beats its matched-cost control" is read from the result, never guessed (:func:`beats_control`):
the verdict of the aims that compare the technique with a control row, or "no control measured"
when the result has no row in the ``control`` role.
"""

from __future__ import annotations

from typing import Literal

from glossary.model import Entry
from glossary.resulttext import ResultText
from glossary.schema import CATEGORIES
from glossary.site.context import Context
from glossary.site.figures import asset_href, chart_figure, chart_path
from glossary.site.formatting import Translate, interval, number, translator
from glossary.site.markdown import heading, html_attr
from glossary.site.plotdata import above_estimate, is_anomaly
from glossary.site.results import Result, aims_verdict
from glossary.site.urls import relative_href, sorted_entries, term_link

Verdict = Literal["yes", "no", "inconclusive", "unjudged", "none"]
VERDICT_RANK = {"yes": 4, "inconclusive": 3, "no": 2, "unjudged": 1, "none": 0}
STATES = ("met", "missed", "inconclusive")
PAGE = "compare"


def beats_control(result: Result) -> Verdict:
    """Whether the technique beat its matched-cost control, as the result's own aims say.

    The aims that count are those whose ``against`` names a row in the ``control`` role (result
    schema 3: every aim names the row it compares with). ``none``: the result has no
    ``control`` row. ``unjudged``: it has one, but no aim compares with it. Otherwise ``yes``
    when every such aim is met, ``no`` when every one is missed, and ``inconclusive`` for
    anything else (an inconclusive aim, or a met and a missed one).
    """
    controls = {row["id"] for row in result["rows"] if row["role"] == "control"}
    if not controls:
        return "none"
    states = [a["state"] for a in result["aims"] if a.get("against") in controls]
    if not states:
        return "unjudged"
    return aims_verdict(states)


def flag(result: Result) -> Literal["anomaly", "above-estimate"] | None:
    """``anomaly``: the result flags its speedup as above its analytic bound;
    ``above-estimate``: the speedup is above a limit that is only an estimate."""
    if is_anomaly(result):
        return "anomaly"
    return "above-estimate" if above_estimate(result) else None


def _cell(text: str, sort: object = None, numeric: bool = False) -> str:
    key = "" if sort is None else html_attr(str(sort))
    align = ' class="gl-num"' if numeric else ""
    return f'<td data-sort="{key}"{align}>{text}</td>'


def _two_lines(value: str, detail: str) -> str:
    """A value and, below it, its interval or kind (narrow columns)."""
    if not detail:
        return html_attr(value)
    return f'{html_attr(value)}<br><span class="gl-detail">{html_attr(detail)}</span>'


def _speed_cell(result: Result, lang: str) -> str:
    head = result["headline"] or {}
    value = head.get("speedup")
    if value is None:
        return _cell(number(None, lang), numeric=True)
    detail = interval(head.get("speedup_interval"), lang).strip()
    return _cell(_two_lines(number(value, lang, ".3g") + "×", detail), value, numeric=True)


def _limit_cell(result: Result, text: ResultText, lang: str) -> str:
    head = result["headline"] or {}
    value = head.get("speedup_limit")
    if value is None:
        return _cell(number(None, lang), numeric=True)
    kind = "site.limit-bound" if head.get("limit_kind") == "bound" else "site.limit-estimate"
    shown = _two_lines(number(value, lang, ".3g") + "×", text.message(kind))
    return _cell(shown, value, numeric=True)


def _quality_cell(result: Result, lang: str) -> str:
    head = result["headline"] or {}
    value = head.get("quality_ratio")
    detail = interval(head.get("quality_interval"), lang).strip()
    return _cell(_two_lines(number(value, lang, ".3g"), detail), value, numeric=True)


def _aims_cell(result: Result, text: ResultText) -> str:
    states = [a["state"] for a in result["aims"]]
    if not states:
        return _cell("—")
    parts = [text.message(f"site.aims-{s}", {"n": states.count(s)}) for s in STATES if s in states]
    shown = "<br>".join(html_attr(part) for part in parts)
    return _cell(shown, f"{states.count('met') / len(states):.3f}")


def _verdict_cell(result: Result, text: ResultText) -> str:
    verdict = beats_control(result)
    shown = html_attr(text.message(f"site.control-{verdict}"))
    return _cell(f'<span data-verdict="{verdict}">{shown}</span>', VERDICT_RANK[verdict])


def _flag_cell(result: Result, text: ResultText) -> str:
    found = flag(result)
    if found is None:
        return _cell("—", 0)
    shown = html_attr(text.message(f"site.flag-{found}"))
    return _cell(f'<span data-flag="{found}">{shown}</span>', 2 if found == "anomaly" else 1)


def table_row(entry: Entry, result: Result, lang: str, ctx: Context) -> str:
    """One ``<tr>`` of the comparison table."""
    text = ResultText(entry.slug, lang)
    href = relative_href(PAGE, f"terms/{entry.slug}", lang, ctx.use_directory_urls)
    term, category = html_attr(entry.term(lang)), html_attr(CATEGORIES[entry.category][lang])
    cells = [
        _cell(f'<a href="{href}">{term}</a>', entry.term(lang)),
        _cell(category, CATEGORIES[entry.category][lang]),
        _speed_cell(result, lang),
        _limit_cell(result, text, lang),
        _quality_cell(result, lang),
        _aims_cell(result, text),
        _verdict_cell(result, text),
        _flag_cell(result, text),
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def table_head(lang: str, _: Translate) -> str:
    """The header row: every column sorts (text by collation, the others by number)."""
    text = ResultText("results", lang)
    columns = [
        (_("Technique"), "text"),
        (text.message("site.category"), "text"),
        (text.message("site.speedup-interval"), "number"),
        (text.message("site.limit"), "number"),
        (text.message("site.quality-ratio"), "number"),
        (text.message("site.aims"), "number"),
        (text.message("site.beats-control"), "number"),
        (text.message("site.flag"), "number"),
    ]
    cells = []
    for i, (label, kind) in enumerate(columns):
        sorted_now = ' aria-sort="ascending"' if i == 0 else ""
        cells.append(f'<th scope="col" data-sort-type="{kind}"{sorted_now}>{html_attr(label)}</th>')
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def _charts(lang: str, ctx: Context) -> list[str]:
    lines = []
    for chart in ctx.charts.get((PAGE, lang), []):
        href = asset_href(PAGE, lang, chart_path(chart, lang), ctx.use_directory_urls)
        lines += chart_figure(chart, href)
    return lines


def compare_page(lang: str, ctx: Context) -> str:
    """The reading guide, the charts and the sortable table of every technique's headline."""
    _ = translator(lang)
    text = ResultText("results", lang)
    lines = ["# " + _("Comparison of techniques"), "", text.message("site.compare-intro"), ""]
    lines += [text.message("site.compare-guide"), ""]
    title = text.message("stacking.title")
    lines += [text.message("stacking.compare-link", {"link": f"[{title}](stacking.md)"}), ""]
    charts = _charts(lang, ctx)
    if charts:
        lines += [heading(2, text.message("site.compare-charts"), "charts"), "", *charts]
    rows, missing = [], []
    for entry in sorted_entries(ctx.glossary.techniques(), lang):
        result = ctx.results.by_slug.get(entry.slug)
        if result is None:
            missing.append(term_link(entry, lang, "terms/"))
        else:
            rows.append(table_row(entry, result, lang, ctx))
    lines += [heading(2, text.message("site.compare-table"), "table"), ""]
    if rows:
        head = "<table data-sortable>" + table_head(lang, _) + "<tbody>"
        lines += [head, *rows, "</tbody></table>", ""]
    if missing:
        lines += [_("No measured results yet") + ": " + ", ".join(missing) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"
