"""The site's downloads: every export of the glossary, built with the site, and a page per language.

The files are written into ``<docs>/assets/downloads/`` at build time (never committed): TBX v3
(ISO 30042:2019), TBX v2 (martif), CSV, SKOS as JSON-LD, the project's JSON and the JSON Schema
that the JSON export follows. Each language's ``downloads.md`` lists them with their size and the
build date, in that language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from glossary.export import export_text
from glossary.model import Glossary
from glossary.resulttext import ResultText, format_number
from glossary.site.markdown import table_row

DOWNLOADS_DIR = "assets/downloads"
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "export.schema.json"


@dataclass(frozen=True)
class Download:
    """One offered file: its name, the export format that makes it and its description id."""

    file: str
    fmt: str | None  # None: the JSON Schema, copied as it is
    description: str


DOWNLOADS = (
    Download("glossary.tbx", "tbx", "site.download-tbx3"),
    Download("glossary-tbx2.tbx", "tbx2", "site.download-tbx2"),
    Download("glossary.csv", "csv", "site.download-csv"),
    Download("glossary.skos.jsonld", "skos", "site.download-skos"),
    Download("glossary.json", "json", "site.download-json"),
    Download("glossary.schema.json", None, "site.download-schema"),
)


def files(glossary: Glossary) -> dict[str, bytes]:
    """Every download's bytes, keyed by file name."""
    out = {}
    for d in DOWNLOADS:
        data = SCHEMA_FILE.read_bytes() if d.fmt is None else export_text(glossary, d.fmt).encode()
        out[d.file] = data
    return out


def _size(n: int, lang: str) -> str:
    return f"{format_number(n / 1024, lang, '.1f')} KiB"


def page(lang: str, sizes: dict[str, int], today: datetime | None = None) -> str:
    """The downloads page of ``lang``: one row per file with its size and the build date."""
    from babel.dates import format_date

    text = ResultText("results", lang)
    when = format_date((today or datetime.now(UTC)).date(), format="long", locale=lang)
    lines = [
        "# " + text.message("site.downloads-title"),
        "",
        text.message("site.downloads-intro", {"date": when}),
        "",
        table_row(
            [
                text.message("site.download-file"),
                text.message("site.download-format"),
                text.message("site.download-size"),
            ]
        ),
        "|---|---|---:|",
    ]
    for d in DOWNLOADS:
        link = f"[`{d.file}`](../{DOWNLOADS_DIR}/{d.file})"
        lines.append(table_row([link, text.message(d.description), _size(sizes[d.file], lang)]))
    lines += ["", text.message("site.downloads-cli"), "", "```sh"]
    lines += [f".venv/bin/glossary export --format {d.fmt} -o {d.file}" for d in DOWNLOADS if d.fmt]
    lines += ["```", ""]
    return "\n".join(lines)


def write(
    glossary: Glossary, docs_dir: Path, write_file: Callable[[Path, bytes], None]
) -> tuple[dict[str, int], set[Path]]:
    """Write the downloads into ``docs_dir``; return their sizes and paths."""
    sizes, paths = {}, set()
    for name, data in files(glossary).items():
        path = docs_dir / DOWNLOADS_DIR / name
        write_file(path, data)
        sizes[name], paths = len(data), paths | {path}
    return sizes, paths
