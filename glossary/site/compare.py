"""The comparison page of each language: every technique side by side, at one setting each.

A reading guide, the rule that picks each technique's setting (:mod:`glossary.site.picks`; the
page states it), the charts drawn at build time (:mod:`glossary.site.compareplots`: quality
against speedup, speedups, memory savings) and one table with a row per technique: its term and
category and picked setting (one cell, so that the table fits a 1366 px window in Russian),
speedup [95% interval], its limit (analytic bound or estimate, for the
benchmark's own headline setting), quality ratio on the metric the result declares, memory
saving, the states of its aims and whether it beat its matched-cost control; a speedup above its
limit is flagged in its own cell. The table is plain HTML that works without
JavaScript; ``assets/javascripts/tables.js`` turns each header with a ``data-sort-type``
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
from glossary.site import picks as rule
from glossary.site.context import Context
from glossary.site.figures import asset_href, chart_figure, chart_path
from glossary.site.formatting import Translate, number, ratio, ratio_interval, translator
from glossary.site.markdown import escape_text, heading, html_attr
from glossary.site.plotdata import Point, above_estimate, is_anomaly
from glossary.site.results import Result, aims_verdict
from glossary.site.studies import REALSHAPE, compare_links, realshape_cell
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


def _speed_cell(result: Result, p: rule.Pick, text: ResultText, lang: str) -> str:
    """The speedup, its interval and, below them, a flag where it is above its limit."""
    if p.speedup is None:
        return _cell(number(None, lang), numeric=True)
    detail = ratio_interval(p.speedup_interval, lang).strip()
    shown = _two_lines(ratio(p.speedup, lang) + "×", detail)
    found = flag(result) if p.limit is not None else None
    if found is not None:
        said = html_attr(text.message(f"site.flag-{found}"))
        shown += f'<br><span class="gl-detail" data-flag="{found}">{said}</span>'
    return _cell(shown, p.speedup, numeric=True)


def _limit_cell(p: rule.Pick, text: ResultText, lang: str) -> str:
    if p.limit is None:
        return _cell(number(None, lang), numeric=True)
    kind = "site.limit-bound" if p.limit.kind == "bound" else "site.limit-estimate"
    shown = _two_lines(ratio(p.limit.value, lang) + "×", text.message(kind))
    return _cell(shown, p.limit.value, numeric=True)


def _quality_cell(p: rule.Pick, lang: str) -> str:
    if p.quality is None:
        return _cell(number(None, lang), numeric=True)
    detail = ratio_interval(p.quality.interval, lang).strip()
    metric = ResultText(p.slug, lang).metric(p.quality.metric)
    detail = f"{detail} {metric}".strip()
    return _cell(_two_lines(ratio(p.quality.ratio, lang), detail), p.quality.ratio, numeric=True)


def _memory_cell(p: rule.Pick, lang: str) -> str:
    saving = p.memory_saving
    if saving is None:
        return _cell(number(None, lang), numeric=True)
    return _cell(html_attr(ratio(saving, lang) + "×"), saving, numeric=True)


def _realshape_cell(slug: str, lang: str, ctx: Context) -> str:
    found = realshape_cell(slug, lang, ctx)
    if found is None:
        return _cell(number(None, lang), numeric=True)
    value, detail, sort = found
    return _cell(_two_lines(value, detail), sort, numeric=True)


def _aims_cell(result: Result, text: ResultText) -> str:
    states = [a["state"] for a in result["aims"]]
    if not states:
        return _cell("—")
    parts = [text.message(f"site.aims-{s}", {"n": states.count(s)}) for s in STATES if s in states]
    shown = "<br>".join(html_attr(part) for part in parts)
    return _cell(shown, f"{states.count('met') / len(states):.3f}")


def _verdict_cell(result: Result, p: rule.Pick, text: ResultText) -> str:
    verdict: Verdict = rule.control_verdict(p) if p.controls else beats_control(result)
    shown = html_attr(text.message(f"site.control-{verdict}"))
    return _cell(f'<span data-verdict="{verdict}">{shown}</span>', VERDICT_RANK[verdict])


def table_row(entry: Entry, result: Result, lang: str, ctx: Context) -> str:
    """One ``<tr>`` of the comparison table (a result without a headline: its name only)."""
    text = ResultText(entry.slug, lang)
    href = relative_href(PAGE, f"terms/{entry.slug}", lang, ctx.use_directory_urls)
    term, category = html_attr(entry.term(lang)), html_attr(CATEGORIES[entry.category][lang])
    p = rule.pick(entry.slug, result, budgets(ctx)[0])
    name = f'<a href="{href}">{term}</a>'
    if p is None:  # no headline: nothing to pick, the aims still count
        empty = _cell(number(None, lang), numeric=True)
        verdict = _cell(html_attr(text.message(f"site.control-{beats_control(result)}")))
        head = _cell(f'{name}<br><span class="gl-detail">{category}</span>', entry.term(lang))
        real = _realshape_cell(entry.slug, lang, ctx)
        cells = [head, empty, real, empty * 3, _aims_cell(result, text), verdict]
        return "<tr>" + "".join(cells) + "</tr>"
    setting = html_attr(text.config(p.row["config"]))
    cells = [
        _cell(f'{name}<br><span class="gl-detail">{category} · {setting}</span>', entry.term(lang)),
        _speed_cell(result, p, text, lang),
        _realshape_cell(entry.slug, lang, ctx),
        _limit_cell(p, text, lang),
        _quality_cell(p, lang),
        _memory_cell(p, lang),
        _aims_cell(result, text),
        _verdict_cell(result, p, text),
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def budgets(ctx: Context) -> tuple[float, ...]:
    """The quality budgets the rule uses (:func:`glossary.site.guide.budgets`)."""
    from glossary.site.guide import budgets as found

    return found(ctx)


def chart_points(lang: str, ctx: Context) -> list[Point]:
    """One point per measured technique at its picked setting, named by its term, for the
    charts (alphabetical order). A quality ratio on a higher-is-better metric is drawn as its
    inverse, so that lower is better on the axis for every technique."""
    points = []
    for entry in sorted_entries(ctx.glossary.techniques(), lang):
        result = ctx.results.by_slug.get(entry.slug)
        p = rule.pick(entry.slug, result, budgets(ctx)[0]) if result else None
        if p is None:
            continue
        quality = span = None
        if p.quality is not None:
            quality, span = p.quality.ratio, p.quality.interval
            if p.quality.better == "higher" and quality > 0:
                quality = 1 / quality
                span = (1 / span[1], 1 / span[0]) if span and span[0] > 0 else None
        points.append(
            Point(
                key=entry.slug,
                label=entry.term(lang),
                role="technique",
                speedup=p.speedup,
                speedup_interval=p.speedup_interval,
                quality=quality,
                quality_interval=span,
                limit=p.limit,
                anomaly=p.anomaly,
                memory=p.memory_saving,
            )
        )
    return points


def memory_first(ctx: Context) -> set[str]:
    """The techniques whose purpose is memory: on the memory chart, not ranked by speed."""
    from glossary.site.guide import GOALS

    return set(GOALS["less-memory"])


def table_head(lang: str, _: Translate) -> str:
    """The header row: every column sorts (text by collation, the others by number)."""
    text = ResultText("results", lang)
    columns = [
        (_("Technique"), "text"),
        (text.message("site.speedup-interval"), "number"),
        (ResultText(REALSHAPE, lang).message("page.column"), "number"),
        (text.message("site.limit"), "number"),
        (text.message("site.quality-ratio"), "number"),
        (ResultText("guide", lang).message("compare.memory"), "number"),
        (text.message("site.aims"), "number"),
        (text.message("site.beats-control"), "number"),
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


def machines_note(ctx: Context, text: ResultText) -> list[str]:
    """Where the techniques' results come from more than one CPU model: which ones, and that a
    speedup is a ratio of timings of one run on one machine (each result records its own)."""
    cpus = sorted({r["provenance"]["cpu"] for r in ctx.results.by_slug.values()})
    if len(cpus) < 2:
        return []
    return [text.message("site.compare-machines", {"machines": escape_text(", ".join(cpus))}), ""]


def compare_page(lang: str, ctx: Context) -> str:
    """The reading guide, the charts and the sortable table of every technique's headline."""
    _ = translator(lang)
    text = ResultText("results", lang)
    words = ResultText("guide", lang)
    lines = ["# " + _("Comparison of techniques"), "", words.message("compare.intro"), ""]
    lines += [text.message("site.compare-guide"), "", *machines_note(ctx, text)]
    title = text.message("stacking.title")
    lines += [text.message("stacking.compare-link", {"link": f"[{title}](stacking.md)"}), ""]
    lines += compare_links(lang)
    guide = f"[{escape_text(words.message('guide.title'))}](guide.md)"
    lines += [words.message("compare.guide-link", {"link": guide}), ""]
    lines += [heading(2, words.message("guide.rule-title"), "rule"), ""]
    lines += [words.message("guide.rule", {"budget": ratio(budgets(ctx)[0], lang)}), ""]
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
