"""Screenshots of the site for the README, in Debian's chromium (Playwright), never a download.

Usage::

    .venv/bin/python scripts/screenshots.py             # build the site, shoot, write the PNGs
    .venv/bin/python scripts/screenshots.py --site site # shoot an existing build instead
    .venv/bin/python scripts/screenshots.py --only guide # only the shots whose name starts so
    .venv/bin/python scripts/screenshots.py --site site --only feature-caching  # a technique page

Builds the site from the repository (``mkdocs build --strict`` into a temporary folder, the
committed results), serves it on 127.0.0.1 and takes each shot of :data:`SHOTS` at its window
size (device scale 1, light scheme, the page's language as the browser's, the window only, not
the full page). Each PNG is reduced to a 256-colour palette and written, optimised, to
``site_src/assets/screenshots/`` (excluded from the site itself; the README links them).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glossary.site.serve import serve

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "site_src" / "assets" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
LOCALES = {"es": "es-ES", "ru": "ru-RU", "en": "en-US"}
DESKTOP = (1366, 900)
PHONE = (390, 844)


@dataclass(frozen=True)
class Shot:
    """One screenshot: a page of the site (with an optional anchor) at a window size."""

    name: str
    lang: str
    path: str
    size: tuple[int, int]

    @property
    def file(self) -> Path:
        return OUT / f"{self.name}.png"


SHOTS = (
    Shot("feature-caching-top-es-1366", "es", "es/terms/feature-caching/", DESKTOP),
    Shot("feature-caching-top-es-390", "es", "es/terms/feature-caching/", PHONE),
    Shot("feature-caching-top-ru-1366", "ru", "ru/terms/feature-caching/", DESKTOP),
    Shot("feature-caching-top-ru-390", "ru", "ru/terms/feature-caching/", PHONE),
    Shot("feature-caching-es-1366", "es", "es/terms/feature-caching/#benchmark", DESKTOP),
    Shot("feature-caching-es-390", "es", "es/terms/feature-caching/#benchmark", PHONE),
    Shot("feature-caching-ru-1366", "ru", "ru/terms/feature-caching/#benchmark", DESKTOP),
    Shot("feature-caching-ru-390", "ru", "ru/terms/feature-caching/#benchmark", PHONE),
    Shot("compare-es-1366", "es", "es/compare/#charts", DESKTOP),
    Shot("guide-es-1366", "es", "es/guide/#goal-fewer-steps", DESKTOP),
    Shot("guide-es-390", "es", "es/guide/#goal-fewer-steps", PHONE),
    Shot("guide-ru-1366", "ru", "ru/guide/#goal-fewer-steps", DESKTOP),
    Shot("guide-ru-390", "ru", "ru/guide/#goal-fewer-steps", PHONE),
)


def build_site(target: Path) -> Path:
    """``mkdocs build --strict`` of the repository into ``target``."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(target)]
    subprocess.run(command, cwd=REPO, check=True)
    return target


def optimised_png(raw: bytes) -> bytes:
    """``raw`` as a 256-colour palette PNG, optimised (text and flat colours survive it)."""
    from PIL import Image

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()


def shoot(browser: Any, base_url: str, shot: Shot) -> bytes:
    """The window of ``shot`` once the page, its fonts and its images have loaded."""
    width, height = shot.size
    context = browser.new_context(
        base_url=base_url,
        locale=LOCALES[shot.lang],
        color_scheme="light",
        viewport={"width": width, "height": height},
        device_scale_factor=1,
        is_mobile=shot.size == PHONE,
    )
    try:
        # Not a first visit: the reader's-language redirect never moves the page.
        context.add_init_script("sessionStorage.setItem('glossary-seen', '1')")
        page = context.new_page()
        page.goto(shot.path, wait_until="load")
        page.evaluate(
            "() => document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; })"
        )
        page.wait_for_function("() => [...document.images].every(img => img.complete)")
        page.evaluate("() => document.fonts.ready")
        return page.screenshot(full_page=False, animations="disabled")
    finally:
        context.close()


def take(site: Path, shots: tuple[Shot, ...] = SHOTS) -> list[Path]:
    """Shoot every shot of ``shots`` on the built ``site``; return the files written."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        raise SystemExit(f"{CHROMIUM} is missing: make browser (Debian's chromium)")
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    with serve(site) as base_url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for shot in shots:
                shot.file.write_bytes(optimised_png(shoot(browser, base_url, shot)))
                written.append(shot.file)
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--site", type=Path, help="an existing build to shoot (default: build)")
    parser.add_argument("--only", default="", help="only the shots whose name starts with this")
    args = parser.parse_args(argv)
    shots = tuple(shot for shot in SHOTS if shot.name.startswith(args.only))
    if not shots:
        parser.error(f"--only {args.only!r}: no shot's name starts so")
    with tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        site = args.site or build_site(Path(tmp) / "site")
        for path in take(site, shots):
            print(f"{path.relative_to(REPO)}  {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
