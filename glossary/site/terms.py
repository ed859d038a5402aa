"""The page of one entry in one language: definition, explanation, run it, benchmark, the stacks
the technique was measured in, sources, libraries, related terms and the API of its reference
implementation."""

from __future__ import annotations

import json

from glossary.model import Entry, Source
from glossary.resulttext import ResultText
from glossary.schema import CATEGORIES, LANGS
from glossary.site.benchmark import benchmark_section
from glossary.site.context import Context
from glossary.site.figures import asset_href, chart_figure, chart_path, committed_figures
from glossary.site.formatting import Translate, translator
from glossary.site.markdown import (
    admonition,
    escape_markdown,
    escape_text,
    heading,
    html_attr,
    indent,
    safe_url,
)
from glossary.site.results import FIGURES_DIR
from glossary.site.stacking import stack_section
from glossary.site.urls import cross_language_href, sorted_entries, term_link

LANG_NAMES = {"es": "Español", "ru": "Русский", "en": "English"}


def cite(source: Source, lang: str, _: Translate) -> str:
    """A citation: authors (year). *Title*. Venue. arXiv/DOI links."""
    authors = list(source.authors)
    names = ", ".join(escape_text(a) for a in authors[:6])
    if len(authors) > 6 or source.authors_truncated:
        names += ", " + _("et al.")
    years = str(source.year)
    if source.arxiv_year is not None and source.arxiv_year != source.year:
        years += f"; arXiv {source.arxiv_year}"
    parts = [f"{names} ({years}). *{escape_text(source.title)}*."]
    if source.venue:
        parts.append(f"{escape_text(source.venue)}.")
    if source.arxiv:
        parts.append(f"arXiv: [{source.arxiv}](https://arxiv.org/abs/{source.arxiv}).")
    doi_url = safe_url(f"https://doi.org/{source.doi}") if source.doi else None
    if doi_url:
        parts.append(f"DOI: [{escape_text(source.doi or '')}]({doi_url}).")
    url = safe_url(source.url) if source.url else None
    if url and not source.arxiv and not source.doi:
        parts.append(f"[{escape_text(source.url or '')}]({url})")
    return " ".join(parts)


def language_links(entry: Entry, lang: str, ctx: Context) -> str:
    """Links to the same term in the other languages.

    They are HTML, not Markdown links: mkdocs-static-i18n builds each language with only that
    language's files, so a Markdown link into another language could not be resolved.
    """
    links = []
    for other in LANGS:
        if other == lang:
            continue
        href = cross_language_href(f"terms/{entry.slug}", lang, other, ctx.use_directory_urls)
        links.append(
            f'<a href="{href}" hreflang="{other}" lang="{other}">'
            f"{LANG_NAMES[other]}: {html_attr(entry.term(other))}</a>"
        )
    return '<p class="gl-languages" data-search-exclude>' + " · ".join(links) + "</p>"


def run_it(entry: Entry, _: Translate) -> list[str]:
    """How to run the reference implementation's demonstration."""
    assert entry.reference is not None
    return [
        heading(2, _("Run it"), "run-it"),
        "",
        _("Run the reference implementation's demonstration from the repository root:"),
        "",
        "```sh",
        f".venv/bin/python -m {entry.reference.module}",
        "```",
        "",
        _("Add `--help` for its options and `--bench` for the full benchmark."),
        "",
    ]


def api(entry: Entry, _: Translate, ctx: Context) -> list[str]:
    """The mkdocstrings block of an implemented module, or a plain "planned" line."""
    assert entry.reference is not None
    lines = [heading(2, _("Reference implementation"), "api"), ""]
    module = entry.reference.module
    if entry.reference.implemented and ctx.module_exists(module):
        lines += [f"::: {module}", ""]
    else:
        lines += [f"`{module}`: " + _("implementation planned."), ""]
    return lines


def _front_matter(entry: Entry, lang: str, ctx: Context, _: Translate) -> list[str]:
    text = entry.text(lang)
    category = CATEGORIES[entry.category][lang]
    kind = _("Technique") if entry.is_technique else _("Concept")
    return [
        "---",
        # The explicit title keeps Material's <title> safe: it unescapes a heading-derived title.
        f"title: {json.dumps(html_attr(text.term), ensure_ascii=False)}",
        "---",
        "",
        f"# {escape_text(text.term)}",
        "",
        language_links(entry, lang, ctx),
        "",
        f"{kind} · [{escape_text(category)}](../categories/{entry.category}.md)",
        "",
    ]


def _text_sections(entry: Entry, lang: str, _: Translate) -> list[str]:
    text = entry.text(lang)
    lines: list[str] = []
    if text.aliases:
        aliases = ", ".join(escape_text(a) for a in text.aliases)
        lines += ["**" + _("Also known as") + f":** {aliases}", ""]
    lines += [heading(2, _("Definition"), "definition"), "", escape_markdown(text.definition), ""]
    if text.note:
        lines += [admonition("note", _("Accuracy note")), ""]
        lines += [indent(escape_markdown(text.note)), ""]
    lines += [heading(2, _("Explanation"), "explanation"), "", escape_markdown(text.explanation)]
    return [*lines, ""]


def result_figures(entry: Entry, lang: str, ctx: Context) -> list[str]:
    """The drawn chart of the entry's result, then the figures the benchmark committed."""
    result = ctx.results.by_slug.get(entry.slug)
    if result is None:
        return []
    page = f"terms/{entry.slug}"

    def href(asset: str) -> str:
        return asset_href(page, lang, asset, ctx.use_directory_urls)

    lines = []
    for chart in ctx.charts.get((page, lang), []):
        lines += chart_figure(chart, href(chart_path(chart, lang)))
    files = {f["file"]: href(f"{FIGURES_DIR}/{f['file']}") for f in result["figures"]}
    return lines + committed_figures(result, ResultText(entry.slug, lang), files)


def _measured(entry: Entry, lang: str, ctx: Context, _: Translate) -> list[str]:
    if entry.reference is None:
        return []
    section = benchmark_section(
        entry.slug,
        ctx.results.by_slug.get(entry.slug),
        lang,
        f".venv/bin/glossary bench {entry.slug}",
        result_figures(entry, lang, ctx),
    )
    return [*run_it(entry, _), *section, *stack_section(entry.slug, lang, ctx)]


def _references(entry: Entry, lang: str, ctx: Context, _: Translate) -> list[str]:
    lines: list[str] = []
    if entry.sources:
        lines += [heading(2, _("Sources"), "sources"), ""]
        lines += [f"1. {cite(s, lang, _)}" for s in entry.sources] + [""]
    if entry.libraries:
        lines += [heading(2, _("Libraries"), "libraries"), ""]
        for lib in entry.libraries:
            name = lib.api.replace("`", "")
            url = safe_url(lib.url) if lib.url else None
            code = f"[`{name}`]({url})" if url else f"`{name}`"
            lines.append(f"- {escape_text(lib.name)}: {code}")
        lines.append("")
    related = [ctx.glossary[s] for s in entry.related if s in ctx.glossary]
    if related:
        lines += [heading(2, _("Related terms"), "related"), ""]
        lines += [f"- {term_link(r, lang)}" for r in sorted_entries(related, lang)] + [""]
    return lines


def term_page(entry: Entry, lang: str, ctx: Context) -> str:
    """The Markdown page of one entry in one language."""
    _ = translator(lang)
    lines = _front_matter(entry, lang, ctx, _) + _text_sections(entry, lang, _)
    lines += _measured(entry, lang, ctx, _) + _references(entry, lang, ctx, _)
    if entry.reference is not None:
        lines += api(entry, _, ctx)
    return "\n".join(lines).rstrip() + "\n"
