"""How long a reader waits for search on a first and a second visit, in Chromium: one table.

Usage::

    .venv/bin/python -m mkdocs build --strict -d /tmp/site
    .venv/bin/python scripts/search_latency.py --site /tmp/site              # es, ru and en
    .venv/bin/python scripts/search_latency.py --site /tmp/site --rounds 5 --breakdown

Serves the build on 127.0.0.1 and drives Debian's chromium (Playwright), as
``scripts/page_timing.py`` does, whose instrumentation of Material's search workers it uses.

For each language, a fresh browser context (an empty cache) opens the home page: the **first
visit**. The same context then opens it again: the **second visit** (the index from the HTTP
cache, or revalidated; the server sends ``Last-Modified`` only). On each visit, times from the
start of navigation:

* ``index``: the kB of search index transferred (``transferSize``; 0 from the cache) and the kB
  it holds (``decodedBodySize``), of the first index file the page loads;
* ``arrived``: when that index file had arrived (``responseEnd``);
* ``worker``: when the first of Material's search workers was created (its script starts to
  load), and ``setup``: when it was sent its documents (it builds its index from then on);
* ``ready``: when the first search worker was ready (Material's ``READY``; search answers from
  then on), and ``all``: when every worker was (every language searchable);
* ``loading``: the query is typed at once as soon as the index has arrived, so while the index
  is being built; the milliseconds from its last keystroke to its first result on the screen
  (answers matched to their query: a result for a prefix never counts). This is the wait the
  issue bounds: the first result after the index loads;
* ``ready+``: the same query typed again once every worker is ready, a key every 150 ms.

Each cell is the median over ``--rounds`` rounds. ``--breakdown`` adds, per language, where the
worker's time goes: Material's worker alone (the site's stand-in bypassed), given the page's
language's documents or all three languages', from ``SETUP`` to ``READY``, and one query.

Pitfalls: the figures depend on the machine and its load, so compare two builds measured one
after the other on the same idle machine, never with figures measured elsewhere; the first round
also pays Chromium's own warm-up (its compile caches), hence the median.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from page_timing import WATCH, type_keys

from glossary.site.search import fold_text
from glossary.site.serve import serve

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
VIEWPORT = {"width": 1366, "height": 900}
QUERIES = {"es": ("es/", "destilacion"), "ru": ("ru/", "кеширование"), "en": ("", "distillation")}
INDEX = "search/search_index"  # search_index.json, or a language's own file
TYPING = {"loading": None, "ready+": 0.150}  # seconds between two keys (None: all at once)
TIMEOUT_MS = 60_000
COLUMNS = ("index kB", "arrived", "worker", "setup", "ready", "all", "loading", "ready+")

_INDEX_FILE = """prefix => {
  const entry = performance.getEntriesByType("resource").find(e => e.name.includes(prefix));
  return entry ? {sent: entry.transferSize, size: entry.decodedBodySize, end: entry.responseEnd}
               : null;
}"""


# Every prefix of a query typed in one task, as fast as no reader types, so the time measured is
# the page's alone; Material reads the field on keyup. Returns the time of the last key.
_BURST = """query => {
  const input = document.querySelector("input.md-search__input");
  input.focus();
  for (let i = 1; i <= query.length; i++) {
    input.value = query.slice(0, i);
    input.dispatchEvent(new KeyboardEvent("keyup", {key: query[i - 1], bubbles: true}));
  }
  return performance.now();
}"""


def _result_ms(page: Any, query: str, pause: float | None) -> float:
    """Type ``query`` (``pause`` seconds between keys, or all at once when None); milliseconds
    from its last keystroke to its first result on the screen."""
    page.evaluate("() => { __timing.shown = {}; __timing.keys = []; }")
    page.locator("input.md-search__input").focus()
    if pause is None:
        last = page.evaluate(_BURST, query)
    else:
        type_keys(page, query, pause)
        last = page.evaluate("() => __timing.keys[__timing.keys.length - 1]")
    folded = fold_text(query)
    page.wait_for_function("query => query in __timing.shown", arg=folded)
    return float(page.evaluate("query => __timing.shown[query]", folded) - last)


def visit(page: Any, start: str, query: str) -> dict[str, float]:
    """One visit of ``start``: the figures of one row (see the module docstring)."""
    page.goto(start, wait_until="commit")
    page.wait_for_function(f"() => ({_INDEX_FILE})({INDEX!r})")
    index = page.evaluate(_INDEX_FILE, INDEX)
    loading = _result_ms(page, query, TYPING["loading"])
    page.wait_for_function("() => __timing.ready > 0 && __timing.ready === __timing.workers")
    page.locator("input.md-search__input").fill("")
    page.wait_for_timeout(300)  # a late answer to the query before must not count as this one's
    ready_after = _result_ms(page, query, TYPING["ready+"])
    ready_at = page.evaluate("() => __timing.readyAt")
    created, setup = page.evaluate("() => [__timing.createdAt[0], __timing.setupAt[0]]")
    return {
        "worker": created,
        "setup": setup,
        "sent": index["sent"] / 1000,
        "index kB": index["size"] / 1000,
        "arrived": index["end"],
        "ready": min(ready_at),
        "all": max(ready_at),
        "loading": loading,
        "ready+": ready_after,
    }


def measure(browser: Any, base: str, lang: str) -> dict[str, dict[str, float]]:
    """A first and a second visit of ``lang``'s home page in one fresh context."""
    start, query = QUERIES[lang]
    context = browser.new_context(base_url=base, locale="en-US", viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        context.add_init_script("sessionStorage.setItem('glossary-seen', '1')")
        context.add_init_script(WATCH)
        page = context.new_page()
        return {"first": visit(page, start, query), "second": visit(page, start, query)}
    finally:
        context.close()


# Material's worker itself, not the site's stand-in: SETUP -> READY for a set of documents, then
# one query; the worker's URL and the index's from the page's configuration.
_WORKER_ALONE = """async ({lang, own, query}) => {
  const config = JSON.parse(document.getElementById("__config").textContent);
  const base = new URL(config.base, location.href);
  const text = await (await fetch(new URL("search/search_index.json", base))).text();
  const parsing = performance.now();
  const index = JSON.parse(text);
  const parsed = performance.now() - parsing;
  const head = doc => doc.location.split("/", 1)[0];
  const language = doc => (head(doc) === "es" || head(doc) === "ru" ? head(doc) : "en");
  const docs = own ? index.docs.filter(doc => language(doc) === lang) : index.docs;
  const Native = Worker.prototype.constructor;
  const worker = new Native(new URL(config.search, location.href));
  const ask = message => new Promise(resolve => {
    worker.onmessage = event => resolve(event.data);
    worker.postMessage(message);
  });
  const t0 = performance.now();
  await ask({type: 0, data: {config: index.config, docs: docs, options: {suggest: true}}});
  const t1 = performance.now();
  await ask({type: 2, data: query});
  const t2 = performance.now();
  worker.terminate();
  return {parse: parsed, docs: docs.length, build: t1 - t0, query: t2 - t1};
}"""


def breakdown(browser: Any, base: str, lang: str, rounds: int) -> list[str]:
    """Lines: the median build and query times of Material's worker for ``lang``'s documents
    and for all documents."""
    start, query = QUERIES[lang]
    context = browser.new_context(base_url=base, locale="en-US", viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    lines = []
    try:
        context.add_init_script("sessionStorage.setItem('glossary-seen', '1')")
        page = context.new_page()
        page.goto(start)
        for own in (True, False):
            arg = {"lang": lang, "own": own, "query": fold_text(query)}
            runs = [page.evaluate(_WORKER_ALONE, arg) for _ in range(rounds)]
            med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            which = f"{lang} documents" if own else "all documents"
            lines.append(
                f"{lang}: Material's worker, {which} ({med['docs']:.0f}): build {med['build']:.0f}"
                f" ms, one query {med['query']:.0f} ms; JSON.parse of the whole index "
                f"{med['parse']:.0f} ms"
            )
    finally:
        context.close()
    return lines


def table(rows: dict[tuple[str, str], list[dict[str, float]]]) -> list[str]:
    """A Markdown table of the medians of ``rows`` ((language, visit) -> rounds)."""
    head = "| lang | visit | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for (lang, which), runs in rows.items():
        med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        cells = [f"{med['sent']:.0f} / {med['index kB']:.0f}"]
        cells += [f"{med[key]:.0f}" for key in COLUMNS[1:]]
        lines.append(f"| {lang} | {which} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--site", type=Path, required=True, help="a built site (mkdocs build)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each cell is a median")
    parser.add_argument("--langs", default="es,ru,en", help="comma-separated, of es, ru, en")
    parser.add_argument("--breakdown", action="store_true", help="also time Material's worker")
    args = parser.parse_args(argv)
    langs = [lang for lang in args.langs.split(",") if lang]
    if not (args.site / "search" / "search_index.json").is_file():
        parser.error(f"--site {args.site}: no search/search_index.json there; build it first")
    if not CHROMIUM.is_file():
        parser.error(f"{CHROMIUM} is missing: make browser (Debian's chromium)")
    if args.rounds < 1 or not set(langs) <= set(QUERIES) or not langs:
        parser.error(f"--rounds {args.rounds} --langs {args.langs}: rounds >= 1, langs of es,ru,en")
    from playwright.sync_api import sync_playwright

    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    notes: list[str] = []
    with serve(args.site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for _ in range(args.rounds):
                for lang in langs:
                    for which, figures in measure(browser, base, lang).items():
                        rows.setdefault((lang, which), []).append(figures)
            if args.breakdown:
                for lang in langs:
                    notes += breakdown(browser, base, lang, args.rounds)
        finally:
            browser.close()
    print(
        f"Search on {args.site} (medians of {args.rounds} rounds; times in ms from the start of "
        "navigation, except loading and ready+: from the last keystroke to the first result)"
    )
    print("\n".join(table(rows) + notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
