"""What the stacking page and its charts read from ``stacking.json``, without drawing anything.

The result of the stacking study (``reference.stacking``, schema 3, slug ``stacking``) has one
row per measured configuration: the baseline, each technique alone (*single*), cheaper
settings of one technique (*variant*), *pairs*, greedy *stacks* of three or more, the plain
DDIM runs with fewer steps that stacks are compared with (*control*) and the real digits
(*reference*). A stack row's id is its members joined by ``.`` in composition order
(``compile.forecast.solver``); its ``config`` lists the ``members`` and, from the format's
current version, their number (``size``) and its matched-latency ``control``. The facts of the
study (its elements, their glossary slugs and levels, the compatibility and interaction
matrices, the Pareto frontier, the quality budgets) are in ``settings``.

Nothing is invented here: a value that was not measured stays ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from glossary.resulttext import ResultText, term_with_method
from glossary.site.plotdata import finite, span_of
from glossary.site.results import Result, aims_verdict

Row = dict[str, Any]
Span = tuple[float, float]
Verdict = Literal["yes", "no", "inconclusive", "none"]
ORIGINS = ("baseline", "single", "variant", "pair", "stack", "control")
"""How a row came to be measured, in the order the charts' legends list them."""
NO_TERM_PAGE = frozenset({"torch-compile"})
"""Element slugs without a glossary entry (``torch.compile``): shown, never linked."""
SLUG = "stacking"


def value(row: Row, key: str) -> float | None:
    """A row's measured ``key`` (``None`` when not measured)."""
    return finite(row["values"].get(key))


def span(row: Row, key: str) -> Span | None:
    """A row's 95% interval of ``key`` (``None`` when it has none)."""
    return span_of(row.get("intervals", {}).get(key))


def members(row: Row) -> list[str]:
    """The element ids of a row in composition order (a variant: its one element)."""
    config = row["config"]
    if config.get("members"):
        return [str(m) for m in config["members"]]
    return [str(config["element"])] if config.get("element") else []


def size(row: Row) -> int:
    """How many techniques a row stacks (its ``size``, else its number of members)."""
    found = row["config"].get("size")
    return (
        int(found) if isinstance(found, int) and not isinstance(found, bool) else len(members(row))
    )


def origin(row: Row) -> str:
    """``baseline``, ``single``, ``variant``, ``pair``, ``stack``, ``control`` or ``reference``."""
    if row["role"] in ("baseline", "control", "reference"):
        return str(row["role"])
    config = row["config"]
    for candidate in (config.get("origin"), config.get("method")):
        if candidate in ("single", "variant", "pair", "stack"):
            return str(candidate)
    return {0: "single", 1: "single", 2: "pair"}.get(size(row), "stack")


def is_stack(row: Row) -> bool:
    """Whether a row is a measured pair or stack: a technique row of two or more members."""
    return row["role"] == "technique" and size(row) >= 2


def stack_rows(result: Result) -> list[Row]:
    """Every pair and stack of the result, in its order."""
    return [row for row in result["rows"] if is_stack(row)]


def anchor(row_id: str) -> str:
    """The id of a stack's table row on the stacking page: ``stack-`` and the row id, ``.``
    replaced by ``-`` (``compile.forecast.solver`` -> ``stack-compile-forecast-solver``)."""
    return "stack-" + row_id.replace(".", "-")


def elements(result: Result) -> list[str]:
    """The study's element ids, in its order."""
    return [str(e) for e in result["settings"].get("elements", [])]


def element_slug(result: Result, element: str) -> str | None:
    """The glossary slug of ``element`` (``None`` when the result does not say)."""
    ids, slugs = elements(result), result["settings"].get("element_slugs", [])
    return (
        str(slugs[ids.index(element)])
        if element in ids and ids.index(element) < len(slugs)
        else None
    )


def element_of(result: Result, slug: str) -> str | None:
    """The element id whose glossary slug is ``slug``, if the study has one."""
    return next((e for e in elements(result) if element_slug(result, e) == slug), None)


class StudyText(ResultText):
    """The study's words in one language, with the glossary term of each element.

    ``terms`` maps an element id to its entry's term in ``lang`` (``forecast`` -> "Método del
    Acelerador"); :func:`name` puts the study's own name of the method after it. Messages come
    from the study's catalog, then the site's ``guide`` and ``results`` catalogs.
    """

    def __init__(self, lang: str, terms: Mapping[str, str] | None = None) -> None:
        super().__init__(SLUG, lang)
        self.domains = (SLUG, "guide", "results")
        self.terms = dict(terms or {})


def name(text: ResultText, element: str) -> str:
    """An element's display name: its glossary entry's term, then the study's name of the
    specific method where it says more ("Método del Acelerador (predicción de pasos)"), so that
    the reader always sees the name of the entry; the study catalog's ``element.<id>`` alone
    for an element without an entry (``torch.compile``)."""
    term = text.terms.get(element) if isinstance(text, StudyText) else None
    return term_with_method(term, text.message(f"element.{element}"))


def names(text: ResultText, ids: Sequence[str]) -> str:
    """The display names of ``ids`` joined by `` + ``."""
    return " + ".join(name(text, e) for e in ids)


def budgets(result: Result) -> list[float]:
    """The quality budgets on the FDD ratio (``budgets``, else the greedy's ``budget``)."""
    settings = result["settings"]
    found = settings.get("budgets") or ([settings["budget"]] if "budget" in settings else [])
    return [b for b in (finite(x) for x in found) if b is not None]


def within(row: Row, budget: float) -> bool:
    """Whether a row's FDD ratio (point estimate) is measured and at most ``budget``."""
    quality = value(row, "fd_ratio")
    return quality is not None and quality <= budget


def fastest_within(result: Result, budget: float, *, least: int = 2) -> Row | None:
    """The fastest technique row of ``least`` or more members whose FDD ratio is within
    ``budget`` (point estimates, as the result's headline is chosen), if any."""
    inside = [
        row
        for row in result["rows"]
        if row["role"] == "technique"
        and size(row) >= least
        and value(row, "speedup") is not None
        and within(row, budget)
    ]
    return max(inside, key=lambda row: value(row, "speedup") or 0.0, default=None)


def fastest_single_within(result: Result, budget: float) -> Row | None:
    """The fastest single technique (not a variant) within ``budget``, if any."""
    singles = [row for row in result["rows"] if origin(row) == "single" and size(row) == 1]
    inside = [r for r in singles if value(r, "speedup") is not None and within(r, budget)]
    return max(inside, key=lambda row: value(row, "speedup") or 0.0, default=None)


def row_by_id(result: Result, row_id: str | None) -> Row | None:
    """The row ``row_id`` (``None`` when there is none)."""
    return next((row for row in result["rows"] if row["id"] == row_id), None)


def control_aims(result: Result, row: Row) -> list[dict[str, Any]]:
    """The ``beats-control`` aims of a stack row."""
    return [a for a in result["aims"] if a["id"] == "beats-control" and a["row"] == row["id"]]


def control_of(result: Result, row: Row) -> Row | None:
    """A stack's matched-latency control row: the one its ``beats-control`` aim compares it
    with, else the one its ``config.control`` names."""
    aims = control_aims(result, row)
    found = aims[0]["against"] if aims else row["config"].get("control")
    return row_by_id(result, found)


def beats_control(result: Result, row: Row) -> Verdict:
    """Whether a stack beat its matched-latency control, as its ``beats-control`` aims say:
    ``yes`` (all met), ``no`` (all missed), ``inconclusive`` or ``none`` (no such aim)."""
    states = [a["state"] for a in control_aims(result, row)]
    if not states:
        return "none"
    return aims_verdict(states)


def latency_ratio(row: Row) -> tuple[float | None, Span | None]:
    """A row's latency relative to the baseline's (1 / speedup), with its 95% interval."""
    speedup = value(row, "speedup")
    if speedup is None or speedup <= 0:
        return None, None
    found = span(row, "speedup")
    interval = (1 / found[1], 1 / found[0]) if found and found[0] > 0 else None
    return 1 / speedup, interval


def matrix(result: Result, key: str) -> list[list[Any]]:
    """The N x N matrix ``settings[key]`` over the elements (``None`` where it is missing)."""
    n = len(elements(result))
    found = result["settings"].get(key) or []
    return [
        [found[i][j] if i < len(found) and j < len(found[i]) else None for j in range(n)]
        for i in range(n)
    ]


def label(text: ResultText, row: Row) -> str:
    """What a row is called: its members' names for a single, pair or stack, a variant's element
    and its number of steps, else the name of its configuration (a control, the baseline)."""
    config = row["config"]
    if origin(row) in ("single", "pair", "stack") and members(row):
        return names(text, members(row))
    if origin(row) == "variant" and config.get("element") and isinstance(config.get("steps"), int):
        return text.message(
            "stacking.variant", {"name": name(text, config["element"]), "n": config["steps"]}
        )
    return text.config(config)
