"""The baseline sanity page: is the sampler every technique is judged against sound?

``<lang>/baseline.md`` renders ``baseline-sanity.json`` (written by ``python -m
reference.baseline_sanity --bench``, run first by ``glossary bench``) like a technique's benchmark
section: the rows (DDIM at 5 to 1000 steps on the clipped ODE, UniPC, the former diffusers DDIM,
the solution), the aims with their states, the notes and the provenance. Without the result the
page says that nothing is measured yet. The comparison page links here.
"""

from __future__ import annotations

from glossary.resulttext import ResultText
from glossary.site.benchmark import benchmark_section
from glossary.site.context import Context

SLUG = "baseline-sanity"
PAGE = "baseline.md"


def sanity_page(lang: str, ctx: Context) -> str:
    """The whole page in ``lang``."""
    text = ResultText(SLUG, lang)
    lines = ["# " + text.title(), "", text.message("page.intro"), ""]
    result = ctx.results.composites.get(SLUG)
    lines += benchmark_section(SLUG, result, lang, f"glossary bench {SLUG}", [])
    return "\n".join(lines).rstrip() + "\n"


def compare_link(lang: str) -> str:
    """The comparison page's sentence pointing here."""
    text = ResultText(SLUG, lang)
    return text.message("page.compare-link", {"link": f"[{text.title()}]({PAGE})"})
