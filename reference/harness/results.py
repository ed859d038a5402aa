"""What a benchmark returns and what the harness writes: typed records for result files.

A technique's ``benchmark(cfg, out)`` returns a `Measurement` (the language-neutral
body: settings, metrics, rows, headline, aims, notes, figures). The harness wraps it into a
`BenchmarkResult` with the envelope it alone knows (slug, module, whether the run was the
standard one, the options that differed, provenance) and writes ``<slug>.json`` atomically after
validating it against `reference.harness.schema`.

Writing a row, an aim and a note:

    Row("dc3", {"method": "deepcache", "interval": 3, "steps": 50}, "technique",
        {"latency_ms": 812.0, "fd_digits": 6.1}, spread={"latency_ms": 20.0})
    aim("speedup-vs-baseline", measured=1.62, target=1.6, comparison=">=", row="dc3")
    note("skipped-flops", f=0.63, interval=3, limit=1.72)

Every id (``deepcache`` as a configuration method, ``speedup-vs-baseline`` as an aim, a note id,
a custom metric, a figure caption) is a message in the technique's gettext catalog
(``reference/<package>/locale``) or in the shared ``results`` catalog; `write_result`
refuses a result that uses an id the English catalog does not define.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from .schema import SCHEMA_VERSION, aim_state, expected_anomalies, validate_result

Role = Literal["baseline", "technique", "control", "reference"]
Params = dict[str, Any]


@dataclass(frozen=True)
class Metric:
    """A column: its unit id (``ms``, ``x``, ``MB``, ``""`` ...) and which direction is better."""

    unit: str
    better: Literal["lower", "higher"]


STANDARD_METRICS: dict[str, Metric] = {
    "latency_ms": Metric("ms", "lower"),
    "speedup": Metric("x", "higher"),
    "fd_digits": Metric("", "lower"),
    "kid_digits": Metric("", "lower"),
    "accuracy": Metric("", "higher"),
    "diversity": Metric("", "higher"),
    "nfe": Metric("", "lower"),
    "gflops": Metric("GFLOP", "lower"),
    "params_m": Metric("M", "lower"),
    "activation_mb": Metric("MB", "lower"),
    "peak_rss_mb": Metric("MB", "lower"),
    "mse_vs_baseline": Metric("", "lower"),
    "psnr_vs_baseline": Metric("dB", "higher"),
}
"""Shared columns (their names are in the shared ``results`` catalog as ``metric.<id>``)."""


def metrics(*keys: str, **custom: Metric) -> dict[str, Metric]:
    """Pick `STANDARD_METRICS` by id, in order, and add a technique's own ``custom`` ones
    (named in its catalog as ``metric.<id>``):

        metrics("latency_ms", "fd_digits", full_steps=Metric("", "lower"))
    """
    unknown = [k for k in keys if k not in STANDARD_METRICS]
    if unknown:
        raise KeyError(f"metrics: not a standard metric: {unknown[0]!r}; pass it as a keyword")
    return {**{k: STANDARD_METRICS[k] for k in keys}, **custom}


@dataclass
class Row:
    """One measured configuration.

    ``config`` identifies it: ``method`` (a message id, rendered with the other parameters) plus
    the parameters that make it this configuration. ``intervals`` holds 95% intervals,
    ``spread`` inter-quartile ranges of timings and ``seeds`` per-seed values, keyed by metric.
    """

    id: str
    config: Params
    role: Role
    values: dict[str, float | None]
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    seeds: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class Headline:
    """The comparison page's summary of one row; ``limit_kind`` says whether the limit is an
    analytic *bound* (a measurement above it is flagged) or an *estimate*."""

    row: str
    speedup: float | None = None
    speedup_interval: tuple[float, float] | None = None
    speedup_limit: float | None = None
    limit_kind: Literal["bound", "estimate"] | None = None
    memory_ratio: float | None = None
    quality_metric: str | None = None
    quality_ratio: float | None = None
    quality_interval: tuple[float, float] | None = None


@dataclass
class Aim:
    """A claim tested by the benchmark: ``measured <comparison> target``, judged on ``interval``
    when there is one (see `reference.harness.schema.aim_state`); ``row`` is the row the claim
    is about and ``against`` the row it compares with (``None`` when not a comparison of rows)."""

    id: str
    params: Params
    row: str | None
    against: str | None
    comparison: Literal[">=", "<=", ">", "<"]
    target: float
    measured: float | None
    interval: tuple[float, float] | None
    state: Literal["met", "missed", "inconclusive"]


@dataclass
class Note:
    """A sentence of the result's notes: a message id and the numbers it quotes."""

    id: str
    params: Params = field(default_factory=dict)


@dataclass
class Figure:
    """A figure file written next to the result, with the message id of its caption."""

    file: str
    caption: str


def aim(
    id: str,
    measured: float | None,
    target: float,
    comparison: Literal[">=", "<=", ">", "<"] = ">=",
    interval: tuple[float, float] | None = None,
    *,
    row: str | None = None,
    against: str | None = None,
    **params: Any,
) -> Aim:
    """An [`Aim`][reference.harness.results.Aim] with its state computed.

    ``row`` names the row the claim is about (the technique) and ``against`` the row it is
    compared with (the baseline or a matched-cost control), so that readers and the site can
    tell which aims test a technique against its control; ``params`` are quoted by its message.
    """
    value = None if measured is None else float(measured)
    span = None if interval is None else (float(interval[0]), float(interval[1]))
    state = aim_state(comparison, float(target), value, span)
    return Aim(id, dict(params), row, against, comparison, float(target), value, span, state)


def note(id: str, **params: Any) -> Note:
    """A `Note` quoting ``params`` (numbers, booleans or identifiers)."""
    return Note(id, dict(params))


def settings_of(cfg: Any, **extra: Any) -> Params:
    """A result's ``settings``: every field of the run's ``Config`` plus ``extra`` facts of the
    run (a measured FLOP fraction, the scheduler used), so no field is forgotten or retyped."""
    from dataclasses import fields

    return {**{f.name: getattr(cfg, f.name) for f in fields(cfg)}, **extra}


def speedup_headline(
    row: str,
    lat: Any,
    key: str | None = None,
    *,
    limit: float | None,
    limit_kind: Literal["bound", "estimate"] | None,
    quality_ratio: float | None = None,
    quality_interval: tuple[float, float] | None = None,
    quality_metric: str | None = "fd_digits",
    memory_ratio: float | None = None,
) -> Headline:
    """The `Headline` of ``row`` whose speedup and 95% interval come from the latency
    comparison ``lat`` (``key`` names the timed function, default ``row``)."""
    key = key or row
    return Headline(
        row,
        speedup=lat.speedup[key],
        speedup_interval=lat.speedup_interval(key),
        speedup_limit=limit,
        limit_kind=limit_kind,
        memory_ratio=memory_ratio,
        quality_metric=quality_metric if quality_ratio is not None else None,
        quality_ratio=quality_ratio,
        quality_interval=quality_interval,
    )


@dataclass
class Measurement:
    """What a technique's ``benchmark(cfg, out)`` returns: the body of its result file."""

    settings: Params
    metrics: dict[str, Metric]
    rows: list[Row]
    headline: Headline | None
    aims: list[Aim]
    notes: list[Note]
    figures: list[Figure]


@dataclass
class BenchmarkResult:
    """A whole result file: the harness's envelope around a technique's `Measurement`."""

    slug: str
    module: str
    standard: bool
    quick: bool
    options: Params
    measurement: Measurement
    provenance: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object in the schema's key order."""
        m = self.measurement
        head = None if m.headline is None else _plain(asdict(m.headline))
        return {
            "schema_version": SCHEMA_VERSION,
            "slug": self.slug,
            "module": self.module,
            "standard": self.standard,
            "quick": self.quick,
            "options": _plain(self.options),
            "settings": _plain(m.settings),
            "metrics": {k: asdict(v) for k, v in m.metrics.items()},
            "rows": [_row(r) for r in m.rows],
            "headline": head,
            "aims": [_plain(asdict(a)) for a in m.aims],
            "anomalies": expected_anomalies(head),
            "notes": [_plain(asdict(n)) for n in m.notes],
            "figures": [asdict(f) for f in m.figures],
            "provenance": self.provenance,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _plain(value: Any) -> Any:
    """Tuples to lists and numpy/torch scalars to Python numbers, recursively."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "item"):
        value = value.item()
    return float(value) if isinstance(value, float) else value


def _row(r: Row) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": r.id,
        "config": _plain(r.config),
        "role": r.role,
        "values": _plain(r.values),
    }
    for part in ("intervals", "spread", "seeds"):
        if getattr(r, part):
            out[part] = _plain(getattr(r, part))
    return out


def write_result(result: BenchmarkResult, directory: Path) -> Path:
    """Validate ``result`` (schema and catalogs) and write ``<directory>/<slug>.json``."""
    from glossary.resulttext import missing_messages
    from glossary.safewrite import atomic_write_text

    data = result.to_dict()
    problems = validate_result(data) + missing_messages(data)
    if problems:
        raise ValueError(f"{result.slug}: invalid result: " + "; ".join(problems))
    path = Path(directory) / f"{result.slug}.json"
    atomic_write_text(path, result.to_json())
    return path


def read_result(path: Path) -> dict[str, Any]:
    """Load and validate a result file; ``ValueError`` naming the file and every problem."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: unreadable result ({exc})") from None
    problems = validate_result(data)
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return data
