"""Result integrity: a result's derived figures are recomputed from its raw values, and a digest
of its body notices any hand edit.

Idea
====
A result file says, for example, "DeepCache is 1.75x faster, FDD ratio 1.07 [1.02, 1.12]". Most
of its numbers are *derived*: a mean over noise seeds, a t interval, a paired ratio, a median of
timing rounds, the headline that repeats a row, an aim that compares two rows, the stacking
study's matrices. The raw values they come from are kept beside them (``seeds`` per row, and in
schema 4 the timing ``rounds``), so `check_result` recomputes every derived figure it can with
the same formulas the benchmarks use, and names each one that differs, one line each, the
first first:

    reference/results/feature-caching.json: headline.speedup: recorded 9.99, recomputed 1.7468...

Use: `read_checked` (path -> data and problems; what ``glossary bench --check`` and the
studies' checks call through `reference.harness.provenance.check_one`), `check_result` (a
parsed result; the site calls its parts), `seal` and `canonical` (the writer of a schema-4
result seals it last).

Schema 4 (``result.v4.schema.json``, for results written by the new harness) adds

* ``rows[i].rounds = {"against": <row id>, "latency_ms": [...]}``: the raw interleaved timing
  rounds of the row and (in the row named by ``against``) of its pair, from which the row's
  ``latency_ms`` (median), its spread (inter-quartile range), its ``speedup`` and the speedup's
  bootstrap interval are recomputed (7)-(10);
* ``digest = "sha256:" + hex``: the sha256 of `canonical` JSON of the whole result without the
  ``digest`` key (`seal`), so a hand edit of a raw value, or a body copied under another slug,
  fails (11).

A digest detects unnoticed edits; it does not stop a deliberate forger, who can recompute it.
The recomputation of the derived figures is the second line: a forger must then also make
every mean, interval, ratio, aim and matrix agree with the raw values, and the raw values with
the catalogs of the technique they claim to be (`glossary.resulttext.missing_messages`).

Math
====
Per-seed values ``x_1 .. x_S`` of a row (`reference.harness.stats`, equations (1)-(5) there):

    value     x̄ = (1/S) Σ_s x_s                                                   (1)
    sd        sqrt( Σ_s (x_s - x̄)^2 / (S - 1) )                                   (2)
    interval  x̄ ± t_{0.975, S-1} · sd / sqrt(S)                                    (3)
    paired ratio of rows a, b:  exp(mean_s log(a_s / b_s)), interval exp((3) of the logs)   (4)
    paired difference of rows a, b:  (1) and (3) of a_s - b_s                      (5)

The Student quantile is computed here without scipy (the site and the ``glossary`` command
do not install it): for integer ν the two-sided probability has a closed form in
``θ = atan(t / sqrt(ν))`` (Abramowitz and Stegun 26.7.3, 26.7.4)

    A(t|ν) = sin θ · Σ_{k=0}^{(ν-2)/2} c_k cos^{2k} θ,  c_0 = 1, c_k = c_{k-1}(2k-1)/(2k)  (ν even)
    A(t|ν) = (2/π)(θ + sin θ cos θ Σ_{k=0}^{(ν-3)/2} d_k cos^{2k} θ), d_k = d_{k-1}(2k)/(2k+1)
                                                                   (ν odd; A = 2θ/π at ν = 1) (6)

and ``t_{0.975,ν}`` is the root of ``A = 0.95``, found by bisection on θ to the last bit.

Timing rounds of a row ``r`` and of its pair ``p`` (schema 4; `reference.harness.cost`):

    latency_ms(r) = median_k r_k                                                   (7)
    spread(r)     = q3 - q1 of r_k (quartiles, inclusive method)                   (8)
    speedup(r)    = median_k p_k / median_k r_k                                    (9)
    interval      = percentile bootstrap of (9) over rounds resampled in pairs
                    (`reference.harness.stats.bootstrap_interval`, 2000 draws, seed 0)  (10)

The digest (11): ``"sha256:" + sha256(canonical(result without "digest")).hexdigest()``, where
`canonical` is ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
allow_nan=False)``.

Tolerance
=========
Two figures agree when ``|recorded - recomputed| <= 1e-9 · max(|recorded|, |recomputed|,
scale)``, ``scale`` being the magnitude of the inputs (a mean of values near 100 that cancels to
near 0 is compared at the inputs' scale). The recomputation is the same float64 arithmetic, in
the same or a different order (a sum in another order, another BLAS, the t quantile from (6)
instead of scipy's): that moves a figure by a few units in the last place, about 1e-15
relative, while a hand edit moves the shown digits, 1e-3 and up. Bootstrap intervals are
checked only where the bootstrap is seeded and pure Python (10).

What is checked
===============
* every row: ``values[m]`` is (1) of ``seeds[m]`` and ``intervals[m]`` is (3) of them wherever
  per-seed values exist, kept inside ``metrics[m].range`` when the result records one (a bounded
  metric: an accuracy, a distance); with ``rounds`` (schema 4), (7)-(10);
* the headline: its speedup and interval are the row's (or, where the row has no speedup, a
  figure derived from it: the reciprocal of a step-time ratio, a latency ratio to a baseline
  row); its quality ratio and interval are (4) of the row (or of an aim's two rows) over a
  baseline row; its memory ratio is a ratio of one metric of the row to a baseline row's;
* every aim with a row: its ``measured`` and ``interval`` are one of the figures derivable from
  its row and the row it is compared ``against``: a value of the row with its interval, the
  reciprocal of one, (4), (5), or the ratio of a metric of the two rows; its ``state`` is
  `reference.harness.schema.aim_state` of the recomputed numbers;
* the catalogs: every message the result uses exists in its technique's catalog with the
  parameters it needs (a body copied under another slug fails here in schema 3);
* the stacking study (``stacking.json``): the set of configurations is what the study
  enumerates for its recorded settings, and its compatibility, reason and
  interaction matrices, its single speedups, element slugs and levels, the Pareto frontier, the
  headline row and limit, each row's FDD ratio, interaction factor, control and control latency
  ratio agree with its rows (`reference.stacking.integrity`);
* the real-shape study (``realshape.json``): each technique row's speedup, FLOP estimate and
  efficiency follow from its medians and GFLOPs, and each baseline row's latency is the median
  of its model's baseline medians (`reference.realshape.integrity`);
* a study's own figures are checked by its package's ``integrity`` module, found by name
  (`study_check`): the harness imports no study;
* schema 4: the digest (11).

What is not covered, and why
============================
* Speedup intervals of schema-3 results, latency medians and spreads: their raw rounds were not
  kept (only schema 4 keeps them), and a bootstrap needs every round.
* Intervals of a latency ratio between two rows (an aim "faster than the control"): the same.
* Intervals of the stacking study's interaction factors and control latency ratios: their
  bootstrap draws rounds from two comparisons, whose rounds were not kept.
* Figures measured once, without per-seed values or rounds (a parameter count, a FLOP count, a
  measured peak memory, the real-digit reference row, a headline's analytic ``speedup_limit``),
  and notes: only their form is checked (finite, in range, by the schema).
* An aim without a row: nothing names what it was computed from. Likewise a headline or aim
  figure whose rows hold nothing it could be derived from (a hand-made result without per-seed
  values): it is not covered, rather than reported.
* The greedy path of the stacking study (which stack won each stage) depends on bootstrap
  intervals of rounds that were not kept; the configurations it implies are checked.

Sources
=======
* M. Abramowitz and I. A. Stegun, "Handbook of Mathematical Functions", 1964, 26.7.3-26.7.4
  (the Student t distribution for integer degrees of freedom).
* FIPS 180-4, "Secure Hash Standard" (SHA-256); RFC 8785, "JSON Canonicalization Scheme"
  (the idea of hashing a canonical serialisation; ours is Python's sorted-key ``json.dumps``).

Pitfalls
========
* The digest is over the parsed numbers, not the file's bytes: re-indenting a file keeps its
  digest, changing ``1.0`` to ``1`` does not.
* Every check here is a pure function of the file and the code; nothing reads a clock or a
  random state, so ``--check`` gives the same answer on every machine.
* This module imports neither torch nor scipy: the site and the ``glossary`` command use it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_V4 = 4
SCHEMA_V4_PATH = Path(__file__).with_name("result.v4.schema.json")
DIGEST_PREFIX = "sha256:"
REL_TOL = 1e-9
"""Relative tolerance of a recomputed figure (see the module docstring, Tolerance)."""
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
"""The round bootstrap of `reference.harness.cost.LatencyComparison.speedup_interval`."""
MAX_DEPTH = 32
"""How deeply a result may nest lists and objects (real results nest 5 levels)."""
MAX_MAGNITUDE = 1e15
"""The largest absolute value a result may hold: far above any measured figure (timings in ms,
ratios, distances, counts), far below where formatting overflows or loses its digits."""
MAX_REPORTED = 3
"""How many value problems of one file are named (the first ones, in document order)."""

Result = dict[str, Any]
Interval = tuple[float, float]


# --- reading: finite numbers, bounded depth --------------------------------------------------


class NonFinite(str):
    """A ``NaN``/``Infinity`` literal, kept as a marker so that `value_problems` names its
    field instead of the parser failing (or silently accepting it)."""


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(text: str) -> int:
    """How deeply the JSON ``text`` nests lists and objects, counted without parsing it
    (brackets inside strings do not count), so that any depth is safe to measure."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse(text: str) -> Any:
    """The JSON of ``text``: depth checked before the recursive parser sees it, ``NaN`` and
    ``Infinity`` kept as `NonFinite` markers; ``ValueError`` in one line otherwise."""
    if nesting_depth(text) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=NonFinite)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None


def _field(parent: str, key: str | int) -> str:
    return f"{parent}[{key}]" if isinstance(key, int) else (f"{parent}.{key}" if parent else key)


def _value_problem(value: Any) -> str | None:
    """Why a JSON scalar cannot be published, or ``None``."""
    if isinstance(value, NonFinite):
        return f"{value} is not a finite number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    if abs(value) > MAX_MAGNITUDE:
        return f"{float(value):.3g} is out of range (at most {MAX_MAGNITUDE:.0e} in size)"
    return None


def value_problems(data: Any) -> list[str]:
    """``field: problem`` for the first numbers that are not finite or out of range and for
    nesting deeper than `MAX_DEPTH`; walks iteratively, so any depth is safe."""
    problems: list[str] = []
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack and len(problems) < MAX_REPORTED:
        name, value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                problems.append(f"{name or 'result'}: nested deeper than {MAX_DEPTH} levels")
                continue
            items = value.items() if isinstance(value, dict) else enumerate(value)
            children = [(_field(name, k), v, depth + 1) for k, v in items]
            stack.extend(reversed(children))
        elif (problem := _value_problem(value)) is not None:
            problems.append(f"{name or 'result'}: {problem}")
    return problems


# --- schema by version -----------------------------------------------------------------------


@cache
def schema_v4() -> dict[str, Any]:
    """The JSON Schema of a version-4 result (parsed once)."""
    return json.loads(SCHEMA_V4_PATH.read_text(encoding="utf-8"))


def _rounds_problems(data: Mapping[str, Any]) -> list[str]:
    rows = {r["id"]: r for r in data["rows"]}
    out = []
    for i, row in enumerate(data["rows"]):
        rounds = row.get("rounds")
        if rounds is None:
            continue
        pair = rows.get(rounds["against"])
        if pair is None or "rounds" not in pair:
            out.append(f"rows[{i}].rounds.against: no row {rounds['against']!r} with rounds")
        elif len(pair["rounds"]["latency_ms"]) != len(rounds["latency_ms"]):
            out.append(f"rows[{i}].rounds.latency_ms: not as many rounds as its pair's")
    return out


def schema_problems(data: Any) -> list[str]:
    """Every schema problem of a result, one line each: version 4 against
    ``result.v4.schema.json`` (and the cross-references of version 3), any other version through
    `reference.harness.schema.validate_result`."""
    from .schema import SCHEMA_VERSION, _cross_checks, _path, validate_result

    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and version not in (SCHEMA_VERSION, SCHEMA_V4):
        known = f"{SCHEMA_VERSION} or {SCHEMA_V4}"
        return [f"schema_version: {version!r} is not {known}; rerun the benchmark"]
    if version != SCHEMA_V4:
        return validate_result(data)
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema_v4())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    out = [f"{_path(e.absolute_path)}: {e.message}" for e in errors]
    return out or _cross_checks(data) + _rounds_problems(data)


# --- digest ----------------------------------------------------------------------------------


def canonical(data: Mapping[str, Any]) -> str:
    """The canonical JSON of a result without its ``digest`` key (what (11) hashes)."""
    body = {k: v for k, v in data.items() if k != "digest"}
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def digest(data: Mapping[str, Any]) -> str:
    """``"sha256:" + hex`` of `canonical` ``data`` (11)."""
    return DIGEST_PREFIX + hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


def seal(data: Mapping[str, Any]) -> Result:
    """A copy of ``data`` with its ``digest`` (any old one replaced)."""
    return {**{k: v for k, v in data.items() if k != "digest"}, "digest": digest(data)}


# --- statistics without scipy ----------------------------------------------------------------


def _two_sided(theta: float, nu: int) -> float:
    """A(t|ν) of (6) at ``θ = atan(t / sqrt(ν))``: P(|T| <= t)."""
    c2, s, c = math.cos(theta) ** 2, math.sin(theta), math.cos(theta)
    term = total = 1.0
    if nu % 2 == 0:
        for k in range(1, (nu - 2) // 2 + 1):
            term *= (2 * k - 1) / (2 * k) * c2
            total += term
        return s * total  # (6), ν even
    for k in range(1, (nu - 3) // 2 + 1):
        term *= (2 * k) / (2 * k + 1) * c2
        total += term
    series = s * c * total if nu > 1 else 0.0
    return 2.0 / math.pi * (theta + series)  # (6), ν odd


@cache
def t_quantile(dof: int, confidence: float = CONFIDENCE) -> float:
    """``t_{(1+confidence)/2, dof}``: the root of (6) ``A = confidence``, by bisection on θ."""
    if dof < 1:
        raise ValueError(f"t_quantile: need at least 1 degree of freedom, got {dof}")
    lo, hi = 0.0, math.pi / 2
    while True:
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _two_sided(mid, dof) < confidence else (lo, mid)
    return math.sqrt(dof) * math.tan((lo + hi) / 2)


def t_interval(values: Sequence[float]) -> tuple[float, Interval | None]:
    """The mean (1) and the t interval (2), (3) of per-seed ``values`` (no interval for one)."""
    xs = [float(v) for v in values]
    s = len(xs)
    mean = sum(xs) / s  # (1)
    if s < 2:
        return mean, None
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (s - 1))  # (2)
    half = t_quantile(s - 1) * sd / math.sqrt(s)  # (3)
    return mean, (mean - half, mean + half)


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> tuple[float, Interval | None]:
    """(4): the geometric mean of ``a_s / b_s`` and its interval."""
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    mean, interval = t_interval(logs)
    if interval is None:
        return math.exp(mean), None
    return math.exp(mean), (math.exp(interval[0]), math.exp(interval[1]))  # (4)


def _ratio_of_medians(rounds: Sequence[Any]) -> float:
    return statistics.median(p for p, _ in rounds) / statistics.median(r for _, r in rounds)


def round_figures(own: Sequence[float], pair: Sequence[float]) -> dict[str, Any]:
    """(7)-(10) of a row's timing rounds ``own`` and its pair's ``pair`` (same rounds)."""
    from .stats import bootstrap_interval

    q1, _, q3 = statistics.quantiles(own, n=4, method="inclusive")
    return {
        "latency_ms": statistics.median(own),  # (7)
        "spread": q3 - q1,  # (8)
        "speedup": statistics.median(pair) / statistics.median(own),  # (9)
        "interval": bootstrap_interval(  # (10)
            list(zip(pair, own, strict=True)),
            _ratio_of_medians,
            confidence=CONFIDENCE,
            resamples=BOOTSTRAP_RESAMPLES,
            seed=BOOTSTRAP_SEED,
        ),
    }


# --- comparing a recorded figure with its recomputation --------------------------------------


def _close(a: float, b: float, scale: float = 0.0) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), scale)


def _same(recorded: Any, recomputed: Any, scale: float = 0.0) -> bool:
    if isinstance(recomputed, float | int) and not isinstance(recomputed, bool):
        ok = isinstance(recorded, float | int) and not isinstance(recorded, bool)
        return ok and _close(float(recorded), float(recomputed), scale)
    if isinstance(recomputed, tuple | list) and isinstance(recorded, tuple | list):
        return len(recorded) == len(recomputed) and all(
            _same(x, y, scale) for x, y in zip(recorded, recomputed, strict=True)
        )
    return recorded == recomputed


def _show(x: Any) -> str:
    if isinstance(x, tuple | list):
        return "[" + ", ".join(_show(v) for v in x) + "]"
    if x is None:
        return "none"
    return repr(x) if isinstance(x, str) else str(x)


@dataclass
class Audit:
    """What a recomputation found: the problems (one line each, without the file name) and
    how many figures it recomputed."""

    problems: list[str] = field(default_factory=list)
    figures: int = 0

    def agree(self, where: str, recorded: Any, recomputed: Any, scale: float = 0.0) -> bool:
        self.figures += 1
        if _same(recorded, recomputed, scale):
            return True
        self.problems.append(f"{where}: recorded {_show(recorded)}, recomputed {_show(recomputed)}")
        return False


@dataclass(frozen=True)
class Derived:
    """A figure derivable from rows: how, its value, its interval (``None``: not derivable)."""

    how: str
    value: float
    interval: Interval | None


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _from_row(r: Mapping[str, Any]) -> list[Derived]:
    out = []
    for m, v in r["values"].items():
        if not _number(v):
            continue
        span = r.get("intervals", {}).get(m)
        out.append(Derived(f"{r['id']}.values.{m}", v, None if span is None else tuple(span)))
        if v != 0:
            inv = None if span is None or min(span) <= 0 else (1 / span[1], 1 / span[0])
            out.append(Derived(f"1/{r['id']}.values.{m}", 1 / v, inv))
    return out


def _paired(r: Mapping[str, Any], a: Mapping[str, Any], metric: str | None) -> list[Derived]:
    out = []
    mine, theirs = r.get("seeds", {}), a.get("seeds", {})
    for m in mine:
        xs, ys = mine[m], theirs.get(m)
        if (metric is not None and m != metric) or ys is None or len(xs) != len(ys):
            continue
        if min(xs + ys) > 0:
            value, span = paired_ratio(xs, ys)
            out.append(Derived(f"paired ratio of {m}, {r['id']} over {a['id']}", value, span))
        if metric is None:
            value, span = t_interval([x - y for x, y in zip(xs, ys, strict=True)])  # (5)
            out.append(Derived(f"paired difference of {m}, {r['id']} - {a['id']}", value, span))
    return out


def _ratios(r: Mapping[str, Any], a: Mapping[str, Any]) -> list[Derived]:
    out = []
    for m, v in r["values"].items():
        w = a["values"].get(m)
        if _number(v) and _number(w) and v != 0 and w != 0:
            out.append(Derived(f"{r['id']}.{m} / {a['id']}.{m}", v / w, None))
            out.append(Derived(f"{a['id']}.{m} / {r['id']}.{m}", w / v, None))
    return out


def _distance(a: float, b: float) -> float:
    """How far apart two figures are, relative to their size (to name the nearest one)."""
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def _match(
    audit: Audit,
    where: str,
    recorded: Any,
    span: Any,
    candidates: list[Derived],
    span_where: str,
) -> Derived | None:
    """Check ``recorded`` (and its interval ``span``, when recorded) against the figures that
    can give it; returns the one that does."""
    if recorded is None or not candidates:
        return None
    audit.figures += 1
    hits = [c for c in candidates if _same(recorded, c.value)]
    if not hits:
        best = min(candidates, key=lambda c: _distance(c.value, recorded))
        audit.problems.append(
            f"{where}: recorded {_show(recorded)}, recomputed {_show(best.value)} ({best.how})"
        )
        return None
    spans = [c for c in hits if c.interval is not None]
    if span is None or not spans:
        return hits[0]
    audit.figures += 1
    for c in spans:
        if _same(span, c.interval):
            return c
    audit.problems.append(
        f"{span_where}: recorded {_show(span)}, recomputed {_show(spans[0].interval)}"
    )
    return None


# --- rows, headline, aims --------------------------------------------------------------------


def _clipped(span: Interval | None, bounds: Sequence[float | None] | None) -> Interval | None:
    """A t interval kept inside a bounded metric's recorded range (the harness's (7))."""
    if span is None or bounds is None:
        return span
    lo, hi = span
    if bounds[0] is not None:
        lo, hi = max(lo, bounds[0]), max(hi, bounds[0])
    if bounds[1] is not None:
        lo, hi = min(lo, bounds[1]), min(hi, bounds[1])
    return lo, hi


def _check_rows(data: Mapping[str, Any], audit: Audit) -> None:
    rows = {r["id"]: r for r in data["rows"]}
    metrics = data.get("metrics", {})
    for i, row in enumerate(data["rows"]):
        for m, xs in row.get("seeds", {}).items():
            mean, span = t_interval(xs)
            span = _clipped(span, metrics.get(m, {}).get("range"))
            scale = max(abs(x) for x in xs)
            if m in row["values"]:
                audit.agree(f"rows[{i}].values.{m}", row["values"][m], mean, scale)
            if m in row.get("intervals", {}) and span is not None:
                audit.agree(f"rows[{i}].intervals.{m}", row["intervals"][m], span, scale)
        rounds = row.get("rounds")
        if rounds is not None and rounds["against"] in rows:
            pair = rows[rounds["against"]].get("rounds")
            if pair is not None and len(pair["latency_ms"]) == len(rounds["latency_ms"]):
                _check_rounds(i, row, rounds["latency_ms"], pair["latency_ms"], audit)


def _check_rounds(
    i: int, row: Mapping[str, Any], own: Sequence[float], pair: Sequence[float], audit: Audit
) -> None:
    got = round_figures(own, pair)
    values, spread, spans = row["values"], row.get("spread", {}), row.get("intervals", {})
    if "latency_ms" in values:
        audit.agree(f"rows[{i}].values.latency_ms", values["latency_ms"], got["latency_ms"])
    if "latency_ms" in spread:
        audit.agree(f"rows[{i}].spread.latency_ms", spread["latency_ms"], got["spread"])
    if "speedup" in values:
        audit.agree(f"rows[{i}].values.speedup", values["speedup"], got["speedup"])
    if "speedup" in spans:
        audit.agree(f"rows[{i}].intervals.speedup", spans["speedup"], got["interval"])


def _baselines(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in data["rows"] if r["role"] == "baseline"]


def _check_headline(data: Mapping[str, Any], audit: Audit) -> None:
    head = data["headline"]
    rows = {r["id"]: r for r in data["rows"]}
    if head is None or head["row"] not in rows:
        return
    r = rows[head["row"]]
    if _number(r["values"].get("speedup")):
        span = r.get("intervals", {}).get("speedup")
        speed = [Derived(f"{r['id']}.values.speedup", r["values"]["speedup"], span and tuple(span))]
    else:
        speed = _from_row(r) + [d for b in _baselines(data) for d in _ratios(r, b)]
    speed_span = head["speedup_interval"]
    _match(
        audit, "headline.speedup", head["speedup"], speed_span, speed, "headline.speedup_interval"
    )
    metric = head["quality_metric"]
    if metric is not None:
        pairs = [(r, b) for b in _baselines(data)]
        pairs += [
            (rows[a["row"]], rows[a["against"]])
            for a in data["aims"]
            if a["row"] in rows and a["against"] in rows
        ]
        quality = [d for x, y in pairs for d in _paired(x, y, metric)]
        _match(
            audit,
            "headline.quality_ratio",
            head["quality_ratio"],
            head["quality_interval"],
            quality,
            "headline.quality_interval",
        )
    memory = [d for b in _baselines(data) for d in _ratios(r, b)]
    _match(audit, "headline.memory_ratio", head["memory_ratio"], None, memory, "")


def _check_aims(data: Mapping[str, Any], audit: Audit) -> None:
    from .schema import aim_state

    rows = {r["id"]: r for r in data["rows"]}
    for i, a in enumerate(data["aims"]):
        r = rows.get(a["row"]) if a["row"] is not None else None
        if r is None:
            continue
        candidates = _from_row(r)
        against = rows.get(a["against"]) if a["against"] is not None else None
        if against is not None:
            candidates += _paired(r, against, None) + _ratios(r, against)
        where = f"aims[{i}]"
        hit = _match(
            audit,
            f"{where}.measured",
            a["measured"],
            a["interval"],
            candidates,
            f"{where}.interval",
        )
        if hit is None:
            continue
        span = a["interval"] if hit.interval is None else hit.interval
        state = aim_state(a["comparison"], a["target"], hit.value, span)
        audit.agree(f"{where}.state", a["state"], state)


def _check_catalogs(data: Mapping[str, Any], audit: Audit) -> None:
    from glossary.resulttext import missing_messages

    audit.figures += 1
    missing = missing_messages(data)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        audit.problems.append(f"catalog: {missing[0]}{more}")


# --- the studies' own figures ----------------------------------------------------------------

StudyCheck = Callable[[Mapping[str, Any], Audit], None]
STUDY_MODULE = "integrity"
"""A study whose result holds figures of its own (the stacking matrices, the real-shape
efficiencies) provides ``reference.<study package>.integrity.check(data, audit)``; the harness
finds it by the registry's naming rule, as the command line finds a package's ``bench`` module,
so that it imports no study (a study is a layer above it)."""


def study_check(slug: str) -> StudyCheck | None:
    """The ``check`` of ``slug``'s study module, or ``None`` when its package has none (every
    technique: their figures are the rows, headline and aims checked here).

    The module is looked for as a file first: importing a technique package to ask would import
    torch, which the check must not (the site and ``glossary bench --check`` read results
    without it).
    """
    import importlib

    from reference.registry import Technique

    package = Technique(slug).package
    folder = Path(__file__).resolve().parents[1] / package.removeprefix("reference.")
    if not (folder / f"{STUDY_MODULE}.py").is_file():
        return None
    return importlib.import_module(f"{package}.{STUDY_MODULE}").check


def audit(data: Mapping[str, Any]) -> Audit:
    """Recompute every derivable figure of a *valid* result (see the module docstring)."""
    out = Audit()
    if data.get("schema_version") == SCHEMA_V4:
        out.agree("digest", data.get("digest"), digest(data))
    checks = [("rows", _check_rows), ("headline", _check_headline), ("aims", _check_aims)]
    study = study_check(data["slug"])
    if study is not None:
        checks.append(("settings", study))
    for part, check in [*checks, ("catalog", _check_catalogs)]:
        try:
            check(data, out)
        except (ArithmeticError, ImportError, KeyError, TypeError, ValueError, IndexError) as exc:
            # a schema-valid file can still hold what no benchmark writes (a zero, a missing
            # setting), and a deleted code file (named by the staleness check) can leave a
            # figure underivable: name it in one line instead of a traceback
            reason = (str(exc).splitlines() or [""])[0]
            out.problems.append(f"{part}: cannot be recomputed ({type(exc).__name__}: {reason})")
    return out


def check_result(data: Any, shown: str) -> list[str]:
    """Every problem of a parsed result, one line each, naming ``shown`` (the file): numbers
    that are not finite or out of range, nesting, the schema of its version, then every
    recomputed figure that differs (`audit`)."""
    early = value_problems(data) or schema_problems(data)
    problems = early or audit(data).problems
    return [f"{shown}: {p}" for p in problems]


def read_checked(path: Path | str, shown: str | None = None) -> tuple[Result | None, list[str]]:
    """Read and check a result file: ``(data, problems)``; ``data`` is ``None`` when the file
    cannot be used at all (unreadable, not finite, too deep, invalid for its schema)."""
    shown = shown or str(path)
    try:
        data = parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or (str(exc).splitlines() or [""])[0]
        return None, [f"{shown}: cannot read result: {reason}"]
    early = value_problems(data) or schema_problems(data)
    if early:
        return None, [f"{shown}: {p}" for p in early]
    return data, [f"{shown}: {p}" for p in audit(data).problems]
