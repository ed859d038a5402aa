"""Figures on the pages: ``<figure>`` with an image, its alt text and a caption.

Two kinds: the charts drawn at build time (:mod:`glossary.site.plots`, and the benchmarks' own
charts redrawn from the rows by :mod:`glossary.site.benchfigures`; one SVG per language under
``assets/results/<lang>/``) and the figures a benchmark committed beside its result: sample
grids (PNG, digits only, their rows named below them in the page's language) and the few
charts whose data is not in the rows (PNG on the English page only, linked from the others).
Both are written as HTML, so the caption is a real ``<figcaption>`` and the image keeps its
size before it loads; MkDocs does not rewrite the address of an image in
HTML, so it is computed relative to the page (:func:`asset_href`). A committed figure's caption
is its ``figure.<id>`` message (it names the rows of a sample grid); its alt text says what kind
of figure it is.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from glossary.resulttext import ResultText
from glossary.site.benchfigures import replaced, sample_rows
from glossary.site.markdown import html_attr
from glossary.site.plots import Chart
from glossary.site.results import FIGURES_DIR, Result
from glossary.site.urls import page_url

SAMPLE_CAPTION = "samples"


def chart_path(chart: Chart, lang: str) -> str:
    """Where a drawn chart lives, relative to the docs directory."""
    return f"{FIGURES_DIR}/{lang}/{chart.name}.svg"


def asset_href(page: str, lang: str, asset: str, use_directory_urls: bool) -> str:
    """The address of ``asset`` (relative to the site root) from page ``page`` in ``lang``."""
    here = page_url(page, lang, use_directory_urls)
    base = here.rstrip("/") if use_directory_urls else posixpath.dirname(here)
    return posixpath.relpath(asset, base or ".")


def figure(src: str, alt: str, caption: str, size: tuple[int, int] | None = None) -> list[str]:
    """A ``<figure>`` block (its own Markdown paragraph: blank lines around it)."""
    dims = f' width="{size[0]}" height="{size[1]}"' if size and all(size) else ""
    return [
        '<figure class="gl-figure">',
        f'<img alt="{html_attr(alt)}" src="{html_attr(src)}"{dims} loading="lazy">',
        f"<figcaption>{html_attr(caption)}</figcaption>",
        "</figure>",
        "",
    ]


def chart_figure(chart: Chart, href: str) -> list[str]:
    """A drawn chart as a figure."""
    return figure(href, chart.alt, chart.caption, chart.size())


def sample_labels(result: Result, text: ResultText) -> list[str]:
    """The rows of a sample grid, top to bottom, named in the page's language (an ordered
    list after the image: a screen reader and a phone both read it beside the grid)."""
    rows = {row["id"]: row for row in result["rows"]}
    items = []
    for rid, repeat in sample_rows(result):
        label = text.config(rows[rid]["config"])
        role = text.role(rows[rid]["role"])
        item = text.message("site.sample-row", {"label": label, "role": role})
        if repeat > 1:
            item = text.message("site.sample-row-repeat", {"row": item, "n": repeat})
        items.append(f"<li>{html_attr(item)}</li>")
    if not items:
        return []
    head = html_attr(text.message("site.sample-rows"))
    return [
        f'<p class="gl-sample-rows">{head}</p>',
        '<ol class="gl-sample-rows">',
        *items,
        "</ol>",
        "",
    ]


def committed_figures(
    result: Result,
    text: ResultText,
    href_of: dict[str, str],
    drawn: dict[str, list[Chart]],
    chart_href: Callable[[Chart], str],
) -> list[str]:
    """The result's committed figures, in order: a sample grid as its PNG with its rows
    named; a chart as the SVGs drawn from the rows in the page's language (``drawn``: charts
    by figure file, none before they are drawn); a chart whose data is not in the rows as its
    PNG on the English page and, on the others, a link to it with a sentence saying why (its
    text is English)."""
    lines = []
    for fig in result["figures"]:
        if fig["caption"] == SAMPLE_CAPTION:
            alt = text.message("site.alt-samples")
            lines += figure(href_of[fig["file"]], alt, text.caption(fig))
            lines += sample_labels(result, text)
        elif replaced(result, fig):
            for chart in drawn.get(fig["file"], []):
                lines += figure(chart_href(chart), chart.alt, chart.caption, chart.size())
        elif text.lang == "en":
            lines += figure(href_of[fig["file"]], text.message("site.alt-chart"), text.caption(fig))
        else:
            link = f'<a href="{html_attr(href_of[fig["file"]])}" hreflang="en">'
            note = text.message("site.figure-not-drawn", {"caption": text.caption(fig)})
            lines += [f'<p class="gl-figure-note">{link}{html_attr(note)}</a></p>', ""]
    return lines
