"""Shared helpers of the site tests: one strict MkDocs build per test process, a local server.

The build copies ``site_src/`` (the hand-written pages, overrides and assets, without generated
pages) into a temporary directory and writes a configuration derived from the real
``mkdocs.yml`` that points there, so the test build never touches the repository's generated
pages. The entries are the project's entries plus the fixture entry ``xss-probe`` (markup in
every field); the results come from ``tests/fixtures/site/results`` (through
``GLOSSARY_RESULTS_DIR``), so the tests do not depend on which benchmarks have run.
"""

from __future__ import annotations

import fcntl
import functools
import html.parser
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from glossary.site.serve import serve as serve  # re-exported for the browser tests

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "site"
FIXTURE_ENTRY = FIXTURES / "entries" / "xss-probe.yaml"
PLANNED_ENTRY = FIXTURES / "entries" / "planned-probe.yaml"
LANGS = ("en", "es", "ru")
LANG_PREFIX = {"en": "", "es": "es/", "ru": "ru/"}
GENERATED = (
    "terms",
    "api",
    "categories",
    "index-a-z.md",
    "compare.md",
    "stacking.md",
    "guide.md",
    "results",
)


@dataclass(frozen=True)
class BuiltSite:
    """A finished build: where it is, what MkDocs printed, how long it took."""

    root: Path
    site: Path
    docs: Path
    output: str
    seconds: float
    returncode: int

    def page(self, lang: str, path: str) -> Path:
        """The built HTML of ``path`` (e.g. ``terms/pruning/``) in ``lang``."""
        return self.site / LANG_PREFIX[lang] / path / "index.html"

    def html(self, lang: str, path: str) -> str:
        return self.page(lang, path).read_text(encoding="utf-8")


def _ignore_generated(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in GENERATED}


def _plugin_options(plugins: list[Any], name: str) -> dict[str, Any]:
    for item in plugins:
        if isinstance(item, dict) and name in item:
            return item[name]
    raise KeyError(name)


class _ConfigLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that resolves MkDocs' ``!ENV [NAME, default]`` tag."""


def _env_tag(loader: yaml.SafeLoader, node: yaml.Node) -> object:
    names = (
        loader.construct_sequence(node)
        if isinstance(node, yaml.SequenceNode)
        else [
            loader.construct_scalar(node)  # type: ignore[arg-type]
        ]
    )
    *variables, default = names if len(names) > 1 else [*names, None]
    return next((os.environ[v] for v in variables if v in os.environ), default)


_ConfigLoader.add_constructor("!ENV", _env_tag)


def write_config(root: Path) -> Path:
    """A copy of ``mkdocs.yml`` whose paths point into ``root`` (docs) and the repository."""
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_ConfigLoader)
    docs = root / "site_src"
    shutil.copytree(REPO / "site_src", docs, ignore=_ignore_generated)
    config["docs_dir"] = str(docs)
    config["site_dir"] = str(root / "site")
    config["theme"]["custom_dir"] = str(docs / "overrides")
    config["hooks"] = [str(REPO / hook) for hook in config["hooks"]]
    config["watch"] = [str(REPO / path) for path in config.get("watch", [])]
    python = _plugin_options(config["plugins"], "mkdocstrings")["handlers"]["python"]
    python["paths"] = [str(REPO), str(FIXTURES)]
    path = root / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), "utf-8")
    return path


def entries_with_fixture(root: Path, source: Path | None = None) -> Path:
    """The project's entries (or ``source``) plus the fixture entries ``xss-probe`` and
    ``planned-probe`` (a technique whose module is planned)."""
    target = root / "entries"
    source = source or REPO / "glossary" / "entries"
    shutil.copytree(source, target)
    for fixture in (FIXTURE_ENTRY, PLANNED_ENTRY):
        shutil.copy2(fixture, target / fixture.name)
    return target


def build(root: Path, entries: Path, results: Path) -> BuiltSite:
    """Run ``mkdocs build --strict`` into ``root/site`` and return what happened."""
    config = write_config(root)
    env = dict(os.environ)
    env["GLOSSARY_ENTRIES_DIR"] = str(entries)
    env["GLOSSARY_RESULTS_DIR"] = str(results)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FIXTURES), env.get("PYTHONPATH")]))
    site = root / "site"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - start
    return BuiltSite(
        root, site, root / "site_src", proc.stdout + proc.stderr, seconds, proc.returncode
    )


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build directory shared by all xdist workers of this test session."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's basetemp; each worker has a popen-gwN below it
    return base / "site-build"


@functools.cache
def session_build(root: str) -> BuiltSite:
    """The one build per test session, shared by test modules and xdist workers.

    The xdist group ``site`` should keep the site tests on one worker, but with pytest 9 and
    pytest-xdist 3.8 the group is silently ignored, so workers also coordinate through a lock
    file: the first builds, the others wait and reuse its result.
    """
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    record = base / "build.json"
    with (base.parent / f"{base.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.is_file():
            data = json.loads(record.read_text(encoding="utf-8"))
            return BuiltSite(
                base,
                base / "site",
                base / "site_src",
                data["output"],
                data["seconds"],
                data["returncode"],
            )
        entries = entries_with_fixture(base, _entries_source())
        built = build(base, entries, FIXTURES / "results")
        record.write_text(
            json.dumps(
                {"output": built.output, "seconds": built.seconds, "returncode": built.returncode}
            ),
            encoding="utf-8",
        )
        return built


def _entries_source() -> Path | None:
    override = os.environ.get("GLOSSARY_TEST_ENTRIES")
    return Path(override) if override else None


def require_ok(built: BuiltSite) -> BuiltSite:
    """Fail the calling test with MkDocs' output if the build failed."""
    if built.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{built.output[-4000:]}", pytrace=False)
    return built


# ------------------------------------------------------------------------------------------
# A small link checker (the second opinion next to lychee)


class _LinkParser(html.parser.HTMLParser):
    """Collects ids/names and the local links of one HTML page."""

    ATTRS: ClassVar[dict[str, str]] = {
        "a": "href",
        "link": "href",
        "img": "src",
        "script": "src",
        "source": "src",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("id", "name"):
            if values.get(key):
                self.ids.add(str(values[key]))
        attr = self.ATTRS.get(tag)
        if attr and values.get(attr):
            self.links.append((tag, str(values[attr])))


@functools.cache
def _parse(path: Path) -> _LinkParser:
    parser = _LinkParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _target_file(site: Path, page: Path, href: str) -> Path:
    path = unquote(urlsplit(href).path)
    if path.startswith("/"):
        target = site / path.lstrip("/")
    elif path:
        target = (page.parent / path).resolve()
    else:
        target = page
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target


def broken_links(site: Path) -> list[str]:
    """Every local link or anchor in ``site``'s HTML that does not resolve, one line each."""
    site = site.resolve()
    problems = []
    for page in sorted(site.rglob("*.html")):
        for tag, href in _parse(page).links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "data:")):
                continue
            target = _target_file(site, page, href)
            where = f"{page.relative_to(site)}: <{tag}> {href}"
            if not target.is_file():
                problems.append(f"{where}: no such file")
            elif (
                parts.fragment
                and target.suffix == ".html"
                and unquote(parts.fragment) not in _parse(target).ids
            ):
                problems.append(f"{where}: no anchor #{parts.fragment}")
    return problems
