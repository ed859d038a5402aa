"""The measured part of a technique page, rendered from a language-neutral result file.

Every word shown here comes from the gettext catalogs through
:class:`glossary.resulttext.ResultText` (the technique's own catalog, then the shared ``results``
catalog), and every number is formatted for the page's locale by Babel. A summary table
(configuration, role, quality, speedup with its 95% interval beside the limit) comes first; the
full measurement table sits in a second content tab, so that the page never scrolls sideways for
the headline. The aims, notes and figures stay out of the search index (their headings say so):
a reader searches for techniques, not for the wording of a measurement's notes, and the index
every reader downloads stays small.
"""

from __future__ import annotations

import json
from typing import Any

from glossary.resulttext import ResultText
from glossary.site.formatting import format_date, interval, number, ratio, ratio_interval, times
from glossary.site.markdown import admonition, escape_markdown, escape_text, heading, table_row

ARROWS = {"lower": "↓", "higher": "↑"}


def metric_header(text: ResultText, key: str, meta: dict[str, Any]) -> str:
    """A metric's name, unit and the arrow of its better direction."""
    unit = text.unit(meta["unit"])
    label = escape_text(text.metric(key))
    arrow = ARROWS[meta["better"]]
    return f"{label} ({escape_text(unit)}) {arrow}" if unit else f"{label} {arrow}"


def _cell(row: dict[str, Any], key: str, lang: str, unit: str = "") -> str:
    """A measured value with its interval or spread; a ratio (unit ``x``) by the site's one
    precision rule (:func:`glossary.site.formatting.ratio`), as in the headline."""
    is_ratio = unit == "x" and row["values"].get(key) is not None
    value = ratio(row["values"][key], lang) if is_ratio else number(row["values"].get(key), lang)
    if key in row.get("intervals", {}):
        spans = row["intervals"][key]
        value += ratio_interval(spans, lang) if is_ratio else interval(spans, lang)
    elif key in row.get("spread", {}):
        value += " ± " + number(row["spread"][key], lang, ".2g")
    return value


def summary_table(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    """Configuration, role, the headline quality metric and the speedup with its interval."""
    metrics = result["metrics"]
    head = result["headline"] or {}
    keys = [k for k in (head.get("quality_metric"), "speedup") if k and k in metrics]
    if not keys:
        keys = list(metrics)[:2]
    header = [text.message("site.configuration"), text.message("site.role")]
    header += [metric_header(text, k, metrics[k]) for k in keys]
    lines = [table_row(header), "|---|---|" + "---:|" * len(keys)]
    for row in result["rows"]:
        cells = [escape_text(text.config(row["config"])), text.role(row["role"])]
        cells += [_cell(row, k, lang, metrics[k]["unit"]) for k in keys]
        lines.append(table_row(cells))
    return [*lines, ""]


def full_table(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    """Every metric of every row."""
    metrics = result["metrics"]
    header = [text.message("site.configuration"), text.message("site.role")]
    header += [metric_header(text, k, m) for k, m in metrics.items()]
    lines = [table_row(header), "|---|---|" + "---:|" * len(metrics)]
    for row in result["rows"]:
        cells = [escape_text(text.config(row["config"])), text.role(row["role"])]
        cells += [_cell(row, k, lang, metrics[k]["unit"]) for k in metrics]
        lines.append(table_row(cells))
    return [*lines, ""]


def headline_line(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    """Speedup [interval] (limit), memory and quality ratios, and the anomaly flags."""
    head = result["headline"]
    if not head:
        return []
    parts = []
    if head["speedup"] is not None:
        part = text.message("site.speedup") + f" **{ratio(head['speedup'], lang)}×**"
        part += ratio_interval(head["speedup_interval"], lang)
        if head["speedup_limit"] is not None:
            kind = "site.limit-bound" if head["limit_kind"] == "bound" else "site.limit-estimate"
            part += f" ({text.message(kind)} {times(head['speedup_limit'], None, lang)})"
        parts.append(part)
    if head["memory_ratio"] is not None:
        shown = ratio(head["memory_ratio"], lang)
        parts.append(text.message("site.memory-ratio") + f" **{shown}**")
    if head["quality_ratio"] is not None:
        shown = ratio(head["quality_ratio"], lang) + ratio_interval(head["quality_interval"], lang)
        metric = text.metric(head["quality_metric"]) if head["quality_metric"] else ""
        parts.append(text.message("site.quality-ratio") + f" **{shown}** ({metric})")
    lines = [" · ".join(parts), ""] if parts else []
    for anomaly in result["anomalies"]:
        lines += [admonition("danger", text.message("site.anomaly")), ""]
        lines += ["    " + escape_markdown(text.anomaly(anomaly)), ""]
    return lines


def aims_table(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    """Every aim: what it asks, the measured value [interval], the target and its state."""
    if not result["aims"]:
        return []
    symbols = {">=": "≥", "<=": "≤", ">": ">", "<": "<"}
    marks = {"met": "✓", "missed": "✗", "inconclusive": "?"}
    lines = [heading(3, text.message("site.aims"), "aims", searchable=False), ""]
    lines += [
        table_row(
            [
                text.message("site.aim"),
                text.message("site.measured"),
                text.message("site.target"),
                text.message("site.state"),
            ]
        ),
        "|---|---:|---:|---|",
    ]
    for a in result["aims"]:
        measured = number(a["measured"], lang, ".3g") + interval(a["interval"], lang)
        target = f"{symbols[a['comparison']]} {number(a['target'], lang, '.3g')}"
        state = f"{marks[a['state']]} {text.state(a['state'])}"
        lines.append(table_row([escape_text(text.aim(a)), measured, target, state]))
    return [*lines, ""]


def legend(text: ResultText) -> list[str]:
    """What the roles, the interval, the limit and the three aim states mean."""
    return [
        admonition("info", text.message("site.legend-title")),
        "",
        "    " + text.message("site.legend"),
        "",
    ]


def provenance(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    """Commit, versions, machine, load and date of the run, and its settings."""
    prov = result["provenance"]
    versions = ", ".join(f"{k} {v}" for k, v in prov["versions"].items())
    load = prov["load_average"]
    facts = [
        text.message("site.commit") + f" `{prov['commit'][:12]}`",
        escape_text(versions),
        escape_text(prov["cpu"]),
        escape_text(prov["platform"]),
        text.message("site.threads", {"n": prov["threads"]}),
        text.message("site.load", {"start": load["start"][0], "end": load["end"][0]}),
        format_date(prov["date"], lang),
    ]
    covered = text.message(
        "site.covered", {"files": len(prov["files"]), "weights": len(prov["weights"])}
    )
    lines = [text.message("site.provenance") + ": " + " · ".join(facts) + ".", "", covered, ""]
    settings = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in result["settings"].items())
    if settings:
        lines += [text.message("site.settings") + ": " + settings + ".", ""]
    return lines


def benchmark_section(
    slug: str, result: dict[str, Any] | None, lang: str, command: str, shown: list[str]
) -> list[str]:
    """The page's benchmark section, or a plain statement that nothing was measured; ``shown``
    are the figure blocks (:mod:`glossary.site.figures`) of its result."""
    text = ResultText(slug, lang)
    lines = [heading(2, text.message("site.benchmark"), "benchmark", searchable=False), ""]
    if result is None:
        return [*lines, text.message("site.no-results"), ""]
    lines += [f"**{text.title()}**", ""]
    lines += headline_line(result, text, lang)
    lines += [f'=== "{text.message("site.summary")}"', ""]
    lines += ["    " + line if line else "" for line in summary_table(result, text, lang)]
    lines += [f'=== "{text.message("site.all-measurements")}"', ""]
    lines += ["    " + line if line else "" for line in full_table(result, text, lang)]
    lines += legend(text)
    lines += aims_table(result, text, lang)
    if result["notes"]:
        lines += [heading(3, text.message("site.notes"), "notes", searchable=False), ""]
        lines += [f"- {escape_markdown(text.note(n))}" for n in result["notes"]] + [""]
    if shown:
        lines += [heading(3, text.message("site.figures"), "figures", searchable=False), "", *shown]
    lines += provenance(result, text, lang)
    lines += [text.message("site.reproduce") + f": `{command}`", ""]
    return lines
