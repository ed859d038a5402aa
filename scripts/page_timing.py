"""Time to the first search result, page weight and DOMContentLoaded of a built site, in Chromium.

Usage::

    .venv/bin/python -m mkdocs build --strict -d /tmp/site
    .venv/bin/python scripts/page_timing.py --site /tmp/site            # both measurements
    .venv/bin/python scripts/page_timing.py --site /tmp/site --only search --rounds 1

Serves the build on 127.0.0.1 and drives Debian's chromium (Playwright), as the screenshots do.

**Search**: for each query of :data:`QUERIES` (es, ru and en, with and without accents), on a
desktop window and on a phone, the milliseconds from the last keystroke to the first result of
the whole query on the screen (the search workers' answers are matched to the queries sent, so
a result of a prefix typed on the way never counts). Two ways of typing: ``ready``, once search
is ready (every worker has built its index), a key every 150 ms; ``cold``, a key every 30 ms
from the moment the index file has arrived, so the index is still being built. Each line is
the median over the queries.

**Pages**: for each page of :data:`PAGES`, its HTML in bytes, every byte it loads (the search
index apart, which every page loads once search starts), its DOM elements and the median
DOMContentLoaded over ``--rounds`` loads of a fresh browser context (no cache).

The figures depend on the machine and its load: compare two builds measured one after the
other on the same machine, never with figures measured elsewhere.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from glossary.site.search import fold_text
from glossary.site.serve import serve

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
DEVICES: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}
QUERIES = (
    ("es/", "destilación"),
    ("es/", "destilacion"),
    ("es/", "cuantizacion"),
    ("es/", "poda"),
    ("ru/", "кэширование"),
    ("ru/", "кеширование"),
    ("ru/", "учетом"),
    ("ru/", "ёмкость"),
    ("", "distillation"),
    ("", "frechet"),
)
TYPING = {"ready": 0.150, "cold": 0.030}  # seconds between two keys
PAGES = ("es/terms/feature-caching/", "es/terms/latent-diffusion/", "ru/terms/feature-caching/")
INDEX = "search/search_index.json"
INDEX_FILES = "search/search_index"  # the whole index or a language's own file
TIMEOUT_MS = 60_000

# Added before the page's scripts: every keystroke's time, when each search worker was created,
# was sent its documents and became ready, and for each worker the queries it was sent and its
# answers, so the list on the screen is matched to its query (scripts/search_latency.py uses it
# too).
WATCH = """(() => {
  const Native = window.Worker;
  const log = {keys: [], workers: 0, ready: 0, readyAt: [], createdAt: [], setupAt: [],
               answered: null, shown: {}};
  window.__timing = log;
  document.addEventListener("keydown", () => log.keys.push(performance.now()), true);
  window.Worker = function (url, options) {
    const worker = new Native(url, options);
    const sent = [];
    log.workers += 1;
    log.createdAt.push(performance.now());
    const post = worker.postMessage.bind(worker);
    worker.postMessage = (message, transfer) => {
      if (message && message.type === 0) log.setupAt.push(performance.now());
      if (message && message.type === 2) sent.push(message.data);
      return transfer === undefined ? post(message) : post(message, transfer);
    };
    worker.addEventListener("message", event => {
      if (event.data && event.data.type === 1) {
        log.ready += 1;
        log.readyAt.push(performance.now());
      }
      if (event.data && event.data.type === 3) log.answered = sent.shift();
    });
    return worker;
  };
  window.Worker.prototype = Native.prototype;
  document.addEventListener("DOMContentLoaded", () => {
    const list = document.querySelector(".md-search-result__list");
    new MutationObserver(() => {
      const query = log.answered;
      if (query !== null && list.children.length && !(query in log.shown)) {
        log.shown[query] = performance.now();
      }
    }).observe(list, {childList: true});
  });
})();"""


def type_keys(page: Any, text: str, pause: float) -> None:
    """Key events as a Spanish or Russian keyboard sends them (Playwright's own keyboard knows
    only the US layout), ``pause`` seconds apart."""
    cdp = page.context.new_cdp_session(page)
    for char in text:
        down = {"type": "keyDown", "key": char, "text": char, "unmodifiedText": char}
        cdp.send("Input.dispatchKeyEvent", down)
        cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})
        time.sleep(pause)
    cdp.detach()


def first_result_ms(
    browser: Any, base: str, device: str, way: str, start: str, query: str
) -> float:
    """Milliseconds from the last keystroke of ``query`` to its first result on the screen."""
    context = browser.new_context(base_url=base, locale="en-US", **DEVICES[device])
    context.set_default_timeout(TIMEOUT_MS)
    try:
        context.add_init_script("sessionStorage.setItem('glossary-seen', '1')")
        page = context.new_page()
        page.add_init_script(WATCH)
        if way == "cold":
            with page.expect_response(lambda response: INDEX_FILES in response.url) as index:
                page.goto(start)
            index.value.finished()
        else:
            page.goto(start)
            page.wait_for_function(
                "() => __timing.ready > 0 && __timing.ready === __timing.workers"
            )
        page.locator("input.md-search__input").focus()
        type_keys(page, query, TYPING[way])
        folded = fold_text(query)
        page.wait_for_function("query => query in __timing.shown", arg=folded)
        shown, keys = page.evaluate("query => [__timing.shown[query], __timing.keys]", folded)
        return float(shown - keys[-1])
    finally:
        context.close()


def page_figures(browser: Any, base: str, path: str) -> dict[str, float]:
    """HTML bytes, bytes loaded (the index apart), DOM elements and DOMContentLoaded of one load."""
    context = browser.new_context(base_url=base, locale="en-US", **DEVICES["desktop"])
    context.set_default_timeout(TIMEOUT_MS)
    try:
        context.add_init_script("sessionStorage.setItem('glossary-seen', '1')")
        page = context.new_page()
        page.goto(path, wait_until="load")
        page.wait_for_load_state("networkidle")
        return page.evaluate(
            """index => {
              const nav = performance.getEntriesByType("navigation")[0];
              const loaded = performance.getEntriesByType("resource")
                .filter(entry => !entry.name.includes(index))
                .reduce((sum, entry) => sum + entry.decodedBodySize, nav.decodedBodySize);
              return {html: nav.decodedBodySize, loaded: loaded,
                      elements: document.getElementsByTagName("*").length,
                      dcl: nav.domContentLoadedEventEnd - nav.startTime};
            }""",
            INDEX_FILES,
        )
    finally:
        context.close()


def measure_search(browser: Any, base: str, rounds: int) -> None:
    for way in TYPING:
        for device in DEVICES:
            times = [
                first_result_ms(browser, base, device, way, start, query)
                for _ in range(rounds)
                for start, query in QUERIES
            ]
            print(
                f"search {way:5} {device:7} first result after the last key: "
                f"median {statistics.median(times):.0f} ms, max {max(times):.0f} ms "
                f"({len(times)} searches)"
            )


def measure_pages(browser: Any, base: str, rounds: int) -> None:
    for path in PAGES:
        loads = [page_figures(browser, base, path) for _ in range(max(rounds, 3))]
        first = loads[0]
        dcl = statistics.median(load["dcl"] for load in loads)
        print(
            f"page {path}: HTML {first['html'] / 1000:.1f} kB, "
            f"loads {first['loaded'] / 1000:.0f} kB (index apart), "
            f"{first['elements']:.0f} elements, DOMContentLoaded median "
            f"{dcl:.0f} ms ({len(loads)} loads)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--site", type=Path, required=True, help="a built site (mkdocs build)")
    parser.add_argument("--only", choices=("search", "pages"), help="one of the measurements")
    parser.add_argument("--rounds", type=int, default=1, help="times each search is made")
    args = parser.parse_args(argv)
    if not (args.site / INDEX).is_file():
        parser.error(f"--site {args.site}: no {INDEX} there; build the site first")
    if not CHROMIUM.is_file():
        parser.error(f"{CHROMIUM} is missing: make browser (Debian's chromium)")
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: at least 1")
    from playwright.sync_api import sync_playwright

    with serve(args.site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            if args.only in (None, "search"):
                measure_search(browser, base, args.rounds)
            if args.only in (None, "pages"):
                measure_pages(browser, base, args.rounds)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
