"""Shared helpers of the browser tests: Debian's chromium driven by Playwright, never a download.

A missing chromium, Playwright or axe-core skips the browser tests locally, with the command that
installs it; under CI (the environment variable CI set) it fails them instead, since CI installs
all three (``make browser axe``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

try:
    from tests import site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import site_support  # type: ignore[no-redef]

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
# axe-core from the npm registry, installed by `make axe` (npm install --prefix .cache/axe).
AXE = site_support.REPO / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
TIMEOUT_MS = 20_000
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
# A visit that is not a first visit: the reader's-language redirect (overrides/main.html) only
# acts on the first page of a browser session.
NOT_FIRST_VISIT = "try { sessionStorage.setItem('glossary-seen', '1'); } catch (e) {}"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> None:
    """Skip the calling test with ``reason``, or fail it under CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium under Playwright, closed on exit."""
    if not CHROMIUM.is_file():
        unavailable(f"{CHROMIUM} is missing; install it with `make browser` (apt chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is missing (test extra)")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@contextmanager
def context(browser: Any, base_url: str, **options: Any) -> Iterator[Any]:
    """A fresh browser context on the served site (en-US and a desktop window by default)."""
    settings: dict[str, Any] = {"locale": "en-US", "viewport": DESKTOP, **options}
    ctx = browser.new_context(base_url=base_url, **settings)
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()


def axe_script() -> Path:
    """The axe-core script to inject into pages (skips or fails when it is not installed)."""
    if not AXE.is_file():
        unavailable(f"{AXE.relative_to(site_support.REPO)} is missing; install it with `make axe`")
    return AXE
