"""Every figure of a technique page in the reader's language.

A benchmark's chart PNG has English text in it; the site draws each one again per language from
the result rows (:mod:`glossary.site.benchfigures`), so that an es or ru page embeds no PNG but
sample grids (digits only), and each grid's rows are named in the page's language. The rule the
built pages are held to: an ``<img>`` of a PNG on an es or ru technique page is a sample grid
(``*-samples.png``) followed by the list of its rows; every other figure is an SVG under
``assets/results/<lang>/``. A chart whose data is not in the rows is not embedded there (a
link to the English figure with a sentence saying why).

The committed results (``reference/results/``, read only) are checked without MkDocs: every
chart PNG is either redrawn or declared not drawable, each redrawn chart is drawn in es, ru and
en with its axis titles and series in that language, and the grid rows are the benchmark's, in
the order its caption names them. The fixture build checks the pages themselves.
"""

from __future__ import annotations

import functools
import html
import re
from pathlib import Path
from typing import Any

import pytest

try:
    from tests import site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import site_support  # type: ignore[no-redef]

from glossary.resulttext import ResultText
from glossary.site import benchfigures as bf
from glossary.site.figures import committed_figures

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("site")]
REPO = site_support.REPO
READER_LANGS = ("es", "ru")
SAMPLES = "samples"
PNG_IMG = re.compile(r'<img [^>]*src="([^"]+\.png)"')

# The rows of each sample grid as the benchmark's English caption names them, top to bottom:
# the order is the benchmark's (GRID_ROWS, the keys it concatenates), which the result itself
# does not record; the caption is the result's own statement of it, so the order checked
# here is the caption's, and the grid's rows must match it one for one.
CAPTION_ORDER = {
    "accelerate-method": ("plain DDIM", "forecasting", "reuse", "same NFE"),
    "classifier-guidance": ("unguided", "classifier guidance", "classifier-free", "conditional"),
    "consistency-latent-diffusion": ("DDIM with 50", "consistency model", "DPM-Solver++"),
    "feature-caching": ("plain DDIM", "DeepCache", "same FLOPs"),
    "mixture-of-experts": ("dense FFN", "wide dense FFN", "sparse MoE", "timestep experts"),
    "pruning": ("the teacher", "fine-tuned", "from scratch"),
    "scheduler-tradeoff": ("DDPM", "DDIM", "DPM-Solver++(2M)", "UniPC", "Euler"),
    "timestep-distillation": ("DDIM with 50", "headline student", "student's timesteps"),
}
# What each caption phrase is, in the result's rows: its configuration's method.
CAPTION_METHOD = {
    "accelerate-method": ("ddim", "forecast-newton", "forecast-reuse", "ddim-same-nfe"),
    "classifier-guidance": (
        "unguided",
        "classifier-guidance",
        "classifier-free-guidance",
        "conditional",
    ),
    "consistency-latent-diffusion": ("latent-ddim", "consistency", "dpm-solver-pp"),
    "feature-caching": ("ddim", "deepcache", "ddim-matched"),
    "mixture-of-experts": ("dense-ffn", "dense-ffn-wide", "sparse-moe", "timestep-experts"),
    "pruning": ("teacher", "pruned-finetuned", "pruned-scratch"),
    "scheduler-tradeoff": ("ddpm", "ddim", "dpmpp2m", "unipc", "euler"),
    "timestep-distillation": ("ddim", "student", "teacher-grid-ddim"),
}

HEADLINE_SECOND = {
    "accelerate-method",
    "classifier-guidance",
    "consistency-latent-diffusion",
    "feature-caching",
    "timestep-distillation",
}
"""Grids whose second row is the headline's setting (their captions say so)."""


@functools.cache
def _results() -> dict[str, dict[str, Any]]:
    from glossary.site.results import load_results

    return load_results(REPO / "reference" / "results", allow_nonstandard=True).by_slug


def _figures(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """``(slug, figure)`` of every committed sample grid (``samples``) or chart (``charts``)."""
    return [
        (slug, fig)
        for slug, result in sorted(_results().items())
        for fig in result["figures"]
        if (fig["caption"] == SAMPLES) == (kind == SAMPLES)
    ]


def _svg_texts(svg: bytes) -> str:
    """Every ``<text>`` of an SVG, joined by spaces (a wrapped title reads as one line)."""
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg.decode("utf-8"))
    joined = " ".join(" ".join(html.unescape(t).split()) for t in texts)
    return re.sub(r"(?<=\w)- ", "-", joined)  # a title wrapped after a hyphen


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_committed_chart_is_redrawn_or_declared_not_in_the_rows() -> None:
    redrawn, missing = [], []
    for slug, fig in _figures("charts"):
        key = (slug, fig["caption"])
        assert (key in bf.CHARTS) != (key in bf.NOT_IN_ROWS), key
        if key in bf.CHARTS:
            drawn = bf.replaced(_results()[slug], fig)
            assert drawn or key in bf.AWAITING_RERUN, f"{key}: no chart has data in the rows"
            redrawn.append(key)
        else:
            missing.append(key)
    named = {(slug, fig["caption"]) for slug, fig in _figures("charts")}
    assert set(bf.CHARTS) <= named and set(bf.NOT_IN_ROWS) <= named  # nothing stale
    assert set(bf.AWAITING_RERUN) <= set(bf.CHARTS)
    assert len(redrawn) == 21 and len(missing) == 0


def test_every_series_and_row_a_chart_names_is_in_its_result() -> None:
    for (slug, _caption), specs in bf.CHARTS.items():
        ids = {row["id"] for row in _results()[slug]["rows"]}
        for spec in specs:
            if isinstance(spec, bf.Shares):  # kept in a note (once the result is rerun)
                groups = bf.share_groups(_results()[slug], spec)
                assert groups or (slug, _caption) in bf.AWAITING_RERUN, slug
                continue
            if isinstance(spec, bf.Sweep):  # kept in the settings or a note: a list per series
                source = bf.sweep_source(_results()[slug], spec)
                if spec.note and spec.series not in source:  # a note from before its data
                    assert (slug, _caption) in bf.AWAITING_RERUN, slug
                    continue
                names, values = source[spec.series], source[spec.values]
                assert len(names) == len(values) and spec.x in source, slug
                continue
            rows = (
                spec.rows
                if isinstance(spec, bf.Dots | bf.Payoff)
                else [rid for series in spec.series for rid in series.rows]
            )
            awaiting = (slug, _caption) in bf.AWAITING_RERUN  # rows a rerun adds
            assert set(rows) <= ids or awaiting, (slug, sorted(set(rows) - ids))


CHAIN = {
    "ns": [4, 9, 16],
    "series": ["none", "per-block", "sqrt"],
    "retained": [[9.0, 19.0, 33.0], [6.0, 11.0, 18.0], [5.0, 8.0, 11.0]],
    "peak": [[10.0, 20.0, 34.0], [8.0, 13.0, 20.0], [7.0, 10.0, 13.0]],
}
"""The chain study's memory as the benchmark keeps it in its ``chain-law`` note (units of one
block input; none: 2n + 1, one checkpoint per block: n + 2)."""


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_the_chain_chart_is_drawn_from_the_note_that_keeps_its_data(lang: str) -> None:
    result = dict(_results()["gradient-checkpointing"])
    notes = [n for n in result["notes"] if n["id"] != "chain-law"]
    result["notes"] = [*notes, {"id": "chain-law", "params": CHAIN}]
    fig = next(f for f in result["figures"] if f["caption"] == "chain")
    charts = bf.figure_charts(result, fig, lang)
    specs = bf.CHARTS[("gradient-checkpointing", "chain")]
    assert [c.name for c in charts] == [
        "gradient-checkpointing-chain-chart-1",
        "gradient-checkpointing-chain-chart-2",
    ]
    text = ResultText("gradient-checkpointing", lang)
    english = ResultText("gradient-checkpointing", "en")
    for chart, spec, kept in zip(charts, specs, ("retained", "peak"), strict=True):
        lines = bf.sweep_lines(result, spec, text)
        assert [[p[1] for p in line.points] for line in lines] == CHAIN[kept]
        assert [[p[0] for p in line.points] for line in lines] == [CHAIN["ns"]] * 3
        words = _svg_texts(chart.rendered().svg)
        for wanted in [*bf.curve_titles(result, spec, text), *(line.label for line in lines)]:
            assert _flat(wanted) in words, (lang, wanted)
        if lang != "en":
            for title in bf.curve_titles(result, spec, english):
                assert _flat(title) not in words, (lang, title)
    result["notes"] = notes  # a result without the note: nothing to draw, not an error
    assert bf.figure_charts(result, fig, lang) == []


RANK_CURVES = {
    "ranks": [1, 2, 3],
    "series": ["q-svd", "q-asvd", "ff-svd", "ff-asvd"],
    "errors": [[0.9, 0.7, 0.5], [0.4, 0.2, 0.1], [0.8, 0.6, 0.4], [0.3, 0.15, 0.05]],
}
"""Output errors per rank as the low-rank benchmark keeps them in its ``break-even-error`` note
(one list per layer and method)."""


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_the_error_vs_rank_chart_is_drawn_from_the_break_even_note(lang: str) -> None:
    result = dict(_results()["low-rank-inference"])
    notes = [n for n in result["notes"] if n["id"] != "break-even-error"]
    result["notes"] = [*notes, {"id": "break-even-error", "params": RANK_CURVES}]
    fig = next(f for f in result["figures"] if f["caption"] == "error-vs-rank")
    (chart,) = bf.figure_charts(result, fig, lang)
    (spec,) = bf.CHARTS[("low-rank-inference", "error-vs-rank")]
    assert chart.name == "low-rank-inference-error-vs-rank-chart-1"
    text = ResultText("low-rank-inference", lang)
    lines = bf.sweep_lines(result, spec, text)
    assert [[p[1] for p in line.points] for line in lines] == RANK_CURVES["errors"]
    assert [[p[0] for p in line.points] for line in lines] == [RANK_CURVES["ranks"]] * 4
    words = _svg_texts(chart.rendered().svg)
    for wanted in [*bf.curve_titles(result, spec, text), *(line.label for line in lines)]:
        assert _flat(wanted) in words, (lang, wanted)
    if lang != "en":
        english = ResultText("low-rank-inference", "en")
        for title in bf.curve_titles(result, spec, english):
            assert _flat(title) not in words, (lang, title)
    assert chart.caption and chart.alt and "%(" not in chart.caption + chart.alt
    result["notes"] = notes  # a result without the curves: nothing to draw, not an error
    assert bf.figure_charts(result, fig, lang) == []


PARETO = {
    "points": 3,
    "series": ["front", "default", "chosen"],
    "latency_ms": [[40.0, 90.0, 300.0], [900.0], [90.0]],
    "fd_select": [[12.0, 6.0, 5.0], [5.5], [6.0]],
}
"""The selection's Pareto front (sorted by latency), the default and the choice, as the grid
search keeps them in its ``pareto-front`` note (one list per series)."""
CURVES = {
    "trials": [1, 2, 3, 4],
    "orders": 2,
    "series": ["grid", "random", "tpe"],
    "best": [[9.0, 7.0, 5.0, 5.0], [9.0, 8.0, 6.0, 5.0], [9.0, 6.0, 5.0, 4.0]],
}
"""Best selection FDD found per trial count, as the grid search keeps it in ``search-curves``."""


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
@pytest.mark.parametrize(
    ("caption", "note_id", "data", "xs", "ys"),
    [
        ("pareto", "pareto-front", PARETO, "latency_ms", "fd_select"),
        ("strategies", "search-curves", CURVES, "trials", "best"),
    ],
)
def test_the_grid_search_charts_are_drawn_per_language_from_the_notes_that_keep_them(
    caption: str, note_id: str, data: dict[str, Any], xs: str, ys: str, lang: str
) -> None:
    result = dict(_results()["grid-search"])
    notes = [n for n in result["notes"] if n["id"] != note_id]
    result["notes"] = [*notes, {"id": note_id, "params": data}]
    fig = next(f for f in result["figures"] if f["caption"] == caption)
    charts = bf.figure_charts(result, fig, lang)
    (spec,) = bf.CHARTS[("grid-search", caption)]
    assert len(charts) == 1
    text, english = ResultText("grid-search", lang), ResultText("grid-search", "en")
    lines = bf.sweep_lines(result, spec, text)
    assert [[p[1] for p in line.points] for line in lines] == data[ys]
    per_series = data[xs] if isinstance(data[xs][0], list) else [data[xs]] * len(data[ys])
    assert [[p[0] for p in line.points] for line in lines] == per_series
    names = [text.message(f"{spec.label}{name}") for name in data["series"]]
    assert [line.label for line in lines] == names
    words = _svg_texts(charts[0].rendered().svg)
    for wanted in [*bf.curve_titles(result, spec, text), *names]:
        assert _flat(wanted) in words, (lang, wanted)
    if lang != "en":
        for title in bf.curve_titles(result, spec, english):
            assert _flat(title) not in words, (lang, title)
    result["notes"] = notes  # the committed result predates the note: nothing drawn yet
    assert bf.figure_charts(result, fig, lang) == []


SR_MECHANISM = {
    "t_loss": [10.0, 990.0],
    "loss_series": ["mean", "rms"],
    "loss": [[0.5, 0.01], [0.7, 0.02]],
    "t": [10.0, 500.0, 990.0],
    "proposal_series": ["uniform", "importance", "edm"],
    "proposal": [[1.0, 1.0, 1.0], [2.0, 0.6, 0.4], [0.3, 2.5, 0.2]],
    "weight_series": ["eps", "v", "x0", "edm"],
    "weight": [[1.0] * 3, [2.0, 1.5, 1.0], [1e-4, 1.0, 1e4], [0.5, 2.0, 0.1]],
}
SR_TRAINING = {
    "examples_seen": [0, 640, 1280],
    "schemes": ["eps", "eps-ld", "eps-is-ld-anti", "v", "x0", "edm"],
    "eps_mse": [[1.0, 0.5 - 0.01 * i, 0.3 - 0.01 * i] for i in range(6)],
    "x0_mse": [[0.6, 0.3 - 0.01 * i, 0.2 - 0.01 * i] for i in range(6)],
}
"""Stochastic reparameterization's chart data as its ``mechanism`` and ``training`` notes keep
it (lists per series; made-up values of the right shapes)."""


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_the_reparameterization_charts_are_drawn_from_the_notes_that_keep_their_data(
    lang: str,
) -> None:
    slug = "stochastic-reparameterization"
    result = dict(_results()[slug])
    kept = {n["id"]: n for n in result["notes"]}
    result["notes"] = [
        *(n for n in result["notes"] if n["id"] not in ("mechanism", "training")),
        {"id": "mechanism", "params": {**kept["mechanism"]["params"], **SR_MECHANISM}},
        {"id": "training", "params": {**kept["training"]["params"], **SR_TRAINING}},
    ]
    text, english = ResultText(slug, lang), ResultText(slug, "en")
    wanted = {"mechanism": (("loss", "t_loss"), ("proposal", "t"), ("weight", "t"))}
    wanted["training"] = (("eps_mse", "examples_seen"), ("x0_mse", "examples_seen"))
    for caption, kinds in wanted.items():
        fig = next(f for f in result["figures"] if f["caption"] == caption)
        charts = bf.figure_charts(result, fig, lang)
        specs = bf.CHARTS[(slug, caption)]
        assert len(charts) == len(specs) == len(kinds) and bf.replaced(result, fig)
        source = SR_MECHANISM if caption == "mechanism" else SR_TRAINING
        for chart, spec, (values, x) in zip(charts, specs, kinds, strict=True):
            lines = bf.sweep_lines(result, spec, text)
            assert [[p[1] for p in line.points] for line in lines] == source[values]
            assert {tuple(p[0] for p in line.points) for line in lines} == {tuple(source[x])}
            words = _svg_texts(chart.rendered().svg)
            for phrase in [*bf.curve_titles(result, spec, text), *(li.label for li in lines)]:
                assert _flat(phrase) in words, (lang, phrase)
            if lang != "en":
                for title in bf.curve_titles(result, spec, english):
                    assert _flat(title) not in words, (lang, title)


SHARES = [
    [0.146, 0.121, 0.118, 0.125, 0.131, 0.119, 0.122, 0.118],
    [0.100, 0.140, 0.130, 0.120, 0.110, 0.150, 0.125, 0.125],
]
"""Expert shares as the benchmark keeps them in its ``utilisation`` note: one list per block
(each sums to 1), one share per expert."""


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_the_utilisation_chart_is_drawn_per_language_from_the_shares_its_note_keeps(
    lang: str,
) -> None:
    result = dict(_results()["mixture-of-experts"])
    kept = next(n for n in result["notes"] if n["id"] == "utilisation")
    others = [n for n in result["notes"] if n["id"] != "utilisation"]
    result["notes"] = [
        *others,
        {"id": "utilisation", "params": {**kept["params"], "shares": SHARES}},
    ]
    fig = next(f for f in result["figures"] if f["caption"] == "utilisation")
    (spec,) = bf.CHARTS[("mixture-of-experts", "utilisation")]
    assert bf.share_groups(result, spec) == SHARES
    (chart,) = bf.figure_charts(result, fig, lang)
    assert chart.name == "mixture-of-experts-chart-1" and bf.replaced(result, fig)
    text, english = ResultText("mixture-of-experts", lang), ResultText("mixture-of-experts", "en")
    words = _svg_texts(chart.rendered().svg)
    wanted = [*_expected_titles(result, spec, text), *_series_labels(result, spec, text)]
    for phrase in [*wanted, *(f"E{e}" for e in range(8))]:
        assert _flat(phrase) in words, (lang, phrase)
    assert ("12,5" if lang != "en" else "12.5") in words  # the even share, in the locale's digits
    assert chart.caption == text.message(spec.caption)
    if lang != "en":
        unwanted = [
            *_expected_titles(result, spec, english),
            *_series_labels(result, spec, english),
        ]
        for phrase in unwanted:
            assert _flat(phrase) not in words, (lang, phrase)
        assert chart.caption != english.message(spec.caption)


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_a_utilisation_note_without_shares_keeps_the_committed_png(lang: str) -> None:
    result = dict(_results()["mixture-of-experts"])
    kept = next(n for n in result["notes"] if n["id"] == "utilisation")
    params = {k: v for k, v in kept["params"].items() if k != "shares"}
    others = [n for n in result["notes"] if n["id"] != "utilisation"]
    result["notes"] = [*others, {"id": "utilisation", "params": params}]
    fig = next(f for f in result["figures"] if f["caption"] == "utilisation")
    assert bf.figure_charts(result, fig, lang) == [] and not bf.replaced(result, fig)
    files = {f["file"]: f"../assets/results/{f['file']}" for f in result["figures"]}
    markup = "\n".join(
        committed_figures(result, ResultText("mixture-of-experts", lang), files, {}, str)
    )
    png = "../assets/results/mixture-of-experts.png"
    if lang == "en":
        assert png in PNG_IMG.findall(markup)
    else:  # a link to the English figure, as for a chart whose data is not in the rows
        assert png not in PNG_IMG.findall(markup)
        assert f'href="{png}" hreflang="en"' in markup


def _expected_titles(result: dict[str, Any], spec: bf.Spec, text: ResultText) -> list[str]:
    if isinstance(spec, bf.Shares):
        return [text.message(spec.x_title), text.message(spec.y_title)]
    if isinstance(spec, bf.Dots):
        return [bf.dots_title(result, spec, text)]
    return list(bf.curve_titles(result, spec, text))


def _series_labels(result: dict[str, Any], spec: bf.Spec, text: ResultText) -> list[str]:
    if isinstance(spec, bf.Shares):
        blocks = len(bf.share_groups(result, spec))
        even = 100 / len(bf.share_groups(result, spec)[0])
        groups = [text.message(spec.group, {"block": b + 1}) for b in range(blocks)]
        return [*groups, text.message(spec.even, {"share": even})]
    if isinstance(spec, bf.Dots):
        return [text.metric(m) for m in spec.metrics] if len(spec.metrics) > 1 else []
    if isinstance(spec, bf.Sweep):
        return [line.label for line in bf.sweep_lines(result, spec, text)]
    if isinstance(spec, bf.Payoff):
        return [line.label for line in bf.payoff_lines(result, spec, text)]
    return [line.label for line in bf.curve_lines(result, spec, text)]


@functools.cache
def _drawn(lang: str) -> dict[str, tuple[bytes, list[str], list[str]]]:
    """Every redrawn chart in ``lang``: its SVG, its axis titles and its series labels."""
    out = {}
    for slug, fig in _figures("charts"):
        result = _results()[slug]
        text = ResultText(slug, lang)
        specs = bf.CHARTS.get((slug, fig["caption"]), ())
        for chart, spec in zip(bf.figure_charts(result, fig, lang), specs, strict=False):
            titles = _expected_titles(result, spec, text)
            out[chart.name] = (chart.rendered().svg, titles, _series_labels(result, spec, text))
    return out


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_each_redrawn_chart_has_its_axis_titles_and_series_in_the_language(lang: str) -> None:
    charts = _drawn(lang)
    assert len(charts) >= 18
    for name, (svg, titles, series) in charts.items():
        assert b'width="' in svg[:2000] and b"<text" in svg, name
        words = _svg_texts(svg)
        for wanted in [*titles, *series]:
            assert _flat(wanted) in words, (name, wanted)
        assert "…" not in words, name  # nothing was cut to fit


@pytest.mark.parametrize("lang", READER_LANGS)
def test_no_english_axis_title_or_series_in_a_reader_chart(lang: str) -> None:
    for name, (svg, titles, series) in _drawn(lang).items():
        _, en_titles, en_series = _drawn("en")[name]
        proper = name.startswith("scheduler-tradeoff-")  # the samplers' published names
        mine_all = titles if proper else [*titles, *series]
        english_all = en_titles if proper else [*en_titles, *en_series]
        for mine, english in zip(mine_all, english_all, strict=True):
            assert mine != english, (name, lang, english)
        words = _svg_texts(svg)
        for english in en_titles:
            assert _flat(english) not in words, (name, english)


@pytest.mark.parametrize(("slug", "fig"), _figures(SAMPLES), ids=lambda v: str(v)[:30])
def test_sample_grid_rows_are_the_benchmarks_in_the_captions_order(
    slug: str, fig: dict[str, Any]
) -> None:
    result = _results()[slug]
    rows = {row["id"]: row for row in result["rows"]}
    grid = bf.sample_rows(result)
    caption = ResultText(slug, "en").caption(fig)
    phrases = CAPTION_ORDER[slug]
    where = [caption.find(p) for p in phrases]
    assert all(i >= 0 for i in where) and where == sorted(where), (caption, phrases)
    assert [rows[rid]["config"]["method"] for rid, _ in grid] == list(CAPTION_METHOD[slug])
    if slug in HEADLINE_SECOND:  # "... at the headline k / scale / interval / steps"
        assert grid[1][0] == result["headline"]["row"]
    repeats = {n for _, n in grid}
    assert repeats == ({2} if "two rows" in caption else {1})


def _blocks(slug: str, lang: str) -> str:
    """The figure blocks of a committed result's page in ``lang`` (charts not drawn)."""
    result = _results()[slug]
    files = {f["file"]: f"../assets/results/{f['file']}" for f in result["figures"]}
    drawn = {f["file"]: bf.figure_charts(result, f, lang) for f in result["figures"]}
    return "\n".join(
        committed_figures(
            result,
            ResultText(slug, lang),
            files,
            drawn,
            lambda chart: f"../assets/results/{lang}/{chart.name}.svg",
        )
    )


def _not_drawn(result: dict[str, Any], fig: dict[str, Any]) -> bool:
    """A chart kept as its PNG: declared not in the rows, or awaiting the rerun that stores
    its data (and not yet carrying it)."""
    key = (result["slug"], fig["caption"])
    return key in bf.NOT_IN_ROWS or (key in bf.AWAITING_RERUN and not bf.replaced(result, fig))


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
@pytest.mark.parametrize(
    "slug", sorted({slug for slug, _ in _figures("charts")} | {s for s, _ in _figures(SAMPLES)})
)
def test_committed_result_pages_embed_no_english_chart(slug: str, lang: str) -> None:
    markup = _blocks(slug, lang)
    result = _results()[slug]
    for src in PNG_IMG.findall(markup):
        name = Path(src).name
        fig = next(f for f in result["figures"] if f["file"] == name)
        if fig["caption"] == SAMPLES:
            continue
        assert lang == "en" and _not_drawn(result, fig), (lang, name)
    for slug_fig in result["figures"]:
        if (slug, slug_fig["caption"]) in bf.CHARTS:
            for chart in bf.figure_charts(result, slug_fig, lang):
                assert f"assets/results/{lang}/{chart.name}.svg" in markup
        if slug_fig["caption"] != SAMPLES and _not_drawn(result, slug_fig) and lang != "en":
            assert f'href="../assets/results/{slug_fig["file"]}" hreflang="en"' in markup
    for rid, _ in bf.sample_rows(result):
        row = next(r for r in result["rows"] if r["id"] == rid)
        assert html.escape(ResultText(slug, lang).config(row["config"]), quote=False) in markup


# ------------------------------------------------------------------------- the fixture build


def _article(page: str) -> str:
    return page.split('id="benchmark"')[1].split('id="sources"')[0]


@pytest.mark.parametrize("lang", READER_LANGS)
def test_built_reader_pages_embed_png_only_for_labelled_sample_grids(
    built: site_support.BuiltSite, lang: str
) -> None:
    site_support.require_ok(built)
    pages = sorted((built.site / lang / "terms").glob("*/index.html"))
    grids = 0
    for page in pages:
        markup = page.read_text(encoding="utf-8")
        for src in PNG_IMG.findall(markup):
            assert src.endswith("-samples.png"), (page, src)
            after = markup.split(f'src="{src}"', 1)[1]
            figure_end = after.index("</figure>")
            rows = after[figure_end:].lstrip().removeprefix("</figure>").lstrip()
            assert rows.startswith('<p class="gl-sample-rows">'), page
            grids += 1
    assert grids >= 1  # the fixture's pruning grid


@pytest.mark.parametrize("lang", ["es", "ru", "en"])
def test_built_replaced_charts_exist_per_language_with_translated_axes(
    built: site_support.BuiltSite, lang: str
) -> None:
    site_support.require_ok(built)
    page = built.html(lang, "terms/pruning")
    src = f"assets/results/{lang}/pruning-chart-1.svg"
    assert src in _article(page)
    svg = (built.site / src).read_bytes()
    axis = {"es": "Fracción de canales eliminados", "ru": "Доля удалённых каналов"}
    english = "Fraction of channels removed"
    words = _svg_texts(svg)
    assert axis.get(lang, english) in words
    if lang != "en":
        assert english not in words
    assert not (built.site / "assets" / "results" / "pruning.png").exists()
    assert (built.site / "assets" / "results" / "pruning-samples.png").is_file()
    labels = {"es": "U-Net profesor (densa)", "ru": "U-Net учителя (плотная)", "en": "Teacher"}
    rows = page.split('<ol class="gl-sample-rows">')[1].split("</ol>")[0]
    assert rows.count("<li>") == 3 and labels[lang].lower() in rows.lower()
