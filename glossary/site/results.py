"""The benchmark results the site publishes, read through the shared result schema.

A result (:mod:`reference.harness.schema`, version 3, or version 4 with raw timing rounds and
a digest) is language-neutral: ids and numbers. :func:`load_results` checks every
``<slug>.json`` with the same functions as ``glossary bench --check``
(:mod:`reference.harness.integrity`: finite numbers in range, bounded depth, the schema of its
version, every derived figure recomputed from the raw values), so a file the check would refuse,
a hand-edited one among them, is never rendered. Only standard results are published: a
non-standard or ``--quick`` result is refused unless the build explicitly allows it
(``GLOSSARY_ALLOW_NONSTANDARD=1``, for tests). The directory defaults to ``reference/results``
and can be changed with ``GLOSSARY_RESULTS_DIR`` (the site tests use a fixture).

A *composite* result (:data:`COMPOSITES`: ``stacking.json``, the study of stacked techniques,
written by ``reference.stacking``) is validated the same way but is not a technique's result:
it is kept in :attr:`Results.composites`, apart from :attr:`Results.by_slug`, and gets a page of
its own (:mod:`glossary.site.stacking`) instead of a technique chart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reference.harness.integrity import audit, parse, schema_problems, value_problems

RESULTS_ENV = "GLOSSARY_RESULTS_DIR"
ALLOW_ENV = "GLOSSARY_ALLOW_NONSTANDARD"
REPO_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_RESULTS_DIR = REPO_ROOT / "reference" / "results"
COMPOSITES = ("stacking", "baseline-sanity", "realshape")
"""Result slugs of studies (the stacking study, the baseline sanity check, the real-shape
timings), not of a registered technique."""
FIGURES_DIR = "assets/results"
"""Where the result figures go in the docs directory (committed PNGs and the drawn SVGs)."""

Result = dict[str, Any]


class SiteGenError(Exception):
    """A problem that stops generation (unreadable or invalid results, bad figure names)."""


@dataclass
class Results:
    """The benchmark results that exist: per technique (keyed by its slug) and composite."""

    directory: Path
    by_slug: dict[str, Result] = field(default_factory=dict)
    composites: dict[str, Result] = field(default_factory=dict)
    """The composite results (:data:`COMPOSITES`) that exist, keyed by their slug."""

    def all(self) -> dict[str, Result]:
        """Every result, technique and composite, keyed by slug."""
        return {**self.by_slug, **self.composites}


def results_dir() -> Path:
    """The results directory: ``$GLOSSARY_RESULTS_DIR`` or ``reference/results``."""
    override = os.environ.get(RESULTS_ENV)
    return Path(override).resolve() if override else DEFAULT_RESULTS_DIR


def _problems(data: Any, path: Path, allow_nonstandard: bool) -> list[str]:
    """What stops ``data`` from being published: its numbers, its schema (by version), its
    name, whether it is the standard run, then every recomputed figure that differs from the
    recorded one (:func:`reference.harness.integrity.audit`)."""
    problems = value_problems(data)
    if problems:
        return problems
    problems = schema_problems(data)
    if problems:
        return problems
    if data["slug"] != path.stem:
        problems.append(f"slug: {data['slug']!r} does not match the file name")
    if not allow_nonstandard and (not data["standard"] or data["quick"]):
        problems.append("not a standard run (quick or options changed); rerun glossary bench")
    return problems or audit(data).problems


def read_result(path: Path) -> Any:
    """The JSON of ``path``; :class:`SiteGenError` naming the file if it cannot be read (also
    for nesting deeper than 32 levels, measured before the parser recurses, and integers too
    long to convert). ``NaN`` and ``Infinity`` are kept as markers that :func:`value_problems`
    names with their field (:func:`reference.harness.integrity.parse`)."""
    try:
        return parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise SiteGenError(f"{path}: cannot read result: {reason}") from None


def load_results(directory: Path, allow_nonstandard: bool | None = None) -> Results:
    """Read and validate every ``<slug>.json`` in ``directory`` (missing folder: no results).

    Raises :class:`SiteGenError` naming the file and every problem of the first bad one.
    """
    if allow_nonstandard is None:
        allow_nonstandard = os.environ.get(ALLOW_ENV) == "1"
    results = Results(directory)
    if not directory.is_dir():
        return results
    for path in sorted(directory.glob("*.json")):
        data = read_result(path)
        problems = _problems(data, path, allow_nonstandard)
        if problems:
            raise SiteGenError(f"{path}: " + "; ".join(problems))
        target = results.composites if path.stem in COMPOSITES else results.by_slug
        target[path.stem] = data
    return results


def aims_verdict(states: list[str]) -> Literal["yes", "no", "inconclusive"]:
    """What a set of aim states says together: ``yes`` when every one is met, ``no`` when every
    one is missed, ``inconclusive`` otherwise (an inconclusive aim, or a met and a missed one)."""
    if all(s == "met" for s in states):
        return "yes"
    if all(s == "missed" for s in states):
        return "no"
    return "inconclusive"
