"""Generate the site's pages from the glossary entries and the benchmark results.

The site (MkDocs + Material + mkdocs-static-i18n, ``mkdocs.yml``) has hand-written home pages;
everything else is written here, once per language of :data:`glossary.schema.LANGS`:

* ``<lang>/terms/<slug>.md``: one page per entry (kept out of the navigation);
* ``<lang>/api/<slug>.md``: the code documentation of each implemented technique, in English
  under one sentence in the page's language (out of the navigation and of the search index);
* ``<lang>/categories/index.md`` and ``<lang>/categories/<category>.md``;
* ``<lang>/index-a-z.md``: every term and alias, bucketed and sorted by the language's collation;
* ``<lang>/compare.md``: the headline figures of every technique that has results;
* ``<lang>/stacking.md``: the study of stacked techniques (:mod:`glossary.site.stacking`),
  always written, saying "not measured yet" without ``stacking.json``;
* ``<lang>/baseline.md`` and ``<lang>/realshape.md``: the study pages
  (:mod:`glossary.site.studies`), likewise;
* ``<lang>/guide.md``: "What should I use?" (:mod:`glossary.site.guide`), by goal and by quality
  budget;
* ``<lang>/downloads.md`` and ``assets/downloads/``: the exports of the glossary;
* ``assets/results/<figure>``: the figures named by the result files;
* ``assets/results/<lang>/<slug>.svg``, ``compare-*.svg`` and ``stacking-*.svg``: the charts
  drawn from the results (:mod:`glossary.site.plots`, :mod:`glossary.site.stackplots`), one per
  language.

The generator writes real files, and only those whose content changed
(:mod:`glossary.site.writing`). :mod:`glossary.mkdocs_hooks` calls :func:`generate` from MkDocs'
``on_config``, before files are collected: mkdocs-static-i18n sorts files into languages at
``on_files`` and drops in-memory generated files, which is why pages are not created with
``File.generated``. ``GLOSSARY_ENTRIES_DIR`` points the generator at other entries (the site
tests add fixtures), ``GLOSSARY_RESULTS_DIR`` at other results (:mod:`glossary.site.results`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from glossary.schema import CATEGORIES, LANGS
from glossary.site import downloads
from glossary.site.compare import compare_page
from glossary.site.context import Context
from glossary.site.figures import chart_path
from glossary.site.guide import guide_page
from glossary.site.indexes import az_page, categories_index, category_page
from glossary.site.plots import Chart
from glossary.site.results import FIGURES_DIR, Results, SiteGenError, load_results, results_dir
from glossary.site.stacking import composite, element_terms, stacking_page
from glossary.site.studies import PAGES as STUDY_PAGES
from glossary.site.studies import study_page
from glossary.site.terms import API_DIR, api_page, term_page
from glossary.site.writing import Report, remove_stale

ENTRIES_ENV = "GLOSSARY_ENTRIES_DIR"
GENERATED_DIRS = ("terms", API_DIR, "categories")


def pages(ctx: Context) -> dict[str, str]:
    """Every generated page, keyed by its path relative to the docs directory."""
    out: dict[str, str] = {}
    for lang in LANGS:
        for entry in ctx.glossary:
            out[f"{lang}/terms/{entry.slug}.md"] = term_page(entry, lang, ctx)
            api = api_page(entry, lang, ctx)
            if api is not None:
                out[f"{lang}/{API_DIR}/{entry.slug}.md"] = api
        out[f"{lang}/categories/index.md"] = categories_index(lang, ctx)
        for category in CATEGORIES:
            out[f"{lang}/categories/{category}.md"] = category_page(category, lang, ctx)
        out[f"{lang}/index-a-z.md"] = az_page(lang, ctx)
        out[f"{lang}/compare.md"] = compare_page(lang, ctx)
        out[f"{lang}/stacking.md"] = stacking_page(lang, ctx)
        for study, page in STUDY_PAGES.items():
            out[f"{lang}/{page}"] = study_page(study, lang, ctx)
        out[f"{lang}/guide.md"] = guide_page(lang, ctx)
    return out


def copy_figures(ctx: Context, docs_dir: Path, report: Report) -> set[Path]:
    """Copy every figure a result names into the docs directory, except the charts drawn from
    the rows instead (:mod:`glossary.site.benchfigures`); report the missing ones."""
    from glossary.site.benchfigures import replaced

    kept: set[Path] = set()
    for slug, result in sorted(ctx.results.all().items()):
        for figure in result["figures"]:
            name = figure["file"]
            if replaced(result, figure):
                continue  # drawn per language from the rows instead
            source = ctx.results.directory / name
            if not source.is_file():
                report.problems.append(
                    f"{ctx.results.directory / slug}.json: figure {name} is missing"
                )
                continue
            target = docs_dir / FIGURES_DIR / name
            report.write(target, source.read_bytes())
            kept.add(target)
    return kept


def _charts(ctx: Context) -> dict[tuple[str, str], list[Chart]]:
    from glossary.site.benchfigures import figure_charts
    from glossary.site.compare import chart_points, memory_first
    from glossary.site.compareplots import compare_charts
    from glossary.site.plots import result_chart
    from glossary.site.stackplots import stacking_charts

    charts: dict[tuple[str, str], list[Chart]] = {}
    for slug, result in sorted(ctx.results.by_slug.items()):
        for lang in LANGS:
            chart = result_chart(result, lang)
            drawn = [chart] if chart is not None else []
            for figure in result["figures"]:
                drawn += figure_charts(result, figure, lang)
            if drawn:
                charts[(f"terms/{slug}", lang)] = drawn
    for lang in LANGS:
        points = chart_points(lang, ctx)
        charts[("compare", lang)] = compare_charts(points, lang, memory_first(ctx))
    study = composite(ctx)
    if study is not None:
        for lang in LANGS:
            terms = element_terms(study, lang, ctx)
            charts[("stacking", lang)] = stacking_charts(study, lang, terms)
    return charts


def draw_charts(ctx: Context, docs_dir: Path) -> None:
    """Put the chart of every result and the comparison charts, in every language, into
    ``ctx.charts``; a chart whose SVG in ``docs_dir`` was drawn from the same inputs is reused,
    the others are drawn."""
    for page, charts in _charts(ctx).items():
        done = []
        for chart in charts:
            path = docs_dir / chart_path(chart, page[1])
            done.append(chart.rendered(path.read_bytes() if path.is_file() else None))
        ctx.charts[page] = done


def write_charts(ctx: Context, docs_dir: Path, report: Report) -> None:
    """Write the charts (only those that changed); remove the charts no longer drawn."""
    kept: set[Path] = set()
    for (_page, lang), charts in sorted(ctx.charts.items()):
        for chart in charts:
            path = docs_dir / chart_path(chart, lang)
            report.write(path, chart.svg)
            kept.add(path)
    for lang in LANGS:
        remove_stale(docs_dir / FIGURES_DIR / lang, kept, report)


def _context(entries_dir: Path | None, results: Path | None, use_directory_urls: bool) -> Context:
    from glossary.loader import load_glossary, module_exists

    if entries_dir is None and os.environ.get(ENTRIES_ENV):
        entries_dir = Path(os.environ[ENTRIES_ENV])
    return Context(
        glossary=load_glossary(entries_dir),
        results=load_results(results if results is not None else results_dir()),
        module_exists=module_exists,
        use_directory_urls=use_directory_urls,
    )


def _unknown_results(ctx: Context, report: Report) -> None:
    for slug in ctx.results.by_slug:
        entry = ctx.glossary.get(slug)
        if entry is None or not entry.is_technique:
            report.problems.append(f"{ctx.results.directory / slug}.json: no technique '{slug}'")


RENDER_ERRORS = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    ArithmeticError,
    RecursionError,
)
"""What a result that passed the schema but holds another shape than its pages expect (a body
copied from another technique, a missing key) raises while its pages are drawn."""


def _alone(ctx: Context, slug: str) -> Context:
    """``ctx`` with only the result ``slug`` and no drawn charts."""
    whole = ctx.results
    only = Results(
        whole.directory,
        {k: v for k, v in whole.by_slug.items() if k == slug},
        {k: v for k, v in whole.composites.items() if k == slug},
    )
    return replace(ctx, results=only, charts={})


def _result_pages(ctx: Context) -> None:
    """Render every page that shows a result of ``ctx`` (its term page, compare, stacking)."""
    for lang in LANGS:
        for slug in ctx.results.by_slug:
            entry = ctx.glossary.get(slug)
            if entry is not None:
                term_page(entry, lang, ctx)
        compare_page(lang, ctx)
        stacking_page(lang, ctx)


def _blame(ctx: Context, docs_dir: Path, exc: BaseException) -> str:
    """One line naming the result file whose pages fail to render, alone, and why."""
    why = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
    for slug in sorted(ctx.results.all()):
        alone = _alone(ctx, slug)
        try:
            _result_pages(alone)  # the pages first: they are quick to render, charts are not
            draw_charts(alone, docs_dir)
        except RENDER_ERRORS as own:
            why = f"{type(own).__name__}: {(str(own).splitlines() or [''])[0]}"
            path = ctx.results.directory / f"{slug}.json"
            return f"{path}: cannot render this result ({why})"
    return f"{ctx.results.directory}: cannot render the results together ({why})"


def generate(
    docs_dir: Path,
    *,
    entries_dir: Path | None = None,
    results: Path | None = None,
    use_directory_urls: bool = True,
) -> Report:
    """Write every generated page and figure into ``docs_dir``; remove stale generated files.

    ``entries_dir`` defaults to ``$GLOSSARY_ENTRIES_DIR`` or the package's entries, ``results``
    to :func:`glossary.site.results.results_dir`. Raises
    :class:`glossary.loader.GlossaryError` for invalid entries and
    :class:`glossary.site.results.SiteGenError` for unreadable results.
    """
    ctx = _context(entries_dir, results, use_directory_urls)
    report = Report()
    _unknown_results(ctx, report)
    try:
        draw_charts(ctx, docs_dir)
        rendered = pages(ctx)
    except RENDER_ERRORS as exc:
        raise SiteGenError(_blame(ctx, docs_dir, exc)) from None
    write_charts(ctx, docs_dir, report)
    sizes, offered = downloads.write(ctx.glossary, docs_dir, report.write)
    wanted = {docs_dir / rel: text for rel, text in rendered.items()}
    for lang in LANGS:
        wanted[docs_dir / lang / "downloads.md"] = downloads.page(lang, sizes)
    for path, text in wanted.items():
        report.write(path, text)
    remove_stale(docs_dir / downloads.DOWNLOADS_DIR, offered, report)
    for lang in LANGS:
        for sub in GENERATED_DIRS:
            remove_stale(docs_dir / lang / sub, wanted, report)
    remove_stale(docs_dir / FIGURES_DIR, copy_figures(ctx, docs_dir, report), report)
    return report
