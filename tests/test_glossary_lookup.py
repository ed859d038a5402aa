"""Normalization and fuzzy lookup: unit tests and hypothesis properties.

The properties run on the fixture entries and, once all 77 exist, on the real ones.

Typo model (one typo per query): pick a run of at least five letters in the name (a word, or the
letters between hyphens and other punctuation), then delete one of its letters or replace it
with another letter of the same alphabet (Latin or Cyrillic). Shorter runs ("MoE", "LCM", "TPU",
the "ε" of "ε-prediction") get no typo: one edit in a three-letter
abbreviation makes a different abbreviation, so no lookup could be expected to undo it. Such
names are listed by ``short_names`` and tested for exact, case- and accent-insensitive matching
instead. A typo that turns the name into another entry's name in the same language is not a typo
but a different query, and is skipped explicitly (``assume``).
"""

from __future__ import annotations

import contextlib
import io
import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest
from glossary_support import REAL, VALID, copy_valid, datasets, edit, private_cache
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from glossary import cli
from glossary.loader import load_glossary
from glossary.lookup import MATCH_THRESHOLD, MAX_QUERY_CHARS, Index, decide, resolve
from glossary.normalize import normalize, transliterations
from glossary.schema import LANGS

_cache = pytest.fixture(autouse=True, scope="module")(private_cache)
LATIN = "abcdefghijklmnopqrstuvwxyz"
CYRILLIC = "абвгдежзийклмнопрстуфхцчшщъыьэюя"
MIN_TYPO_WORD = 5


@cache
def index_of(directory: Path) -> Index:
    return Index(load_glossary(directory))


def names_of(directory: Path) -> list[tuple[str, str, str]]:
    """(slug, lang, name) for every term and alias."""
    g = index_of(directory).glossary
    return [(e.slug, lang, name) for e in g for lang in LANGS for name in e.lang[lang].names]


def strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def letter_runs(name: str) -> list[re.Match[str]]:
    """Maximal runs of letters long enough for a typo ("ε-предсказание" -> "предсказание")."""
    return [m for m in re.finditer(r"[^\W\d_]+", name) if len(m.group()) >= MIN_TYPO_WORD]


def first(directory: Path, query: str, lang: str) -> str | None:
    found = index_of(directory).search(query, lang, limit=1)
    if not found or found[0].score < MATCH_THRESHOLD:
        return None
    return found[0].entry.slug


# --- normalization ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ñandú", "nandu"),
        ("ЁМКОСТЬ", "емкость"),
        ("Настройка й", "настройка й"),
        ("low-rank   inference", "low rank inference"),
        ("Mixture of Experts (MoE)", "mixture of experts moe"),
        ("ﬁne-tuning", "fine tuning"),
        ("Straße", "strasse"),
        ("ＤＤＩＭ", "ddim"),
        ("  \t\x00 ", ""),
        ("Época\u200b", "epoca"),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


# --- lookup -----------------------------------------------------------------------------------


def test_exact_match_scores_100_and_ranks_first() -> None:
    found = index_of(VALID).search("EMA", None)
    assert found[0].entry.slug == "ema" and found[0].score == 100.0 and found[0].exact
    assert all(c.score < 100.0 for c in found[1:])


def test_query_is_truncated() -> None:
    long = "Feature Caching " + "x" * 10_000
    found = index_of(VALID).search(long, None)
    assert found == index_of(VALID).search(long[:MAX_QUERY_CHARS], None)


def test_resolve() -> None:
    g = load_glossary(VALID)
    assert resolve(g, "ema") is g["ema"]
    assert resolve(g, "Caché de caracteristicas") is g["feature-caching"]
    assert resolve(g, "qqqqqqqq") is None


def test_lookup_does_not_import_numpy_through_rapidfuzz() -> None:
    import subprocess
    import sys

    code = "import sys, rapidfuzz.process, rapidfuzz.fuzz; print('numpy' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


# --- properties -------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=st.one_of(st.text(max_size=300), st.text(min_size=1000, max_size=5000)))
def test_no_input_crashes_lookup(query: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--entries", str(VALID), "lookup", "--", query])
    assert code in (0, 1, 2)
    assert "Traceback" not in err.getvalue()
    assert len(err.getvalue().splitlines()) <= 1


@pytest.mark.parametrize("directory", datasets())
def test_every_name_finds_its_entry(directory: Path) -> None:
    """Exactly, uppercased and without accents: deterministic over every name."""
    seen: set[tuple[str, str]] = set()
    for slug, lang, name in names_of(directory):
        for query in (name, name.upper(), strip_accents(name)):
            if (lang, normalize(query)) in seen:  # same normalized query: same answer
                continue
            seen.add((lang, normalize(query)))
            assert first(directory, query, lang) == slug, (slug, lang, query)


@pytest.mark.parametrize("directory", datasets())
def test_short_names_are_listed(directory: Path) -> None:
    """Names with no word long enough for a typo; they are matched exactly (test above)."""
    short = [name for _, _, name in names_of(directory) if not letter_runs(name)]
    for name in short:
        assert all(len(w) < MIN_TYPO_WORD for w in re.findall(r"[^\W\d_]+", name))
    if directory == VALID:
        assert sorted(set(short)) == ["DDIM", "DP", "EMA", "Poda de Red"]


def make_typo(name: str, run: int, pos: int, letter: int, delete: bool) -> str:
    runs = letter_runs(name)
    m = runs[run % len(runs)]
    i = m.start() + pos % len(m.group())
    if delete:
        return name[:i] + name[i + 1 :]
    alphabet = CYRILLIC if "CYRILLIC" in unicodedata.name(name[i], "") else LATIN
    choices = [c for c in alphabet if normalize(c) != normalize(name[i])]
    return name[:i] + choices[letter % len(choices)] + name[i + 1 :]


@pytest.mark.parametrize("directory", datasets())
def test_one_typo_still_finds_the_entry(directory: Path) -> None:
    names = [n for n in names_of(directory) if letter_runs(n[2])]
    keys = {(lang, normalize(name)): slug for slug, lang, name in names_of(directory)}

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(
        which=st.sampled_from(names),
        run=st.integers(0, 10),
        pos=st.integers(0, 60),
        letter=st.integers(0, 40),
        delete=st.booleans(),
        upper=st.booleans(),
    )
    def prop(
        which: tuple[str, str, str], run: int, pos: int, letter: int, delete: bool, upper: bool
    ) -> None:
        slug, lang, name = which
        query = make_typo(name, run, pos, letter, delete)
        other = keys.get((lang, normalize(query)))
        assume(other is None or other == slug)  # the "typo" is another entry's name
        if upper:
            query = query.upper()
        assert first(directory, query, lang) == slug, (slug, lang, name, query)

    prop()


# --- tiers: identifiers and texts -------------------------------------------------------------


def edited_index(tmp_path: Path, slug: str, old: str, new: str) -> Index:
    d = copy_valid(tmp_path)
    edit(d, slug, old, new)
    return Index(load_glossary(d))


def test_library_and_source_names_are_found() -> None:
    for query, slug, where in [
        ("EMAModel", "ema", "library"),
        ("torch.nn.utils.prune", "pruning", "library"),
        ("DeepCache", "feature-caching", "alias"),  # also a method (its source's): names first
        ("Structural Pruning for Diffusion Models", "pruning", "source"),
        ("Acceleration of Stochastic Approximation by Averaging", "ema", "source"),
    ]:
        found = index_of(VALID).search(query)
        assert decide(found).kind == "match", query
        assert (found[0].slug, found[0].where) == (slug, where), query


def test_a_method_only_mentioned_ranks_below_one_cited(tmp_path: Path) -> None:
    index = edited_index(
        tmp_path,
        "pruning",
        "      Test fixture.",
        "      DepGraph groups coupled layers; the EMAModel of the weights is kept; W4A8 too.",
    )
    found = index.search("DepGraph")
    assert (found[0].slug, found[0].tier, found[0].where) == ("pruning", 2, "method")
    found = index.search("EMAModel")  # a library of ema, only mentioned by pruning
    assert decide(found).best.slug == "ema"
    assert [c.slug for c in found[:2]] == ["ema", "pruning"] and found[1].score < found[0].score
    found = index.search("the W4A8 format")  # a code word inside a longer query
    assert decide(found).best.slug == "pruning" and found[0].where == "method"


def test_a_passage_of_the_texts_is_found_with_its_field() -> None:
    for query, slug, lang, where in [
        ("unimportant channels", "pruning", "en", "definition"),
        ("canal poco importante", "pruning", "es", "definition"),  # stems and stop words
        ("сокращает время вывода", "pruning", "ru", "note"),  # words in another order
    ]:
        found = index_of(VALID).search(query)
        best = decide(found).best
        assert best is not None, query
        assert (best.slug, best.tier, best.name.lang, best.where) == (slug, 3, lang, where)


def test_words_of_a_query_far_apart_in_a_text_are_no_match(tmp_path: Path) -> None:
    far = "weights " + "and then some other words " * 6 + "latency"
    index = edited_index(tmp_path, "pruning", "      Test fixture.", "      " + far)
    assert decide(index.search("latency weights")).kind == "none"
    near = "latency weights"  # the same two words together, in another entry
    index = edited_index(
        tmp_path / "2", "ema", "    explanation: Test fixture.", f"    explanation: {near}"
    )
    assert decide(index.search("latency weights")).best.slug == "ema"


def test_text_search_folds_yo_and_accents_and_stems() -> None:
    from glossary import textsearch

    assert [w for *_, w in textsearch.words("Ёмкость, CUANTIZACIÓN")] == ["емкость", "cuantizacion"]
    assert textsearch.query_terms("es", "las cuantizaciones") == textsearch.query_terms(
        "es", "cuantización"
    )
    docs = textsearch.MemoryPostings([("a", "ru", "definition", "Ёмкость модели растёт")])
    for query in ("емкость модели", "ёмкость моделей"):
        terms = textsearch.query_terms("ru", query)
        assert list(textsearch.bm25(docs, "ru", terms)) == [0], query


def test_bm25_prefers_the_text_that_says_it_more() -> None:
    from glossary import textsearch

    docs = textsearch.MemoryPostings(
        [
            ("a", "en", "explanation", "routing tokens to experts " + "filler words " * 20),
            ("b", "en", "explanation", "routing tokens: routing decides which expert runs"),
            ("c", "en", "explanation", "nothing relevant here at all"),
        ]
    )
    hits = textsearch.bm25(docs, "en", textsearch.query_terms("en", "routing"))
    assert sorted(hits, key=lambda d: -hits[d][0]) == [1, 0]
    assert all(0 < score <= 100 for score, _ in hits.values())


@pytest.mark.parametrize(
    ("query", "expected"),
    [("лора", "lora"), ("юнет", "yunet"), ("kvantovanie", "квантование"), ("ddim", "ддим")],
)
def test_transliterations(query: str, expected: str) -> None:
    assert expected in transliterations(normalize(query))


def test_names_tied_are_told_apart_by_their_texts_only_when_decisive() -> None:
    real = index_of(REAL)
    found = real.search("bajo rango")  # in the names of low-rank inference and LoRA alike
    assert found[0].slug == "low-rank-inference" and found[0].support is not None
    assert decide(found).kind == "match"
    exact = index_of(VALID).search("DDIM")  # an exact name is never overruled
    assert exact[0].exact and exact[0].support is None
