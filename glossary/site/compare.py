"""The comparison page of each language: the headline of every technique's result side by side."""

from __future__ import annotations

from glossary.resulttext import ResultText
from glossary.site.context import Context
from glossary.site.formatting import interval, number, translator
from glossary.site.markdown import table_row
from glossary.site.results import Result
from glossary.site.urls import sorted_entries, term_link


def compare_cells(result: Result, lang: str) -> list[str]:
    """Speedup [interval], limit (kind), quality ratio and the aims' states for the compare page."""
    text = ResultText(result["slug"], lang)
    head = result["headline"] or {}
    speed = number(head.get("speedup"), lang, ".3g")
    if head.get("speedup") is not None:
        speed += "×" + interval(head.get("speedup_interval"), lang)
    if result["anomalies"]:
        speed += " ⚠ " + text.message("site.anomaly")
    limit = number(head.get("speedup_limit"), lang, ".3g")
    if head.get("speedup_limit") is not None:
        kind = "site.limit-bound" if head.get("limit_kind") == "bound" else "site.limit-estimate"
        limit += f"× ({text.message(kind)})"
    quality = number(head.get("quality_ratio"), lang, ".3g")
    states = [a["state"] for a in result["aims"]]
    aims = " · ".join(
        f"{states.count(s)} {text.state(s)}" for s in ("met", "missed", "inconclusive")
    )
    return [speed, limit, quality, aims or "—"]


def compare_page(lang: str, ctx: Context) -> str:
    """The headline of every technique's result, side by side, with intervals and aim states."""
    _ = translator(lang)
    text = ResultText("results", lang)
    lines = [
        "# " + _("Comparison of techniques"),
        "",
        text.message("site.compare-intro"),
        "",
        table_row(
            [
                _("Technique"),
                text.message("site.speedup"),
                text.message("site.limit"),
                text.message("site.quality-ratio"),
                text.message("site.aims"),
            ]
        ),
        "|---|---:|---:|---:|---|",
    ]
    missing = []
    for entry in sorted_entries(ctx.glossary.techniques(), lang):
        result = ctx.results.by_slug.get(entry.slug)
        link = term_link(entry, lang, "terms/")
        if result is None:
            missing.append(link)
            continue
        lines.append(table_row([link, *compare_cells(result, lang)]))
    lines.append("")
    if missing:
        lines += [_("No measured results yet") + ": " + ", ".join(missing) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"
