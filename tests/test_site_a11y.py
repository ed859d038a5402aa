"""Accessibility: axe-core (the npm package, ``make axe``) run inside Chromium on the built site.

Home, A-Z, compare, stacking, downloads and two technique pages, in each language, in the light
scheme on a desktop window, in the dark scheme and on a phone: no critical or serious violation. The
moderate and minor ones (landmark names, heading levels inside the API docs) are not counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

try:
    from tests import browser_support, site_support
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    import browser_support  # type: ignore[no-redef]
    import site_support  # type: ignore[no-redef]

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("site")]
PAGES = (
    "",
    "index-a-z/",
    "compare/",
    "stacking/",
    "downloads/",
    "terms/feature-caching/",
    "terms/pruning/",
)
BLOCKING = ("critical", "serious")
VARIANTS = {
    "light": {"color_scheme": "light", "viewport": browser_support.DESKTOP},
    "dark": {"color_scheme": "dark", "viewport": browser_support.DESKTOP},
    "phone": {"color_scheme": "light", "viewport": browser_support.PHONE, "is_mobile": True},
}
_RUN_AXE = """() => axe.run(document, {resultTypes: ["violations"]}).then(result =>
  result.violations.map(rule => ({
    id: rule.id,
    impact: rule.impact,
    targets: rule.nodes.map(node => node.target.join(" ")),
  })))"""


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def tab(request: pytest.FixtureRequest, browser: Any, base_url: str) -> Iterator[Any]:
    """One tab per variant (scheme, window), reused by every page of that variant."""
    browser_support.axe_script()  # skips (fails under CI) before a page opens when missing
    with browser_support.context(browser, base_url, **VARIANTS[request.param]) as ctx:
        ctx.add_init_script(browser_support.NOT_FIRST_VISIT)
        yield ctx.new_page()


def violations(page: Any, path: str) -> list[dict[str, Any]]:
    """axe-core's violations on ``path``: rule id, impact and the selectors of the nodes."""
    page.goto(path, wait_until="load")
    page.add_script_tag(path=str(browser_support.AXE))
    return page.evaluate(_RUN_AXE)


def blocking(found: list[dict[str, Any]]) -> list[str]:
    """One line per critical or serious node: ``rule (impact): selector``."""
    return [
        f"{rule['id']} ({rule['impact']}): {target}"
        for rule in found
        if rule["impact"] in BLOCKING
        for target in rule["targets"]
    ]


@pytest.mark.parametrize("lang", site_support.LANGS)
@pytest.mark.parametrize("page_path", PAGES)
def test_no_critical_or_serious_violation(tab: Any, lang: str, page_path: str) -> None:
    path = f"{site_support.LANG_PREFIX[lang]}{page_path}"
    found = violations(tab, path)
    assert tab.evaluate("document.documentElement.lang") == lang
    assert blocking(found) == [], f"/{path}"


def test_the_check_sees_a_serious_violation(tab: Any) -> None:
    """The check is live: a grey-on-grey paragraph and an unnamed dialog are reported."""
    violations(tab, "")
    tab.evaluate(
        """() => {
          const probe = document.createElement("div");
          probe.innerHTML = '<p style="color:#aaa;background:#bbb">faint</p>' +
            '<div role="dialog"><button>x</button></div>';
          document.querySelector("article").append(probe);
        }"""
    )
    found = blocking(tab.evaluate(_RUN_AXE))
    assert any(line.startswith("color-contrast (serious)") for line in found), found
    assert any(line.startswith("aria-dialog-name (serious)") for line in found), found


@pytest.mark.parametrize("lang", site_support.LANGS)
def test_table_regions_are_named_in_the_page_language_and_focusable(tab: Any, lang: str) -> None:
    """Every table scrolls inside a region that the keyboard reaches (tabindex 0) and that a
    screen reader announces by name, in the page's language."""
    from glossary.resulttext import ResultText

    tab.goto(f"{site_support.LANG_PREFIX[lang]}terms/feature-caching/", wait_until="load")
    regions = tab.locator(".md-typeset table").evaluate_all(
        """tables => tables.map(table => {
          const region = table.closest("[role=region]");
          return region && [region.tabIndex, region.getAttribute("aria-label")];
        })"""
    )
    label = ResultText("results", lang).message("site.table-region")
    assert regions and all(region == [0, label] for region in regions), regions


def test_code_documentation_page_has_no_critical_or_serious_violation(
    browser: Any, base_url: str
) -> None:
    """The API page of a technique (English mkdocstrings output marked lang="en" on a Spanish
    page): one variant, it is long."""
    browser_support.axe_script()
    with browser_support.context(browser, base_url, **VARIANTS["light"]) as ctx:
        ctx.add_init_script(browser_support.NOT_FIRST_VISIT)
        page = ctx.new_page()
        found = violations(page, "es/api/feature-caching/")
        assert page.evaluate("document.documentElement.lang") == "es"
        english = page.evaluate(
            "() => document.querySelector('.doc-object').closest('[lang]').lang"
        )
        assert english == "en"
        assert blocking(found) == []
