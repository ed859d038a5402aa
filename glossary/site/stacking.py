"""The stacking page of each language, and the stacks a technique page lists.

``<lang>/stacking.md`` is always generated (the navigation names it). Without
``stacking.json`` it says that the study is not measured yet; with it, in order:

1. an introduction: the levels a technique acts at, the one order they compose in (model ->
   network -> caching -> guidance -> forecasting -> sampler), the study's techniques by level
   and what the interaction factor means;
2. the short answer, one sentence per quality budget (``settings.budgets``): the fastest
   measured stack of two or more techniques whose FDD ratio is within it, and the fastest
   single technique for comparison;
3. the two charts of :mod:`glossary.site.stackplots` (Pareto, interaction heat map);
4. a sortable table of every pair and stack: members (linked to their term pages), speedup,
   FDD ratio and interaction factor with their 95% intervals, the matched-latency DDIM control
   and whether the stack beat it (its ``beats-control`` aims); each row has the anchor
   ``stack-<row id>`` (:func:`glossary.site.stackdata.anchor`) that technique pages link to;
5. the compatibility matrix, ✓ or ✗ with the numbered one-line reason;
6. the notes, the other aims and the provenance, as on a technique page
   (:mod:`glossary.site.benchmark`).

Words come from ``ResultText("stacking", lang)``: the study's own catalog
(``reference/stacking/locale``: ``element.*``, ``level.*``, ``reason.*``, ``config.*``) and the
shared ``results`` catalog (the page's own ``stacking.*`` messages); numbers are formatted for
the locale.
"""

from __future__ import annotations

from typing import Any

from glossary.resulttext import ResultText
from glossary.site import stackdata as data
from glossary.site.benchmark import aims_table, provenance
from glossary.site.context import Context
from glossary.site.figures import asset_href, chart_figure, chart_path
from glossary.site.formatting import number, ratio, ratio_interval, ratio_with, times
from glossary.site.markdown import escape_markdown, escape_text, heading, html_attr
from glossary.site.results import Result
from glossary.site.urls import relative_href

PAGE = "stacking"
LEVELS = ("model", "network", "caching", "guidance", "forecasting", "sampler")
"""The order stacked techniques are applied in (``reference.compatibility.LEVELS`` without the
runtimes, which compose with nothing)."""
COMMAND = ".venv/bin/glossary bench stacking"
VERDICT_RANK = {"yes": 3, "inconclusive": 2, "no": 1, "none": 0}
COMPATIBLE, INCOMPATIBLE = "✓", "✗"
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def composite(ctx: Context) -> Result | None:
    """The stacking study's result, if it was measured."""
    return ctx.results.composites.get(data.SLUG)


def element_terms(result: Result | None, lang: str, ctx: Context) -> dict[str, str]:
    """Each element's glossary term in ``lang`` (elements without an entry are left out)."""
    terms: dict[str, str] = {}
    for element in data.elements(result) if result else []:
        slug = data.element_slug(result, element) if result else None
        entry = ctx.glossary.get(slug) if slug else None
        if entry is not None:
            terms[element] = entry.term(lang)
    return terms


def study_text(lang: str, ctx: Context) -> data.StudyText:
    """The study's words in ``lang``, naming each element by its entry's term."""
    return data.StudyText(lang, element_terms(composite(ctx), lang, ctx))


def _term_slug(result: Result, element: str, ctx: Context) -> str | None:
    """The glossary slug of ``element`` when it has a term page (``torch-compile`` has none)."""
    slug = data.element_slug(result, element)
    if slug is None or slug in data.NO_TERM_PAGE or ctx.glossary.get(slug) is None:
        return None
    return slug


def _markdown_names(result: Result, text: ResultText, ids: list[str], ctx: Context) -> str:
    """Element names joined by `` + ``, each a Markdown link to its term page where it has one."""
    parts = []
    for element in ids:
        shown, slug = escape_text(data.name(text, element)), _term_slug(result, element, ctx)
        parts.append(f"[{shown}](terms/{slug}.md)" if slug else shown)
    return " + ".join(parts)


def _html_names(result: Result, text: ResultText, ids: list[str], lang: str, ctx: Context) -> str:
    """The same, as HTML for the table (MkDocs does not rewrite links inside raw HTML)."""
    parts = []
    for element in ids:
        shown, slug = html_attr(data.name(text, element)), _term_slug(result, element, ctx)
        if slug:
            href = relative_href(PAGE, f"terms/{slug}", lang, ctx.use_directory_urls)
            shown = f'<a href="{href}">{shown}</a>'
        parts.append(shown)
    return " + ".join(parts)


def _times(value: float | None, span: data.Span | None, lang: str) -> str:
    """``6,10× [5,70–6,50]``: three significant figures (``—`` when not measured)."""
    return times(value, span, lang)


def _ratio(value: float | None, span: data.Span | None, lang: str) -> str:
    """``0,800 [0,740–0,870]``: three significant figures (``—`` when not measured)."""
    return ratio_with(value, span, lang)


# ----------------------------------------------------------------------------- introduction


def intro(text: ResultText) -> list[str]:
    """What stacking is, the order of the levels and what the interaction factor means."""
    levels = " → ".join(text.message(f"level.{level}") for level in LEVELS)
    return [
        "# " + text.message("stacking.title"),
        "",
        text.message("stacking.intro", {"levels": levels}),
        "",
        text.message("stacking.interaction-definition"),
        "",
    ]


def elements_by_level(result: Result, text: ResultText, ctx: Context) -> list[str]:
    """The study's techniques, grouped by the level they act at, in composition order."""
    levels = result["settings"].get("element_levels", [])
    ids = data.elements(result)
    lines = [text.message("stacking.elements-intro"), ""]
    order = [lv for lv in LEVELS if lv in levels] + [lv for lv in levels if lv not in LEVELS]
    for level in dict.fromkeys(order):
        here = [e for e, lv in zip(ids, levels, strict=False) if lv == level]
        shown = ", ".join(_markdown_names(result, text, [e], ctx) for e in here)
        lines.append(f"- **{escape_text(text.message(f'level.{level}'))}**: {shown}")
    return [*lines, ""]


# ----------------------------------------------------------------------------- short answer


def answer(result: Result, budget: float, text: ResultText, lang: str) -> str:
    """The short answer for one quality budget, a Markdown sentence or two."""
    params: dict[str, Any] = {"budget": budget, "percent": (budget - 1) * 100}
    best = data.fastest_within(result, budget)
    if best is None:
        sentence = text.message("stacking.answer-none", params)
    else:
        params["members"] = f"[{escape_text(data.label(text, best))}](#{data.anchor(best['id'])})"
        params["speedup"] = _times(data.value(best, "speedup"), data.span(best, "speedup"), lang)
        params["ratio"] = _ratio(data.value(best, "fd_ratio"), data.span(best, "fd_ratio"), lang)
        sentence = text.message("stacking.answer-within", params)
    single = data.fastest_single_within(result, budget)
    if single is not None:
        speed = _times(data.value(single, "speedup"), data.span(single, "speedup"), lang)
        more = {"name": escape_text(data.label(text, single)), "speedup": speed}
        sentence += " " + text.message("stacking.answer-single", more)
    return sentence


def short_answer(result: Result, text: ResultText, lang: str) -> list[str]:
    """One answer per budget, then the greedy search's path."""
    lines = [heading(2, text.message("stacking.answer-title"), "answer"), ""]
    lines += [f"- {answer(result, b, text, lang)}" for b in data.budgets(result)]
    lines.append("")
    stages = [data.row_by_id(result, r) for r in result["settings"].get("greedy", [])]
    path = " → ".join(escape_text(data.label(text, r)) for r in stages if r is not None)
    if path:
        lines += [text.message("stacking.greedy", {"path": path}), ""]
    return lines


# ------------------------------------------------------------------------------ the table


def _td(shown: str, sort: object = None, numeric: bool = False) -> str:
    key = "" if sort is None else html_attr(str(sort))
    align = ' class="gl-num"' if numeric else ""
    return f'<td data-sort="{key}"{align}>{shown}</td>'


def _measured_td(row: data.Row, key: str, lang: str, suffix: str = "") -> str:
    found = data.value(row, key)
    if found is None:
        return _td(number(None, lang), numeric=True)
    shown = html_attr(ratio(found, lang) + suffix)
    detail = ratio_interval(data.span(row, key), lang).strip()
    if detail:
        shown += f'<br><span class="gl-detail">{html_attr(detail)}</span>'
    return _td(shown, found, numeric=True)


def _quality_td(result: Result, row: data.Row, text: ResultText, lang: str) -> str:
    """The FDD ratio; for a row whose quality is inherited from the same stack without its exact
    elements (fusion, compilation), which row it is."""
    cell = _measured_td(row, "fd_ratio", lang)
    parent = data.row_by_id(result, row.get("config", {}).get("quality_of"))
    if parent is None:
        return cell
    shown = text.message("stacking.inherited", {"parent": data.label(text, parent)})
    return cell.replace("</td>", f'<br><span class="gl-detail">{html_attr(shown)}</span></td>')


def _control_td(result: Result, row: data.Row, text: ResultText, lang: str) -> str:
    control = data.control_of(result, row)
    if control is None:
        return _td(number(None, lang))
    shown = html_attr(text.config(control["config"]))
    found = data.value(row, "control_latency_ratio")
    if found is not None:
        detail = f"{text.metric('control_latency_ratio')}: {ratio(found, lang)}"
        shown += f'<br><span class="gl-detail">{html_attr(detail)}</span>'
    return _td(shown, text.config(control["config"]))


def _verdict_td(result: Result, row: data.Row, text: ResultText) -> str:
    verdict = data.beats_control(result, row)
    shown = "—" if verdict == "none" else html_attr(text.message(f"site.control-{verdict}"))
    return _td(f'<span data-verdict="{verdict}">{shown}</span>', VERDICT_RANK[verdict])


def table_row_html(result: Result, row: data.Row, lang: str, ctx: Context) -> str:
    """One ``<tr>`` of the table of stacks, with its anchor."""
    text = study_text(lang, ctx)
    cells = [
        _td(_html_names(result, text, data.members(row), lang, ctx), data.label(text, row)),
        _measured_td(row, "speedup", lang, "×"),
        _quality_td(result, row, text, lang),
        _measured_td(row, "interaction", lang),
        _control_td(result, row, text, lang),
        _verdict_td(result, row, text),
    ]
    return f'<tr id="{data.anchor(row["id"])}">' + "".join(cells) + "</tr>"


def table_head(text: ResultText) -> str:
    """The header row; the rows start sorted by speedup, fastest first."""
    columns = [
        ("stacking.col-stack", "text"),
        ("site.speedup-interval", "number"),
        ("stacking.col-quality", "number"),
        ("stacking.col-interaction", "number"),
        ("stacking.col-control", "text"),
        ("stacking.col-beats", "number"),
    ]
    cells = []
    for msgid, kind in columns:
        now = ' aria-sort="descending"' if msgid == "site.speedup-interval" else ""
        label = html_attr(text.message(msgid))
        cells.append(f'<th scope="col" data-sort-type="{kind}"{now}>{label}</th>')
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def stacks_table(result: Result, text: ResultText, lang: str, ctx: Context) -> list[str]:
    """Every measured pair and stack, fastest first, with a line on how to read it."""
    lines = [heading(2, text.message("stacking.table-title"), "stacks"), ""]
    rows = sorted(data.stack_rows(result), key=lambda r: -(data.value(r, "speedup") or 0.0))
    if not rows:
        return [*lines, text.message("stacking.no-stacks"), ""]
    lines += [text.message("stacking.table-legend"), ""]
    body = [table_row_html(result, row, lang, ctx) for row in rows]
    head = "<table data-sortable>" + table_head(text) + "<tbody>"
    return [*lines, head, *body, "</tbody></table>", ""]


# ------------------------------------------------------------------- compatibility matrix


def _reason_letters(result: Result) -> dict[str, str]:
    """A letter for each reason id the matrix uses, in the order they first appear."""
    found = [r for line in data.matrix(result, "reasons") for r in line if isinstance(r, str)]
    return {reason: LETTERS[i % len(LETTERS)] for i, reason in enumerate(dict.fromkeys(found))}


def _matrix_cell(i: int, j: int, compatible: Any, reason: Any, letters: dict[str, str]) -> str:
    if i == j:
        return "—"
    if compatible is False:
        return f"{INCOMPATIBLE} {letters[reason]}" if reason in letters else INCOMPATIBLE
    return COMPATIBLE if compatible is True else "—"


def _matrix_html(names: list[str], cells: list[list[str]]) -> list[str]:
    """The matrix as an HTML table: numbered columns (each naming its technique in a tooltip),
    one row per technique headed by its number and name."""
    head = "".join(
        f'<th scope="col"><abbr title="{html_attr(name)}">{i}</abbr></th>'
        for i, name in enumerate(names, 1)
    )
    rows = [
        f'<tr><th scope="row">{i} {html_attr(name)}</th>'
        + "".join(f"<td>{cell}</td>" for cell in line)
        + "</tr>"
        for i, (name, line) in enumerate(zip(names, cells, strict=True), 1)
    ]
    return [f"<table data-matrix><thead><tr><td></td>{head}</tr></thead><tbody>", *rows]


def compatibility(result: Result, text: ResultText) -> list[str]:
    """The N x N matrix of which techniques combine, and each ✗'s reason below it."""
    ids = data.elements(result)
    if not ids:
        return []
    names = [data.name(text, e) for e in ids]
    compatible, reasons = data.matrix(result, "compatible"), data.matrix(result, "reasons")
    letters = _reason_letters(result)
    lines = [heading(2, text.message("stacking.compat-title"), "compatibility"), ""]
    lines += [text.message("stacking.compat-legend"), ""]
    cells = [
        [_matrix_cell(i, j, compatible[i][j], reasons[i][j], letters) for j in range(len(ids))]
        for i in range(len(ids))
    ]
    lines += [*_matrix_html(names, cells), "</tbody></table>", ""]
    for reason, letter in letters.items():
        pairs = [
            f"{names[i]} × {names[j]}"
            for i in range(len(ids))
            for j in range(i + 1, len(ids))
            if reasons[i][j] == reason
        ]
        line = escape_text(text.message(f"reason.{reason}"))
        lines.append(f"- **{letter}**: {line} ({escape_text('; '.join(pairs))})")
    return [*lines, ""] if letters else lines


# ------------------------------------------------------------------ measurement details


def _listed_settings(result: Result) -> Result:
    """The result with its matrices left out of the settings line (the charts and the
    compatibility matrix show them)."""
    settings = {
        k: v
        for k, v in result["settings"].items()
        if not (isinstance(v, list) and any(isinstance(x, list) for x in v))
    }
    return {**result, "settings": settings}


def details(result: Result, text: ResultText, lang: str) -> list[str]:
    """The notes, the aims other than the per-stack control verdicts, and the provenance."""
    lines = [heading(2, text.message("stacking.details-title"), "measurement"), ""]
    if result["notes"]:
        lines += [f"- {escape_markdown(text.note(n))}" for n in result["notes"]] + [""]
    others = [a for a in result["aims"] if a["id"] != "beats-control"]
    lines += aims_table({**result, "aims": others}, text, lang)
    lines += provenance(_listed_settings(result), text, lang)
    return [*lines, text.message("site.reproduce") + f": `{COMMAND}`", ""]


# ----------------------------------------------------------------------------------- pages


def _charts(lang: str, ctx: Context, names: tuple[str, ...]) -> list[str]:
    lines = []
    for chart in ctx.charts.get((PAGE, lang), []):
        if chart.name in names:
            href = asset_href(PAGE, lang, chart_path(chart, lang), ctx.use_directory_urls)
            lines += chart_figure(chart, href)
    return lines


def _chart_section(text: ResultText, lang: str, ctx: Context, name: str, anchor: str) -> list[str]:
    shown = _charts(lang, ctx, (name,))
    if not shown:
        return []
    return [heading(2, text.message(f"stacking.{anchor}-title"), anchor), "", *shown]


def stacking_page(lang: str, ctx: Context) -> str:
    """The Markdown of ``<lang>/stacking.md``."""
    from glossary.site.stackplots import INTERACTION, PARETO

    text = study_text(lang, ctx)
    lines = intro(text)
    result = composite(ctx)
    if result is None:
        lines += [text.message("stacking.not-measured", {"command": COMMAND}), ""]
        return "\n".join(lines).rstrip() + "\n"
    lines += elements_by_level(result, text, ctx)
    lines += short_answer(result, text, lang)
    lines += _chart_section(text, lang, ctx, PARETO, "pareto")
    lines += _chart_section(text, lang, ctx, INTERACTION, "interaction")
    lines += stacks_table(result, text, lang, ctx)
    lines += compatibility(result, text)
    lines += details(result, text, lang)
    return "\n".join(lines).rstrip() + "\n"


def stack_section(slug: str, lang: str, ctx: Context) -> list[str]:
    """The "Stacks with this technique" section of a term page: every measured pair and stack
    that contains the technique, fastest first, each linked to its row on the stacking page;
    nothing when the technique is not an element of a measured study."""
    result = composite(ctx)
    element = data.element_of(result, slug) if result else None
    if result is None or element is None:
        return []
    text = study_text(lang, ctx)
    lines = [heading(2, text.message("site.stacks-title"), "stacks", searchable=False), ""]
    rows = [r for r in data.stack_rows(result) if element in data.members(r)]
    if not rows:
        return [*lines, text.message("stacking.stacks-none", {"link": "../stacking.md"}), ""]
    lines += [text.message("stacking.stacks-intro", {"link": "../stacking.md#stacks"}), ""]
    for row in sorted(rows, key=lambda r: -(data.value(r, "speedup") or 0.0)):
        shown = escape_text(data.label(text, row))
        speed = _times(data.value(row, "speedup"), data.span(row, "speedup"), lang)
        lines.append(f"- [{shown}](../stacking.md#{data.anchor(row['id'])}): {speed}")
    return [*lines, ""]
