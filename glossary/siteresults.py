"""The measured part of a technique page, rendered from a language-neutral result file.

A result (:mod:`reference.harness.schema`, version 2) holds ids and numbers; every word shown
here comes from the gettext catalogs through :class:`glossary.resulttext.ResultText` (the
technique's own catalog, then the shared ``results`` catalog), and every number is formatted
for the page's locale by Babel. A summary table (configuration, role, quality, speedup with its
95% interval beside the limit) comes first; the full measurement table sits in a second content
tab, so that the page never scrolls sideways for the headline.

Only standard results are published: :func:`load_results` refuses a non-standard or ``--quick``
result unless the build explicitly allows it (``GLOSSARY_ALLOW_NONSTANDARD=1``, for tests).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .resulttext import ResultText, format_number

ALLOW_ENV = "GLOSSARY_ALLOW_NONSTANDARD"
ARROWS = {"lower": "↓", "higher": "↑"}


class ResultError(Exception):
    """A result file that cannot be published (unreadable, invalid, non-standard)."""


@dataclass
class Results:
    """The benchmark results that exist, keyed by technique slug."""

    directory: Path
    by_slug: dict[str, dict[str, Any]] = field(default_factory=dict)


def _problems(data: Any, path: Path, allow_nonstandard: bool) -> list[str]:
    from reference.harness.schema import validate_result

    problems = validate_result(data)
    if problems:
        return problems
    if data["slug"] != path.stem:
        problems.append(f"slug: {data['slug']!r} does not match the file name")
    if not allow_nonstandard and (not data["standard"] or data["quick"]):
        problems.append("not a standard run (quick or options changed); rerun glossary bench")
    return problems


def load_results(directory: Path, allow_nonstandard: bool | None = None) -> Results:
    """Read and validate every ``<slug>.json`` in ``directory`` (missing folder: no results)."""
    if allow_nonstandard is None:
        allow_nonstandard = os.environ.get(ALLOW_ENV) == "1"
    results = Results(directory)
    if not directory.is_dir():
        return results
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ResultError(f"{path}: cannot read result: {exc}") from None
        problems = _problems(data, path, allow_nonstandard)
        if problems:
            raise ResultError(f"{path}: " + "; ".join(problems))
        results.by_slug[path.stem] = data
    return results


def number(value: Any, lang: str, spec: str = ".4g") -> str:
    """A measured value for ``lang`` (``—`` when it was not measured)."""
    if value is None or isinstance(value, bool):
        return "—"
    return format_number(float(value), lang, spec)


def interval(span: Any, lang: str, spec: str = ".3g") -> str:
    """``[lo – hi]`` in the locale's digits ('' without an interval)."""
    if not span:
        return ""
    return f" [{number(span[0], lang, spec)}–{number(span[1], lang, spec)}]"


def metric_header(text: ResultText, key: str, meta: dict[str, Any]) -> str:
    from .sitegen import escape_text

    unit = text.unit(meta["unit"])
    label = escape_text(text.metric(key))
    arrow = ARROWS[meta["better"]]
    return f"{label} ({escape_text(unit)}) {arrow}" if unit else f"{label} {arrow}"


def _cell(row: dict[str, Any], key: str, lang: str) -> str:
    value = number(row["values"].get(key), lang)
    if key in row.get("intervals", {}):
        value += interval(row["intervals"][key], lang)
    elif key in row.get("spread", {}):
        value += " ± " + number(row["spread"][key], lang, ".2g")
    return value


def summary_table(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    """Configuration, role, the headline quality metric and the speedup with its interval."""
    from .sitegen import escape_text, table_row

    metrics = result["metrics"]
    head = result["headline"] or {}
    keys = [k for k in (head.get("quality_metric"), "speedup") if k and k in metrics]
    if not keys:
        keys = list(metrics)[:2]
    header = [text.message("site.configuration"), text.message("site.role")]
    header += [metric_header(text, k, metrics[k]) for k in keys]
    lines = [table_row(header), "|---|---|" + "---:|" * len(keys)]
    for row in result["rows"]:
        cells = [escape_text(text.config(row["config"])), text.role(row["role"])]
        cells += [_cell(row, k, lang) for k in keys]
        lines.append(table_row(cells))
    return [*lines, ""]


def full_table(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    """Every metric of every row."""
    from .sitegen import escape_text, table_row

    metrics = result["metrics"]
    header = [text.message("site.configuration"), text.message("site.role")]
    header += [metric_header(text, k, m) for k, m in metrics.items()]
    lines = [table_row(header), "|---|---|" + "---:|" * len(metrics)]
    for row in result["rows"]:
        cells = [escape_text(text.config(row["config"])), text.role(row["role"])]
        cells += [_cell(row, k, lang) for k in metrics]
        lines.append(table_row(cells))
    return [*lines, ""]


def headline_line(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    head = result["headline"]
    if not head:
        return []
    parts = []
    if head["speedup"] is not None:
        part = text.message("site.speedup") + f" **{number(head['speedup'], lang, '.3g')}×**"
        part += interval(head["speedup_interval"], lang)
        if head["speedup_limit"] is not None:
            kind = "site.limit-bound" if head["limit_kind"] == "bound" else "site.limit-estimate"
            part += f" ({text.message(kind)} {number(head['speedup_limit'], lang, '.3g')}×)"
        parts.append(part)
    if head["memory_ratio"] is not None:
        ratio = number(head["memory_ratio"], lang, ".3g")
        parts.append(text.message("site.memory-ratio") + f" **{ratio}**")
    if head["quality_ratio"] is not None:
        ratio = number(head["quality_ratio"], lang, ".3g") + interval(
            head["quality_interval"], lang
        )
        metric = text.metric(head["quality_metric"]) if head["quality_metric"] else ""
        parts.append(text.message("site.quality-ratio") + f" **{ratio}** ({metric})")
    lines = [" · ".join(parts), ""] if parts else []
    from .sitegen import admonition, escape_markdown

    for anomaly in result["anomalies"]:
        lines += [admonition("danger", text.message("site.anomaly")), ""]
        lines += ["    " + escape_markdown(text.anomaly(anomaly)), ""]
    return lines


def aims_table(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    from .sitegen import escape_text, heading, table_row

    if not result["aims"]:
        return []
    symbols = {">=": "≥", "<=": "≤", ">": ">", "<": "<"}
    marks = {"met": "✓", "missed": "✗", "inconclusive": "?"}
    lines = [heading(3, text.message("site.aims"), "aims"), ""]
    lines += [
        table_row(
            [
                text.message("site.aim"),
                text.message("site.measured"),
                text.message("site.target"),
                text.message("site.state"),
            ]
        ),
        "|---|---:|---:|---|",
    ]
    for a in result["aims"]:
        measured = number(a["measured"], lang, ".3g") + interval(a["interval"], lang)
        target = f"{symbols[a['comparison']]} {number(a['target'], lang, '.3g')}"
        state = f"{marks[a['state']]} {text.state(a['state'])}"
        lines.append(table_row([escape_text(text.aim(a)), measured, target, state]))
    return [*lines, ""]


def legend(text: ResultText) -> list[str]:
    """What the roles, the interval, the limit and the three aim states mean."""
    from .sitegen import admonition

    return [
        admonition("info", text.message("site.legend-title")),
        "",
        "    " + text.message("site.legend"),
        "",
    ]


def figures(result: dict[str, Any], text: ResultText, figures_dir: str) -> list[str]:
    from .sitegen import escape_markdown, escape_text

    lines = []
    for fig in result["figures"]:
        caption = text.caption(fig)
        lines += [f"![{escape_text(caption)}](../../{figures_dir}/{fig['file']})", ""]
        lines += [f"*{escape_markdown(caption)}*", ""]
    return lines


def provenance(result: dict[str, Any], text: ResultText, lang: str) -> list[str]:
    from .sitegen import escape_text, format_date

    prov = result["provenance"]
    versions = ", ".join(f"{k} {v}" for k, v in prov["versions"].items())
    load = prov["load_average"]
    facts = [
        text.message("site.commit") + f" `{prov['commit'][:12]}`",
        escape_text(versions),
        escape_text(prov["cpu"]),
        escape_text(prov["platform"]),
        text.message("site.threads", {"n": prov["threads"]}),
        text.message("site.load", {"start": load["start"][0], "end": load["end"][0]}),
        format_date(prov["date"], lang),
    ]
    covered = text.message(
        "site.covered", {"files": len(prov["files"]), "weights": len(prov["weights"])}
    )
    lines = [text.message("site.provenance") + ": " + " · ".join(facts) + ".", "", covered, ""]
    settings = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in result["settings"].items())
    if settings:
        lines += [text.message("site.settings") + ": " + settings + ".", ""]
    return lines


def benchmark_section(
    slug: str, result: dict[str, Any] | None, lang: str, figures_dir: str, command: str
) -> list[str]:
    """The page's benchmark section, or a plain statement that nothing was measured."""
    from .sitegen import escape_markdown, heading

    text = ResultText(slug, lang)
    lines = [heading(2, text.message("site.benchmark"), "benchmark"), ""]
    if result is None:
        return [*lines, text.message("site.no-results"), ""]
    lines += [f"**{text.title()}**", ""]
    lines += headline_line(result, text, lang)
    lines += [f'=== "{text.message("site.summary")}"', ""]
    lines += ["    " + line if line else "" for line in summary_table(result, text, lang)]
    lines += [f'=== "{text.message("site.all-measurements")}"', ""]
    lines += ["    " + line if line else "" for line in full_table(result, text, lang)]
    lines += legend(text)
    lines += aims_table(result, text, lang)
    if result["notes"]:
        lines += [heading(3, text.message("site.notes"), "notes"), ""]
        lines += [f"- {escape_markdown(text.note(n))}" for n in result["notes"]] + [""]
    shown = figures(result, text, figures_dir)
    if shown:
        lines += [heading(3, text.message("site.figures"), "figures"), "", *shown]
    lines += provenance(result, text, lang)
    lines += [text.message("site.reproduce") + f": `{command}`", ""]
    return lines


def compare_cells(result: dict[str, Any], lang: str) -> list[str]:
    """Speedup [interval], limit (kind), quality ratio and the aims' states for the compare page."""
    text = ResultText(result["slug"], lang)
    head = result["headline"] or {}
    speed = number(head.get("speedup"), lang, ".3g")
    if head.get("speedup") is not None:
        speed += "×" + interval(head.get("speedup_interval"), lang)
    if result["anomalies"]:
        speed += " ⚠ " + text.message("site.anomaly")
    limit = number(head.get("speedup_limit"), lang, ".3g")
    if head.get("speedup_limit") is not None:
        kind = "site.limit-bound" if head.get("limit_kind") == "bound" else "site.limit-estimate"
        limit += f"× ({text.message(kind)})"
    quality = number(head.get("quality_ratio"), lang, ".3g")
    states = [a["state"] for a in result["aims"]]
    aims = " · ".join(
        f"{states.count(s)} {text.state(s)}" for s in ("met", "missed", "inconclusive")
    )
    return [speed, limit, quality, aims or "—"]
