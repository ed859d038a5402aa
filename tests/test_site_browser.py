"""Browser tests: Playwright drives Debian's chromium against the built site on 127.0.0.1.

Skipped (with the reason) only when /usr/bin/chromium is missing and the environment variable
CI is not set; under CI they fail instead, since CI installs chromium (``make browser``).
Screenshots of a term page in each language go to artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from tests import site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import site_support  # type: ignore[no-redef]

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("site")]
BuiltSite = site_support.BuiltSite
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SCREENSHOTS = site_support.REPO / "artifacts" / "screenshots"
TIMEOUT_MS = 20_000


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _unavailable(reason: str) -> None:
    if _in_ci():
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    root = site_support.shared_root(tmp_path_factory)
    return site_support.require_ok(site_support.session_build(str(root)))


@pytest.fixture(scope="module")
def base_url(built: BuiltSite) -> Iterator[str]:
    with site_support.serve(built.site) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        _unavailable(f"{CHROMIUM} is missing; install it with `make browser` (apt chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is missing (test extra)")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Any, base_url: str) -> Iterator[Any]:
    context = browser.new_context(
        base_url=base_url,
        locale="en-US",  # the first-visit redirect follows navigator.languages
        permissions=["clipboard-read", "clipboard-write"],
        viewport={"width": 1280, "height": 900},
    )
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    dialogs: list[str] = []
    tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    tab.dialogs = dialogs
    try:
        yield tab
    finally:
        context.close()


def _search(page: Any, start: str, query: str) -> list[str]:
    """Type ``query`` into Material's search on ``start``; return the result links."""
    page.goto(start)
    field = page.locator("input.md-search__input")
    field.click()
    field.press_sequentially(query, delay=20)
    # Playwright inserts characters absent from the US layout (Cyrillic) without key events;
    # Material reads the query on keyup, which a real keyboard sends. Press End to send one.
    field.press("End")
    page.locator(".md-search-result__item > a").first.wait_for()
    return page.locator(".md-search-result__item > a").evaluate_all(
        "links => links.map(a => new URL(a.href).pathname)"
    )


def test_spanish_search_for_poda_finds_pruning(page: Any) -> None:
    assert "/es/terms/pruning/" in _search(page, "es/", "poda")


def test_russian_search_for_caching_finds_feature_caching(page: Any) -> None:
    assert "/ru/terms/feature-caching/" in _search(page, "ru/", "кэширование")


_WORKER_QUERY = """async ({pipeline, queries}) => {
  const config = JSON.parse(document.getElementById("__config").textContent);
  const base = new URL(config.base, location.href);
  const index = await (await fetch(new URL("search/search_index.json", base))).json();
  if (pipeline) index.config.pipeline = pipeline;
  const worker = new Worker(new URL(config.search, location.href));
  const ask = message => new Promise(resolve => {
    worker.onmessage = event => resolve(event.data);
    worker.postMessage(message);
  });
  await ask({type: 0, data: {config: index.config, docs: index.docs, options: {}}});
  const found = {};
  for (const query of queries) {
    const answer = await ask({type: 2, data: query});
    found[query] = answer.data.items.map(group => group[0].location);
  }
  worker.terminate();
  return found;
}"""


def test_stemmed_index_would_lose_whole_words(page: Any) -> None:
    """Why the index has no stemmer: Material's worker appends '*' to every query term and
    lunr does not stem wildcard terms, so with a stemmer whole words stop matching."""
    page.goto("es/")
    queries = ["poda", "кэширование"]
    plain = page.evaluate(_WORKER_QUERY, {"pipeline": None, "queries": queries})
    stemmed = page.evaluate(
        _WORKER_QUERY, {"pipeline": ["stemmer", "stopWordFilter", "trimmer"], "queries": queries}
    )
    assert "es/terms/pruning/" in plain["poda"]
    assert "ru/terms/feature-caching/" in plain["кэширование"]
    assert "es/terms/pruning/" not in stemmed["poda"]
    assert "ru/terms/feature-caching/" not in stemmed["кэширование"]


@pytest.mark.parametrize(("start", "target"), [("es", "ru"), ("ru", "en"), ("en", "es")])
def test_language_switch_keeps_the_term(page: Any, start: str, target: str) -> None:
    prefix = site_support.LANG_PREFIX
    page.goto(f"{prefix[start]}terms/feature-caching/")
    page.locator(".md-header__option .md-select").hover()
    page.locator(f'.md-select__link[hreflang="{target}"]').click()
    page.wait_for_url(f"**/{prefix[target]}terms/feature-caching/")
    assert page.evaluate("document.documentElement.lang") == target


def test_copy_button_copies_the_run_command(page: Any) -> None:
    page.goto("terms/feature-caching/")
    block = page.locator("#run-it ~ div.highlight").first
    block.hover()
    block.locator("button[data-md-type='copy']").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == ".venv/bin/python -m reference.feature_caching"


def test_benchmark_plot_loads(page: Any) -> None:
    page.goto("es/terms/feature-caching/")
    image = page.locator("img[src$='assets/results/feature-caching.png']")
    image.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete", arg=image.element_handle())
    assert image.evaluate("img => img.naturalWidth") > 0


@pytest.mark.parametrize("lang", site_support.LANGS)
def test_entry_markup_does_not_run(page: Any, lang: str) -> None:
    page.goto(f"{site_support.LANG_PREFIX[lang]}terms/xss-probe/")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert page.dialogs == []
    article = page.locator("article")
    assert article.locator("script, img[src='x'], svg[onload]").count() == 0
    assert "<script>alert(" in article.inner_text()


@pytest.mark.parametrize("lang", site_support.LANGS)
def test_screenshot_of_a_term_page(page: Any, lang: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{site_support.LANG_PREFIX[lang]}terms/feature-caching/")
    page.wait_for_function("() => [...document.images].every(img => img.complete)")
    path = SCREENSHOTS / f"feature-caching-{lang}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def test_missing_browser_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is missing"):
        _unavailable("chromium is missing")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="failure, not a skip"):
        _unavailable("chromium is missing")


@pytest.mark.parametrize(
    ("locale", "expected"), [("es-ES", "/es/"), ("ru-RU", "/ru/"), ("en-US", "/")]
)
def test_first_visit_goes_to_the_readers_language(
    browser: Any, base_url: str, locale: str, expected: str
) -> None:
    context = browser.new_context(base_url=base_url, locale=locale)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        tab = context.new_page()
        tab.goto("terms/pruning/")
        tab.wait_for_load_state("load")
        assert _path(tab) == f"{expected}terms/pruning/"
        tab.goto("terms/ddim/")  # later pages of the visit are never redirected
        assert _path(tab) == "/terms/ddim/"
    finally:
        context.close()


def test_an_explicit_choice_wins_over_the_browser(browser: Any, base_url: str) -> None:
    context = browser.new_context(base_url=base_url, locale="es-ES")
    context.set_default_timeout(TIMEOUT_MS)
    try:
        first = context.new_page()
        first.goto("es/terms/pruning/")
        assert _path(first) == "/es/terms/pruning/"  # a Spanish page is never redirected
        with first.expect_navigation():
            first.locator('a.md-select__link[hreflang="en"]').first.dispatch_event("click")
        assert _path(first) == "/terms/pruning/"
        assert first.evaluate("localStorage.getItem('glossary-lang')") == "en"
        second = context.new_page()  # a new tab: a new session, the same stored choice
        second.goto("terms/ddim/")
        second.wait_for_load_state("load")
        assert _path(second) == "/terms/ddim/"
    finally:
        context.close()


def _path(tab: Any) -> str:
    return tab.evaluate("() => location.pathname")


def test_search_without_accents_finds_the_accented_term(page: Any) -> None:
    found = _search(page, "es/", "destilacion")
    assert any("/es/terms/" in path for path in found), found
