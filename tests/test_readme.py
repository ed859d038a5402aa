"""README.md: it starts with its two commands, and every local link in it resolves to a file.

No browser: the screenshots it links are those ``scripts/screenshots.py`` writes (checked here
against the script's list), committed under ``site_src/assets/screenshots/``.
"""

from __future__ import annotations

import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# The target of [text](target) and ![alt](target): <in angle brackets> or up to a space (before
# a "title") or the closing bracket; a linked image [![alt](image)](target) has two.
_LINK = re.compile(r'\]\(\s*(?:<([^>]+)>|([^)\s]+))(?:\s+"[^"]*")?\s*\)')
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _screenshots_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "screenshots", ROOT / "scripts" / "screenshots.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def local_links(markdown: str) -> list[str]:
    """The link and image targets of ``markdown`` that point into the repository (code blocks,
    web addresses, mail and in-page anchors left out)."""
    targets = [bracketed or plain for bracketed, plain in _LINK.findall(_FENCE.sub("", markdown))]
    return [t for t in targets if not urlsplit(t).scheme and not t.startswith(("#", "//"))]


def test_local_links_are_found_and_others_skipped() -> None:
    text = (
        "See [a](docs/a.md#part) and ![b](<img/b c.png>) or [c](https://x.org/) [d](#top)\n"
        "```sh\n[e](not/a/link.md)\n```\n"
        '[f](img/f.png "title")'
    )
    assert local_links(text) == ["docs/a.md#part", "img/b c.png", "img/f.png"]


def test_readme_starts_with_its_two_commands() -> None:
    first_block = README.read_text(encoding="utf-8").split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in first_block.splitlines()] == [
        ["make", "serve"],
        ["make", "test"],
    ]


def test_every_local_link_of_the_readme_resolves() -> None:
    links = local_links(README.read_text(encoding="utf-8"))
    assert links, "the README links no local file"
    missing = [link for link in links if not (ROOT / unquote(urlsplit(link).path)).exists()]
    assert missing == []


def test_the_readme_shows_every_screenshot_the_script_takes() -> None:
    script = _screenshots_script()
    linked = {
        (ROOT / unquote(urlsplit(link).path)).resolve()
        for link in local_links(README.read_text(encoding="utf-8"))
    }
    for shot in script.SHOTS:
        assert shot.file.resolve() in linked, shot.name
        assert shot.file.stat().st_size < 400_000, f"{shot.name}: not optimised"


def test_screenshots_are_optimised_to_a_palette() -> None:
    from PIL import Image

    image = Image.new("RGB", (40, 20), "white")
    image.paste((64, 81, 181), (0, 0, 20, 20))
    raw = io.BytesIO()
    image.save(raw, format="PNG")
    small = Image.open(io.BytesIO(_screenshots_script().optimised_png(raw.getvalue())))
    assert small.mode == "P" and small.size == (40, 20)
    assert small.convert("RGB").getpixel((5, 5)) == (64, 81, 181)
