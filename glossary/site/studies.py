"""The study pages: is the baseline sound, and how do the techniques behave at real shapes?

A study is a result that is not one technique's benchmark (`glossary.site.results.COMPOSITES`).
Two of them get a page of their own, rendered like a technique's benchmark section (rows,
aims with their states, notes, provenance) under the study's title and introduction:

* ``<lang>/baseline.md`` renders ``baseline-sanity.json`` (``python -m reference.baseline_sanity
  --bench``, run first by ``glossary bench``): DDIM at 5 to 1000 steps on the clipped ODE,
  UniPC, the former diffusers DDIM and the solution;
* ``<lang>/realshape.md`` renders ``realshape.json`` (``python -m reference.realshape --bench``,
  run last): every inference-time technique applied to diffusers' production classes at their
  published shapes, with random weights, timed on the machine the provenance names.

Without its result a page says that nothing is measured yet. The comparison page links to both
(`compare_links`). The words come from each study's own catalog (``page.intro``,
``page.compare-link``).
"""

from __future__ import annotations

from typing import Any

from glossary.resulttext import ResultText, format_number
from glossary.site.benchmark import benchmark_section
from glossary.site.context import Context
from glossary.site.formatting import NOT_MEASURED, ratio, ratio_interval

PAGES = {"baseline-sanity": "baseline.md", "realshape": "realshape.md"}
"""Study slug -> its page, in the order the comparison page links them."""
REALSHAPE = "realshape"
TECHNIQUE_OF = {
    "deepcache": "feature-caching",
    "first-block-cache": "feature-caching",
    "forecasting": "accelerate-method",
    "low-rank": "low-rank-inference",
    "fusion": "conv-fusion",
    "compile": "tpu-deployment",
    "pruning": "pruning",
    "cfg": "classifier-guidance",
}
"""The real-shape study's technique ids -> the glossary entries whose ``apply_x`` they time
(a test checks it against the study's own list)."""


def study_page(slug: str, lang: str, ctx: Context) -> str:
    """The whole page of study ``slug`` in ``lang``."""
    text = ResultText(slug, lang)
    lines = ["# " + text.title(), "", text.message("page.intro"), ""]
    result = ctx.results.composites.get(slug)
    lines += benchmark_section(slug, result, lang, f"glossary bench {slug}", [])
    return "\n".join(lines).rstrip() + "\n"


def compare_links(lang: str) -> list[str]:
    """The comparison page's sentences pointing to each study page, one paragraph each."""
    lines = []
    for slug, page in PAGES.items():
        text = ResultText(slug, lang)
        lines += [text.message("page.compare-link", {"link": f"[{text.title()}]({page})"}), ""]
    return lines


def _timed_rows(slug: str, ctx: Context) -> list[dict[str, Any]]:
    """The real-shape study's rows that time technique ``slug`` (none without a result)."""
    result = ctx.results.composites.get(REALSHAPE)
    if result is None:
        return []
    return [
        r
        for r in result["rows"]
        if r["role"] == "technique" and TECHNIQUE_OF.get(r["config"]["method"]) == slug
    ]


def _counterpart_line(row: dict[str, Any], lang: str, ctx: Context) -> list[str]:
    """The line comparing ``row`` with diffusers' counterpart timed in the same rounds (the row
    its aim is against), or nothing when the technique has none."""
    result = ctx.results.composites[REALSHAPE]
    against = next((a["against"] for a in result["aims"] if a["row"] == row["id"]), None)
    span = row.get("intervals", {}).get("vs_counterpart")
    if against is None or "vs_counterpart" not in row["values"]:
        return []
    text = ResultText(REALSHAPE, lang)
    method = next(r["config"]["method"] for r in result["rows"] if r["id"] == against)
    model = text.message(f"model.{row['config']['model']}")
    params = {
        "model": model[:1].upper() + model[1:],
        "counterpart": text.message(f"counterpart.{method}"),
        "ratio": ratio(row["values"]["vs_counterpart"], lang) + "×" + ratio_interval(span, lang),
    }
    return ["- " + text.message("page.technique-counterpart", params)]


def _efficiency(values: dict[str, Any], lang: str) -> str:
    """A row's efficiency (speedup / FLOP estimate), or the not-measured dash."""
    found = values.get("efficiency")
    return format_number(found, lang) if found else NOT_MEASURED


def realshape_lines(slug: str, lang: str, ctx: Context) -> list[str]:
    """A technique page's measurements at real shape (for its "On a diffusers model" section):
    one line per production model the study timed it on, with the speedup, its interval, the
    FLOP estimate and the efficiency, and a link to the study's page; nothing when the study
    has no result or did not time this technique."""
    rows = _timed_rows(slug, ctx)
    if not rows:
        return []
    text = ResultText(REALSHAPE, lang)
    lines = [
        text.message("page.technique-intro", {"link": f"[{text.title()}](../{PAGES[REALSHAPE]})"}),
        "",
    ]
    for row in rows:
        v, span = row["values"], row["intervals"].get("speedup")
        model = text.message(f"model.{row['config']['model']}")
        params = {
            "model": model[:1].upper() + model[1:],
            "speedup": ratio(v["speedup"], lang) + "×" + ratio_interval(span, lang),
            "estimate": ratio(v["flop_speedup"], lang) + "×"
            if v.get("flop_speedup")
            else NOT_MEASURED,
            "efficiency": _efficiency(v, lang),
        }
        lines.append("- " + text.message("page.technique-row", params))
        lines += _counterpart_line(row, lang, ctx)
    return [*lines, ""]


def realshape_cell(slug: str, lang: str, ctx: Context) -> tuple[str, str, float] | None:
    """The comparison table's real-shape cell of technique ``slug``: its speedup on the first
    production model the study timed it on (the U-Net before the transformer), a detail line
    naming the model and the efficiency, and the sort key; ``None`` when not timed."""
    rows = _timed_rows(slug, ctx)
    if not rows:
        return None
    text = ResultText(REALSHAPE, lang)
    v = rows[0]["values"]
    params = {
        "model": text.message(f"model.{rows[0]['config']['model']}"),
        "efficiency": _efficiency(v, lang),
    }
    return ratio(v["speedup"], lang) + "×", text.message("page.column-detail", params), v["speedup"]
