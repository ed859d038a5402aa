"""The "On a diffusers model" section of the technique pages (glossary.site.production).

Rendered without MkDocs from the real entries: every technique with a production shape gets the
section in es, ru and en, between "Run it" and the link to the code documentation, with the
translated heading, the real import and call, and the supported and refused classes of the code
(read from the source with ``ast``; one test imports the modules and compares with the running
values); the other pages have none, and an es or ru section holds no English outside code.
"""

from __future__ import annotations

import html.parser
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from glossary.loader import load_glossary
from glossary.schema import LANGS
from glossary.site import context, production, results, terms

REPO = Path(__file__).resolve().parent.parent
HEADINGS = {
    "es": "En un modelo de diffusers",
    "ru": "На модели diffusers",
    "en": "On a diffusers model",
}
LABELS = {
    "es": ("Admite", "Rechaza"),
    "ru": ("Поддерживает", "Отклоняет"),
    "en": ("Supported", "Refused"),
}
WITHOUT_SHAPE = ("gradient-checkpointing", "mixture-of-experts", "stochastic-reparameterization")
CONCEPT = "attention"


@cache
def _ctx() -> context.Context:
    return context.Context(
        glossary=load_glossary(REPO / "glossary" / "entries"),
        results=results.load_results(REPO / "no-results-here"),
        module_exists=lambda module: True,
    )


@cache
def page(slug: str, lang: str) -> str:
    ctx = _ctx()
    return terms.term_page(ctx.glossary[slug], lang, ctx)


def section(slug: str, lang: str) -> str:
    """The section's Markdown, from its heading to the next level-2 heading."""
    text = page(slug, lang)
    start = text.index(f"## {HEADINGS[lang]} {{#{production.ANCHOR}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def listed(block: str, label: str) -> list[str]:
    """The classes of the section's items that start with ``label`` (``- Label: `A`, `B`...``)."""
    names: list[str] = []
    for line in block.splitlines():
        if line.startswith(f"- {label}: "):
            names += re.findall(r"`([A-Za-z0-9]+)`", line.split(" — ")[0])
    return names


def call_blocks(block: str) -> list[str]:
    """The section split per call (each starts with ```function`: ``)."""
    return re.split(r"\n(?=`[a-z_]+`: )", block)[1:]


def _en_messages() -> list[str]:
    path = REPO / "glossary" / "locale" / "en" / "LC_MESSAGES" / "production.po"
    with path.open("rb") as fh:
        return [m.string for m in read_po(fh) if m.id]


def _prose(block: str) -> str:
    """``block`` without code: fenced blocks and inline code removed."""
    no_fences = re.sub(r"^```.*?^```", "", block, flags=re.S | re.M)
    return re.sub(r"`[^`]*`", "", no_fences)


SLUGS = sorted(production.CALLS)


def test_every_listed_technique_is_an_entry_with_a_reference_implementation() -> None:
    glossary = _ctx().glossary
    for slug in SLUGS:
        assert slug in glossary and glossary[slug].reference is not None, slug
    assert set(WITHOUT_SHAPE).isdisjoint(SLUGS)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("slug", SLUGS)
def test_the_section_is_on_the_page_between_run_it_and_the_code(slug: str, lang: str) -> None:
    text = page(slug, lang)
    here = text.index(f"## {HEADINGS[lang]} {{#{production.ANCHOR} data-search-exclude}}")
    assert text.index("{#run-it") < here < text.index("{#api")
    if "{#sources" in text:
        assert here < text.index("{#sources")
    assert text.count(f"{{#{production.ANCHOR}") == 1


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("slug", SLUGS)
def test_each_call_shows_its_real_import_and_call(slug: str, lang: str) -> None:
    blocks = call_blocks(section(slug, lang))
    calls = production.CALLS[slug]
    assert len(blocks) == len(calls)
    for block, call in zip(blocks, calls, strict=True):
        code = re.search(r"```python\n(.*?)\n```", block, flags=re.S)
        assert code is not None
        first = code[1].splitlines()[0]
        imported = re.fullmatch(rf"from {re.escape(call.module)} import (.+)", first)
        assert imported is not None, first
        names = imported[1].split(", ")
        defined = production.top_level_names(call.module)
        assert call.function in names and set(names) <= defined
        assert f"{call.function}(" in code[1]
        undone = ".remove()" in code[1] or "with " in code[1] or "original" in code[1]
        assert undone or not re.search(r"\bpipe\b", code[1])  # run_async: no change here


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("slug", SLUGS)
def test_the_page_lists_the_classes_of_the_code(slug: str, lang: str) -> None:
    accepts, refuses = LABELS[lang]
    everything = set(production.production_classes())
    for block, call in zip(call_blocks(section(slug, lang)), production.CALLS[slug], strict=True):
        if call.supported is None:  # a scheduler swap: refused by the scheduler's class name
            prefix = production.flow_matching_prefix()
            refusal = next(line for line in block.splitlines() if line.startswith(f"- {refuses}"))
            assert re.findall(r"`([^`]+)`", refusal) == [prefix]
            continue
        supported = listed(block, accepts)
        refused = listed(block, refuses)
        assert supported == list(production.supported_classes(call))
        assert set(supported) | set(refused) == everything
        assert set(refused) == set(call.reasons)


def test_the_source_reader_agrees_with_the_running_code() -> None:
    """The page's lists are read from the source; the running module must say the same (this
    fails when a constant is computed in a way the reader misreads)."""
    pytest.importorskip("diffusers")
    import importlib

    from reference.zoo.shapes import CLASS_OF

    assert production.production_classes() == tuple(CLASS_OF.values())
    for calls in production.CALLS.values():
        for call in calls:
            module = importlib.import_module(call.module)
            assert callable(getattr(module, call.function))
            if call.config:
                assert isinstance(getattr(module, call.config), type)
            if call.supported is not None:
                running = tuple(getattr(module, call.supported))
                assert production.supported_classes(call) == running, call.function
    from reference.scheduler_tradeoff import production as schedulers

    assert production.flow_matching_prefix() == schedulers.FLOW_MATCHING_PREFIX


def test_the_reasons_cover_exactly_what_the_code_refuses() -> None:
    for calls in production.CALLS.values():
        for call in calls:
            assert set(call.reasons) == set(production.refused_classes(call)), call.function
    # where the code names its refused classes itself, the page refuses the same ones
    code_refused = {
        ("reference.pruning.production", "REFUSED"): "apply_structured_pruning",
        ("reference.classifier_guidance.production", "CFG_REFUSED"): "apply_cfg",
        ("reference.classifier_guidance.production", "CG_REFUSED"): "apply_classifier_guidance",
    }
    by_function = {c.function: c for calls in production.CALLS.values() for c in calls}
    for (module, name), function in code_refused.items():
        assert set(production.constant(module, name)) == set(by_function[function].reasons)


def test_a_class_the_code_refuses_without_a_reason_stops_the_page() -> None:
    call = production.CALLS["pruning"][0]
    bare = production.Call(
        call.key, call.module, call.function, call.config, call.snippet, call.supported, {}
    )
    with pytest.raises(production.CodeReadError, match="no page says why"):
        production.class_lines(bare, "es", lambda s: s)


@pytest.mark.parametrize("slug", [*WITHOUT_SHAPE, CONCEPT])
@pytest.mark.parametrize("lang", LANGS)
def test_pages_without_a_production_shape_have_no_section(slug: str, lang: str) -> None:
    assert f"{{#{production.ANCHOR}" not in page(slug, lang)
    assert HEADINGS[lang] not in page(slug, lang)


@pytest.mark.parametrize("lang", ["es", "ru"])
def test_no_english_outside_code_on_spanish_and_russian_sections(lang: str) -> None:
    english = [*_en_messages(), *LABELS["en"], HEADINGS["en"]]
    for slug in SLUGS:
        prose = _prose(section(slug, lang))
        assert not re.search(r"\b(?:does|reason|supported|refused)\.[a-z-]+", prose), slug
        found = [m for m in english if _prose(m).strip(" .") in prose]
        assert found == [], (slug, found)
        sentences = [s for s in re.split(r"(?<=[.:])\s", prose) if len(s) > 30]
        assert sentences, slug


def test_every_message_the_sections_use_is_in_every_language() -> None:
    for lang in LANGS:
        path = REPO / "glossary" / "locale" / lang / "LC_MESSAGES" / "production.po"
        with path.open("rb") as fh:
            ids = {m.id for m in read_po(fh) if m.id}
        for calls in production.CALLS.values():
            for call in calls:
                wanted = {f"does.{call.key}", *(f"reason.{r}" for r in call.reasons.values())}
                assert wanted <= ids, (lang, wanted - ids)


def test_an_unreadable_constant_is_one_line() -> None:
    with pytest.raises(production.CodeReadError, match="no top-level constant NOPE"):
        production.constant("reference.zoo.shapes", "NOPE")
    with pytest.raises(production.CodeReadError, match="cannot read"):
        production.constant("reference.scheduler_tradeoff.production", "COMPATIBLES")


def test_the_section_is_written_without_torch_or_diffusers() -> None:
    code = (
        "import sys\n"
        "from glossary.site.production import CALLS, production_section\n"
        "for slug in CALLS:\n"
        "    assert production_section(slug, 'ru', lambda s: s)\n"
        "assert 'torch' not in sys.modules and 'diffusers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


class _Text(html.parser.HTMLParser):
    """The text nodes of an HTML fragment outside ``<code>`` and ``<pre>``."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.depth += tag in ("code", "pre")

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag in ("code", "pre")

    def handle_data(self, data: str) -> None:
        if not self.depth and data.strip():
            self.texts.append(data.strip())


@pytest.mark.parametrize("lang", ["es", "ru"])
def test_the_rendered_section_reads_in_the_page_language(lang: str) -> None:
    markdown = pytest.importorskip("markdown")
    extensions = ["attr_list", "admonition", "tables", "pymdownx.superfences"]
    for slug in SLUGS:
        markup = markdown.markdown(section(slug, lang), extensions=extensions)
        heading = f'<h2 data-search-exclude id="{production.ANCHOR}">{HEADINGS[lang]}</h2>'
        assert markup.startswith(heading), markup[:120]
        assert markup.count("<pre>") == len(production.CALLS[slug])
        parser = _Text()
        parser.feed(markup)
        letters = "".join(parser.texts)
        latin = sum(c.isascii() and c.isalpha() for c in letters)
        if lang == "ru":  # Russian prose: Cyrillic letters outnumber the Latin ones of names
            assert latin < sum("а" <= c.lower() <= "я" or c in "ёЁ" for c in letters), slug
        english_words = {"the", "and", "of", "every", "which", "whose", "runs"}
        words = {w.lower() for t in parser.texts for w in re.findall(r"[A-Za-z]+", t)}
        assert words.isdisjoint(english_words), (slug, words & english_words)
