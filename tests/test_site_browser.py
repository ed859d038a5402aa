"""Browser tests: Playwright drives Debian's chromium against the built site on 127.0.0.1.

Skipped (with the reason) only when /usr/bin/chromium is missing and the environment variable
CI is not set; under CI they fail instead, since CI installs chromium (``make browser``).
Screenshots of a term page in each language go to artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from glossary.site.search import fold_text

try:
    from tests import browser_support, site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import browser_support  # type: ignore[no-redef]
    import site_support  # type: ignore[no-redef]

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("site")]
BuiltSite = site_support.BuiltSite
SCREENSHOTS = site_support.REPO / "artifacts" / "screenshots"
TIMEOUT_MS = browser_support.TIMEOUT_MS


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


# Test-only instrumentation of Material's search workers (added before the page's scripts):
# how many there are and how many are ready, and which query each shown result list answers,
# so a test reads the results of its whole query, not those of a prefix typed on the way.
_WATCH_SEARCH = """(() => {
  const Native = window.Worker;
  window.__answered = null;
  window.__rendered = null;
  window.__workers = 0;
  window.__ready = 0;
  window.Worker = function (url, options) {
    const worker = new Native(url, options);
    const sent = [];
    window.__workers += 1;
    const post = worker.postMessage.bind(worker);
    worker.postMessage = message => {
      if (message && message.type === 2) sent.push(message.data);
      post(message);
    };
    worker.addEventListener("message", event => {
      if (event.data && event.data.type === 1) window.__ready += 1;
      if (event.data && event.data.type === 3) window.__answered = sent.shift();
    });
    return worker;
  };
  window.Worker.prototype = Native.prototype;
  document.addEventListener("DOMContentLoaded", () => {
    const list = document.querySelector(".md-search-result__list");
    new MutationObserver(() => { window.__rendered = window.__answered; })
      .observe(list, {childList: true, subtree: true});
  });
})();"""
_RESULTS = """items => items.map(item => {
  const badge = item.querySelector(".gl-search-lang");
  return [new URL(item.querySelector("a").href).pathname, badge && badge.textContent,
          badge && badge.lang];
})"""


def _press_keys(page: Any, text: str) -> None:
    """Real key events, one key at a time. Playwright's keyboard knows only the US layout
    (``press("е")`` is an "Unknown key", and ``type`` inserts such characters without any key
    event), so a character outside it is sent as a Russian or Spanish layout sends it: keydown
    (with its text), keypress, input and keyup, through Chromium's input domain."""
    cdp = page.context.new_cdp_session(page)
    for char in text:
        if char.isascii() and char.isalnum():
            page.keyboard.press(char)
            continue
        down = {"type": "keyDown", "key": char, "text": char, "unmodifiedText": char}
        cdp.send("Input.dispatchKeyEvent", down)
        cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})
    cdp.detach()


def _search_results(page: Any, start: str, query: str) -> list[tuple[str, str, str]]:
    """Type ``query`` into Material's search on ``start`` key by key; return the results as
    (path, badge text, badge language), in the order shown."""
    page.add_init_script(_WATCH_SEARCH)
    page.goto(start)
    # every worker ready: the answer holds every language (the other languages' worker starts
    # once the page's language's is ready, and until then answers hold the page's language)
    page.wait_for_function("() => window.__ready > 1 && window.__ready === window.__workers")
    page.locator("input.md-search__input").click()
    _press_keys(page, query)
    # glossary-search.js folds each query before the worker sees it
    page.wait_for_function("query => window.__rendered === query", arg=fold_text(query))
    items = page.locator(".md-search-result__item")
    return [tuple(found) for found in items.evaluate_all(_RESULTS)]


def _search(page: Any, start: str, query: str) -> list[str]:
    return [path for path, _, _ in _search_results(page, start, query)]


def test_spanish_search_for_poda_finds_pruning(page: Any) -> None:
    assert "/es/terms/pruning/" in _search(page, "es/", "poda")


# Test-only record of every search index file the page requests (Material's request for the
# whole index, which glossary-search.js redirects, and the stand-in's own fetches), with how
# many search workers were ready when it was asked for.
_INDEX_REQUESTS = """(() => {
  window.__indexFiles = [];
  const note = url => {
    const name = new URL(String(url), location.href).pathname.split("/").pop();
    if (name.startsWith("search_index")) window.__indexFiles.push([name, window.__ready || 0]);
  };
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    note(url);
    return open.apply(this, arguments);
  };
  const fetchNative = window.fetch;
  window.fetch = function (input) {
    note(input instanceof Request ? input.url : input);
    return fetchNative.apply(this, arguments);
  };
})();"""


def test_a_page_loads_its_language_index_first_and_the_others_once_search_is_ready(
    page: Any,
) -> None:
    """A first visit downloads and builds only the page's language's index before search
    answers (a third of the whole index); the other languages' files come once search is
    ready, and the query finds its page and the other languages' pages too."""
    page.add_init_script(_INDEX_REQUESTS)
    results = _search_results(page, "es/", "deepcache")
    files = page.evaluate("() => window.__indexFiles")
    assert files[0] == ["search_index.es.json", 0], files
    assert sorted(name for name, _ in files[1:]) == ["search_index.en.json", "search_index.ru.json"]
    assert all(ready >= 1 for _, ready in files[1:]), files  # asked for once search was ready
    paths = [path for path, _, _ in results]
    assert "/es/terms/feature-caching/" in paths and "/ru/terms/feature-caching/" in paths


def test_russian_search_for_caching_finds_feature_caching(page: Any) -> None:
    assert "/ru/terms/feature-caching/" in _search(page, "ru/", "кэширование")


_WORKER_QUERY = """async ({pipeline, queries}) => {
  const config = JSON.parse(document.getElementById("__config").textContent);
  const base = new URL(config.base, location.href);
  const index = await (await fetch(new URL("search/search_index.json", base))).json();
  if (pipeline) index.config.pipeline = pipeline;
  // Material's worker itself, not the site's stand-in (glossary-search.js) that wraps it
  const Native = Worker.prototype.constructor;
  const worker = new Native(new URL(config.search, location.href));
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


# Test-only instrumentation of what the page sends Material's workers: the languages of each
# worker's documents, the order of set-ups and readiness, each worker's queries; the set-up of
# every worker after the first is held back until the test calls window.__release().
_HOLD_LATER_WORKERS = """(() => {
  const Native = window.Worker;
  const languageOf = location => {
    const head = location.split("/", 1)[0];
    return head === "es" || head === "ru" ? head : "en";
  };
  window.__search = {events: [], languages: [], queries: [], documents: 0, held: []};
  window.__release = () => window.__search.held.splice(0).forEach(send => send());
  window.Worker = function (url, options) {
    const worker = new Native(url, options);
    const n = window.__search.languages.length;
    window.__search.languages.push([]);
    window.__search.queries.push([]);
    const post = worker.postMessage.bind(worker);
    worker.postMessage = message => {
      if (message && message.type === 0) {
        const languages = new Set(message.data.docs.map(doc => languageOf(doc.location)));
        window.__search.languages[n] = [...languages].sort();
        window.__search.documents += message.data.docs.length;
        window.__search.events.push("setup " + n);
        if (n > 0) return void window.__search.held.push(() => post(message));
      }
      if (message && message.type === 2) window.__search.queries[n].push(message.data);
      post(message);
    };
    worker.addEventListener("message", event => {
      if (event.data && event.data.type === 1) window.__search.events.push("ready " + n);
    });
    return worker;
  };
  window.Worker.prototype = Native.prototype;
})();"""
_SHOWN = """() => [...document.querySelectorAll(".md-search-result__item a")]
  .map(a => new URL(a.href).pathname)"""
# Keystrokes faster than any answer: one task sets each prefix of the query and lets Material
# read it (Material reads the field on keyup), so every prefix but the first arrives while the
# first is being answered.
_BURST = """query => {
  const input = document.querySelector("input.md-search__input");
  input.focus();
  for (let i = 1; i <= query.length; i++) {
    input.value = query.slice(0, i);
    input.dispatchEvent(new KeyboardEvent("keyup", {key: query[i - 1]}));
  }
}"""


def test_search_is_ready_with_the_page_language_and_sends_only_the_newest_query(
    page: Any,
) -> None:
    """What the time to the first result depends on: the page's language has a worker of its
    own, ready before the other languages' worker starts, and search answers as soon as it is;
    the other languages join the answer when their worker is ready; keystrokes typed while a
    query is answered send only the newest query, never a queue of prefixes."""
    page.add_init_script(_HOLD_LATER_WORKERS)
    page.goto("es/")
    page.wait_for_function("() => window.__search.events.includes('ready 0')")
    page.wait_for_function("() => window.__search.events.includes('setup 1')")
    index = page.evaluate(
        """async () => {
          const config = JSON.parse(document.getElementById("__config").textContent);
          const url = new URL("search/search_index.json", new URL(config.base, location.href));
          return (await (await fetch(url)).json()).docs.length;
        }"""
    )
    search = page.evaluate("() => window.__search")
    assert search["languages"] == [["es"], ["en", "ru"]] and search["documents"] == index
    assert search["events"][:3] == ["setup 0", "ready 0", "setup 1"]

    # answered by the page's language alone while the other languages' worker is held back
    page.evaluate(_BURST, "deepcache")
    page.wait_for_function("() => document.querySelectorAll('.md-search-result__item').length > 0")
    queries = page.evaluate("() => window.__search.queries")
    typed = [query for query in queries[0] if query]  # Material asks "" once search is ready
    assert typed[-1] == "deepcache" and len(typed) <= 2 and queries[1] == [], queries
    assert {_language_of(path) for path in page.evaluate(_SHOWN)} == {"es"}

    # the other languages' worker is ready: the query on the screen is answered again, whole
    page.evaluate("() => window.__release()")
    page.wait_for_function(
        "() => new Set([...document.querySelectorAll('.md-search-result__item a')]"
        ".map(a => new URL(a.href).pathname.split('/')[1])).size > 1"
    )
    shown = [_language_of(path) for path in page.evaluate(_SHOWN)]
    own = shown.count("es")
    assert own and shown[:own] == ["es"] * own and len(set(shown)) > 1, shown
    assert page.evaluate("() => window.__search.queries")[1] == ["deepcache"]


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
    image = page.locator("img[src$='assets/results/es/feature-caching-chart-1.svg']")
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


def _load_every_image(page: Any) -> None:
    """Load the lazy images too (a full-page screenshot shows them all) and wait for them."""
    page.evaluate(
        "() => document.querySelectorAll('img').forEach(img => { img.loading = 'eager'; })"
    )
    page.wait_for_function("() => [...document.images].every(img => img.complete)")


@pytest.mark.parametrize("lang", site_support.LANGS)
def test_screenshot_of_a_term_page(page: Any, lang: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{site_support.LANG_PREFIX[lang]}terms/feature-caching/")
    _load_every_image(page)
    path = SCREENSHOTS / f"feature-caching-{lang}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def test_missing_browser_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is missing"):
        browser_support.unavailable("chromium is missing")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="failure, not a skip"):
        browser_support.unavailable("chromium is missing")


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


# A request cut short because the test moved on to the next page is not a failure of the page.
_NAVIGATED_AWAY = "net::ERR_ABORTED"


def _site_pages(site: Any) -> list[str]:
    """Every built HTML page, as a path relative to the site root ("", "es/terms/poda/")."""
    return sorted(str(p.relative_to(site)).removesuffix("index.html") for p in site.rglob("*.html"))


def _watch_failures(tab: Any, where: list[str]) -> list[str]:
    """Collect console errors, page errors, HTTP errors and failed requests of ``tab``, each
    prefixed with the page being visited (``where[0]``)."""
    problems: list[str] = []

    def note(kind: str, detail: str) -> None:
        problems.append(f"/{where[0]}: {kind}: {detail}")

    tab.on("console", lambda m: m.type == "error" and note("console", f"{m.text} {m.location}"))
    tab.on("pageerror", lambda error: note("page error", str(error)))
    tab.on("response", lambda r: r.status >= 400 and note(f"HTTP {r.status}", r.url))
    tab.on(
        "requestfailed",
        lambda r: r.failure != _NAVIGATED_AWAY and note(f"failed ({r.failure})", r.url),
    )
    return problems


def test_no_console_error_or_failed_request_on_any_page(
    browser: Any, base_url: str, built: BuiltSite
) -> None:
    """Every built page in every language, one tab reused, nothing blocked: the search worker and
    index, images, fonts and the sitemap look-ups of the language selector all load cleanly."""
    pages = _site_pages(built.site)
    assert {"", "es/", "ru/", "es/terms/pruning/", "ru/compare/", "404.html"} <= set(pages)
    where = [""]
    with browser_support.context(browser, base_url) as ctx:
        ctx.add_init_script(browser_support.NOT_FIRST_VISIT)
        tab = ctx.new_page()
        problems = _watch_failures(tab, where)
        for path in pages:
            where[0] = path
            tab.goto(path, wait_until="load")
        where[0] = "(after the last page)"
        tab.goto("", wait_until="load")  # whatever the last page still had in flight lands
    assert problems == [], f"{len(problems)} problems on {len(pages)} pages"


def test_the_page_check_sees_errors(browser: Any, base_url: str) -> None:
    where = ["no-such-page/"]
    with browser_support.context(browser, base_url) as ctx:
        tab = ctx.new_page()
        problems = _watch_failures(tab, where)
        tab.goto("no-such-page/", wait_until="load")
        tab.evaluate("() => console.error('probe')")
        tab.goto("", wait_until="load")
    assert any("HTTP 404" in line and "no-such-page/" in line for line in problems), problems
    assert any("console: probe" in line for line in problems), problems


def _path(tab: Any) -> str:
    return tab.evaluate("() => location.pathname")


LANGUAGE_NAMES = {"en": "English", "es": "Español", "ru": "Русский"}  # mkdocs.yml i18n names


def _language_of(path: str) -> str:
    head = path.strip("/").split("/", 1)[0]
    return head if head in ("es", "ru") else "en"


@pytest.mark.parametrize(
    ("lang", "query", "target"),
    [
        ("es", "cuantizacion", "/es/terms/quantization/"),  # Cuantización
        ("es", "destilacion", "/es/terms/knowledge-distillation/"),  # Destilación
        ("ru", "учетом", "/ru/terms/timestep-aware-caching/"),  # с учётом временного шага
        ("ru", "емкость", "/ru/terms/mixture-of-experts/"),  # ёмкость
        ("en", "frechet", "/terms/fid/"),  # Fréchet Inception Distance
    ],
)
def test_search_without_accents_finds_the_accented_term(
    page: Any, lang: str, query: str, target: str
) -> None:
    found = _search(page, site_support.LANG_PREFIX[lang], query)
    assert target in found, found


_SNIPPETS = """() => [...document.querySelectorAll(".md-search-result__item")]
  .map(item => item.textContent).join(" ")"""
_HIGHLIGHTS = """() => [...document.querySelectorAll("a.md-search-result__link")]
  .map(a => new URL(a.href).searchParams.get("h") || "").join(" ").toLowerCase().split(" ")"""


@pytest.mark.parametrize(
    ("lang", "accented", "plain"),
    [
        ("es", "destilación", "destilacion"),
        ("ru", "учётом", "учетом"),
        ("ru", "кэширование", "кеширование"),  # both spellings of the loanword are in use
    ],
)
def test_search_ranks_the_same_with_or_without_accents_and_shows_the_text_as_written(
    page: Any, lang: str, accented: str, plain: str
) -> None:
    """A phone keyboard types without accents: the same results in the same order, and the
    snippets show the pages' words as they are written, never a folded keyword."""
    start = site_support.LANG_PREFIX[lang]
    with_accents = _search_results(page, start, accented)
    snippets = page.evaluate(_SNIPPETS).casefold()
    without = _search_results(page, start, plain)
    assert with_accents and without == with_accents
    assert page.evaluate(_SNIPPETS).casefold() == snippets
    if plain in ("destilacion",):  # Spanish always writes it with its accent
        assert accented in snippets and not re.search(rf"\b{plain}\b", snippets)
        # the page a result opens highlights the word as it is written there
        highlights = page.evaluate(_HIGHLIGHTS)
        assert accented in highlights and plain not in highlights, highlights


@pytest.mark.parametrize("lang", site_support.LANGS)
def test_search_results_of_the_page_language_come_first_and_say_their_language(
    page: Any, lang: str
) -> None:
    """ "DeepCache" is a name in every language; the page's language comes first, and every
    result carries a badge with its language's name, marked with that language."""
    results = _search_results(page, site_support.LANG_PREFIX[lang], "deepcache")
    languages = [_language_of(path) for path, _, _ in results]
    assert len(set(languages)) > 1, results  # the other languages are found too
    own = languages.count(lang)
    assert own and languages[:own] == [lang] * own, results
    for path, badge, badge_lang in results:
        assert (badge, badge_lang) == (LANGUAGE_NAMES[_language_of(path)], _language_of(path))


# The first table of the summary tab (the benchmark section's main table), or the sortable table
# of the compare or stacking page; its scroll region (``.gl-table``) must not scroll sideways,
# and on a phone each row is a card.
_TABLE_FIT = """selector => {
  const table = document.querySelector(selector);
  const region = table.closest('.gl-table');
  const cell = table.querySelector('tbody td');
  return {
    scroll: region.scrollWidth, client: region.clientWidth,
    display: getComputedStyle(table.querySelector('tbody tr')).display,
    label: getComputedStyle(cell, '::before').content,
    header: table.tHead.rows[0].cells[cell.cellIndex].textContent.replace(/\\s+/g, ' ').trim(),
  };
}"""
_TABLES = {
    "es/terms/feature-caching/": "#benchmark ~ .tabbed-set .tabbed-block:first-child table",
    "ru/terms/pruning/": "#benchmark ~ .tabbed-set .tabbed-block:first-child table",
    "es/compare/": "table[data-sortable]",
    "ru/compare/": "table[data-sortable]",
    "es/stacking/": "table[data-sortable]",
    "ru/stacking/": "table[data-sortable]",
}


@pytest.mark.parametrize("path", sorted(_TABLES))
def test_tables_fit_at_1366_and_are_cards_on_a_phone(
    browser: Any, base_url: str, path: str
) -> None:
    for width, height in ((1366, 900), (390, 844)):
        with browser_support.context(
            browser, base_url, viewport={"width": width, "height": height}
        ) as ctx:
            tab = ctx.new_page()
            tab.goto(path)
            fit = tab.evaluate(_TABLE_FIT, _TABLES[path])
            assert fit["scroll"] <= fit["client"], (path, width, fit)
            if width == 390:  # stacked cards: each row a block, each value labelled
                assert fit["display"] == "block", (path, fit)
                assert fit["label"] == json.dumps(fit["header"], ensure_ascii=False), (path, fit)
            else:
                assert fit["display"] == "table-row", (path, fit)


def test_without_javascript_a_table_stays_a_table_in_its_scroll_region_on_a_phone(
    browser: Any, base_url: str
) -> None:
    """The cards are an enhancement (tables.js): without it a phone gets the plain table,
    whole, in its keyboard-focusable region, and no cell shows an empty label."""
    path = "es/terms/feature-caching/"
    with browser_support.context(
        browser, base_url, viewport=browser_support.PHONE, java_script_enabled=False
    ) as ctx:
        tab = ctx.new_page()
        tab.goto(path)
        fit = tab.evaluate(_TABLE_FIT, _TABLES[path])
    assert fit["display"] == "table-row" and fit["label"] in ("none", "normal"), fit
    assert fit["scroll"] >= fit["client"] > 0, fit


# Every text of a drawn chart, by its box in the browser: inside the SVG's box, and no two
# texts overlapping by more than a pixel (labels, ticks, keys, titles, legends).
_TEXT_BOXES = """() => {
  const svg = document.querySelector("svg");
  const frame = svg.getBoundingClientRect();
  const boxes = [...svg.querySelectorAll("text")]
    .map(t => [t.textContent, t.getBoundingClientRect()])
    .filter(([s, r]) => s.trim() && r.width > 0);
  const outside = boxes.filter(([s, r]) => r.left < frame.left - 0.5 || r.top < frame.top - 0.5
    || r.right > frame.right + 0.5 || r.bottom > frame.bottom + 0.5).map(([s]) => s);
  const overlapping = [];
  boxes.forEach(([s, a], i) => boxes.slice(i + 1).forEach(([t, b]) => {
    const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (x > 1 && y > 1) overlapping.push([s, t]);
  }));
  return {count: boxes.length, outside, overlapping, texts: boxes.map(([s]) => s)};
}"""
_CHARTS = ("compare-quality", "compare-speedup", "compare-memory", "stacking-pareto")
_REDRAWN = ("pruning-chart-1", "feature-caching-chart-1", "feature-caching-chart-2")
"""The fixture results' benchmark charts, drawn per language from their rows."""


@pytest.mark.parametrize("lang", ["es", "ru"])
def test_chart_texts_stay_inside_and_never_overlap(browser: Any, base_url: str, lang: str) -> None:
    with browser_support.context(browser, base_url) as ctx:
        tab = ctx.new_page()
        for name in (*_CHARTS, "stacking-interaction", *_REDRAWN):
            tab.goto(f"assets/results/{lang}/{name}.svg")
            found = tab.evaluate(_TEXT_BOXES)
            assert found["count"] >= 8, (lang, name)
            assert found["outside"] == [] and found["overlapping"] == [], (lang, name, found)
            assert not [t for t in found["texts"] if t.rstrip().endswith("…")], (lang, name)


@pytest.mark.parametrize("lang", ["es", "ru"])
def test_committed_benchmark_charts_keep_their_texts_inside(
    browser: Any, base_url: str, lang: str
) -> None:
    """Every chart the site draws from the committed results (reference/results, read only) in
    the page's language, shown inline: each technique's charts, the comparison charts and the
    stacking charts; their texts inside the SVG's box, none cut, none overlapping."""
    from glossary.loader import load_glossary, module_exists
    from glossary.site.context import Context
    from glossary.site.generate import _charts
    from glossary.site.results import load_results

    ctx = Context(
        glossary=load_glossary(),
        results=load_results(site_support.REPO / "reference" / "results"),
        module_exists=module_exists,
    )
    pages = {page: found for (page, shown), found in _charts(ctx).items() if shown == lang}
    assert {"compare", "stacking"} <= set(pages)
    charts = [chart for found in pages.values() for chart in found]
    assert len(charts) >= 18 + 3
    with browser_support.context(browser, base_url) as ctx:
        tab = ctx.new_page()
        for chart in charts:
            svg = chart.rendered().svg.decode("utf-8")
            tab.set_content("<!doctype html><body style='margin:0'>" + svg[svg.index("<svg") :])
            found = tab.evaluate(_TEXT_BOXES)
            assert found["count"] >= 6, (lang, chart.name)
            assert found["outside"] == [] and found["overlapping"] == [], (lang, chart.name, found)
            assert not [t for t in found["texts"] if t.rstrip().endswith("…")], (lang, chart.name)


def test_the_chart_text_check_sees_a_cut_and_an_overlap(browser: Any, base_url: str) -> None:
    bad = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="40">'
        '<text x="5" y="20">one label</text><text x="8" y="22">another</text>'
        '<text x="80" y="30">cut at the edge</text></svg>'
    )
    with browser_support.context(browser, base_url) as ctx:
        tab = ctx.new_page()
        tab.set_content(bad)
        found = tab.evaluate(_TEXT_BOXES)
        assert found["outside"] == ["cut at the edge"]
        assert ["one label", "another"] in found["overlapping"]


# Every card value that holds a line break (an interval under its figure, "estimate", the "+" of
# a combination): where its lines start, against the value column and the label.
_CARD_BREAKS = """() => [...document.querySelectorAll("td[data-label] > .gl-value")]
  .filter(value => value.querySelector("br"))
  .map(value => {
    const range = document.createRange();
    range.selectNodeContents(value);
    const lines = [...range.getClientRects()].filter(r => r.width > 0);
    const cell = value.closest("td").getBoundingClientRect();
    return {value: value.getBoundingClientRect().left, cell: cell.left,
            first: Math.min(...lines.map(r => r.left)), text: value.textContent.slice(0, 40)};
  })"""


def test_card_values_with_line_breaks_stay_in_the_value_column_on_a_phone(
    browser: Any, base_url: str
) -> None:
    found = []
    with browser_support.context(browser, base_url, viewport=browser_support.PHONE) as ctx:
        tab = ctx.new_page()
        for path in ("es/compare/", "ru/compare/", "es/stacking/", "ru/stacking/"):
            tab.goto(path)
            found += [(path, v) for v in tab.evaluate(_CARD_BREAKS)]
    assert found  # the pages have such values: the check checks something
    for path, value in found:
        # the value column starts well right of the card's edge (the label is on the left),
        # and no line of the value starts left of it, under the label
        assert value["value"] > value["cell"] + 40, (path, value)
        assert value["first"] >= value["value"] - 1, (path, value)
