"""Figures on the pages: ``<figure>`` with an image, its alt text and a caption.

Two kinds: the charts drawn at build time (:mod:`glossary.site.plots`, one SVG per language
under ``assets/results/<lang>/``) and the figures a benchmark committed beside its result (sample
grids and plots, PNG). Both are written as HTML, so the caption is a real ``<figcaption>`` and
the image keeps its size before it loads; MkDocs does not rewrite the address of an image in
HTML, so it is computed relative to the page (:func:`asset_href`). A committed figure's caption
is its ``figure.<id>`` message (it names the rows of a sample grid); its alt text says what kind
of figure it is.
"""

from __future__ import annotations

import posixpath

from glossary.resulttext import ResultText
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


def committed_figures(result: Result, text: ResultText, href_of: dict[str, str]) -> list[str]:
    """The result's committed figures, each with its caption; ``href_of`` maps a file name to
    its address from the page."""
    lines = []
    for fig in result["figures"]:
        kind = "site.alt-samples" if fig["caption"] == SAMPLE_CAPTION else "site.alt-chart"
        lines += figure(href_of[fig["file"]], text.message(kind), text.caption(fig))
    return lines
