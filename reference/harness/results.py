"""Benchmark result files: the typed record, its strict validator, provenance, writing, checking.

A technique's ``benchmark(quick)`` returns a :class:`BenchmarkResult`; the runner validates it
and writes ``reference/results/<slug>.json`` (``--quick`` runs go to ``artifacts/bench-quick/``
instead, never over committed results). The site reads these files. The JSON layout is the
team contract's (``schema_version`` 1); :func:`validate_result` enforces it key by key and
:meth:`BenchmarkResult.from_dict` / :meth:`BenchmarkResult.to_dict` round-trip it exactly.

Staleness: ``provenance.source_sha256`` records the sha256 of the files that produced the
numbers (at least the technique's module). :func:`check_results` recomputes them; any change
makes the result stale until the benchmark is rerun.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "reference" / "results"
QUICK_DIR = REPO_ROOT / "artifacts" / "bench-quick"
OUT_ENV = "REFERENCE_RESULTS_DIR"
"""Environment variable that redirects :func:`output_dir` (tests, ``glossary bench --out``)."""
SCHEMA_VERSION = 1

Role = Literal["baseline", "technique", "control", "reference"]
ROLES = ("baseline", "technique", "control", "reference")
BETTER = ("lower", "higher")
COMPARISONS = (">=", "<=", ">", "<", "==")
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
FIGURE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.(?:png|svg)$")


@dataclass
class MetricSpec:
    """Column metadata: display label, unit ("" if none) and which direction is better."""

    label: str
    unit: str
    better: Literal["lower", "higher"]


@dataclass
class Row:
    """One measured configuration. ``spread`` holds optional IQRs keyed like ``values``."""

    name: str
    role: Role
    values: dict[str, float | None]
    spread: dict[str, float] = field(default_factory=dict)


@dataclass
class Headline:
    """The comparison page's summary (all fields may be ``None`` when not applicable)."""

    speedup: float | None = None
    speedup_limit: float | None = None
    memory_ratio: float | None = None
    quality_ratio: float | None = None
    quality_metric: str | None = None


@dataclass
class Aim:
    """A stated aim and whether the measurement met it: ``measured <comparison> target``."""

    text: str
    measured: float | None
    target: float
    comparison: Literal[">=", "<=", ">", "<", "=="]
    met: bool


@dataclass
class Provenance:
    """Where and how the numbers were produced (see :func:`provenance`)."""

    commit: str
    dirty: bool
    source_sha256: dict[str, str]
    python: str
    torch: str
    diffusers: str
    platform: str
    cpu: str
    threads: int
    date: str
    command: str


@dataclass
class BenchmarkResult:
    """The content of ``reference/results/<slug>.json`` (team contract, schema version 1)."""

    slug: str
    module: str
    title: str
    quick: bool
    settings: dict[str, Any]
    metrics: dict[str, MetricSpec]
    rows: list[Row]
    headline: Headline | None
    aims: list[Aim]
    notes: list[str]
    figures: list[str]
    provenance: Provenance
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in the contract's order."""
        rows = []
        for r in self.rows:
            row: dict[str, Any] = {"name": r.name, "role": r.role, "values": dict(r.values)}
            if r.spread:
                row["spread"] = dict(r.spread)
            rows.append(row)
        return {
            "schema_version": self.schema_version,
            "slug": self.slug,
            "module": self.module,
            "title": self.title,
            "quick": self.quick,
            "settings": dict(self.settings),
            "metrics": {k: vars(m).copy() for k, m in self.metrics.items()},
            "rows": rows,
            "headline": None if self.headline is None else vars(self.headline).copy(),
            "aims": [vars(a).copy() for a in self.aims],
            "notes": list(self.notes),
            "figures": list(self.figures),
            "provenance": vars(self.provenance).copy(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BenchmarkResult:
        """Parse a result object; raises ``ValueError`` listing every schema problem."""
        problems = validate_result(data)
        if problems:
            raise ValueError("; ".join(problems))
        return cls(
            schema_version=data["schema_version"],
            slug=data["slug"],
            module=data["module"],
            title=data["title"],
            quick=data["quick"],
            settings=dict(data["settings"]),
            metrics={k: MetricSpec(**v) for k, v in data["metrics"].items()},
            rows=[
                Row(r["name"], r["role"], dict(r["values"]), dict(r.get("spread", {})))
                for r in data["rows"]
            ],
            headline=None if data["headline"] is None else Headline(**data["headline"]),
            aims=[Aim(**a) for a in data["aims"]],
            notes=list(data["notes"]),
            figures=list(data["figures"]),
            provenance=Provenance(**data["provenance"]),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# --------------------------------------------------------------------------- helpers for authors

STANDARD_METRICS: dict[str, MetricSpec] = {
    "latency_ms": MetricSpec("Latency", "ms", "lower"),
    "fd_digits": MetricSpec("Fréchet distance (digits classifier)", "", "lower"),
    "accuracy": MetricSpec("Class accuracy (digits classifier)", "", "higher"),
    "diversity": MetricSpec("Within-class feature diversity", "", "higher"),
    "nfe": MetricSpec("Denoiser evaluations", "", "lower"),
    "gflops": MetricSpec("Compute per sample", "GFLOP", "lower"),
    "params_m": MetricSpec("Parameters", "M", "lower"),
    "activation_mb": MetricSpec("Activation memory saved for backward", "MB", "lower"),
    "peak_rss_mb": MetricSpec("Peak resident memory", "MB", "lower"),
    "mse_vs_baseline": MetricSpec("MSE vs baseline samples", "", "lower"),
    "psnr_vs_baseline": MetricSpec("PSNR vs baseline samples", "dB", "higher"),
}
"""Shared column definitions, so that the same quantity looks the same on every page."""


def metrics(*keys: str, **custom: MetricSpec) -> dict[str, MetricSpec]:
    """Pick ``STANDARD_METRICS`` by key (in order) and add ``custom`` ones.

    ``metrics("latency_ms", "fd_digits", rank=MetricSpec("Rank", "", "lower"))``
    """
    unknown = [k for k in keys if k not in STANDARD_METRICS]
    if unknown:
        raise KeyError(f"metrics: not a standard metric: {unknown[0]!r}; pass it as a keyword")
    return {**{k: STANDARD_METRICS[k] for k in keys}, **custom}


def _compare(measured: float, target: float, comparison: str) -> bool:
    return {
        ">=": measured >= target,
        "<=": measured <= target,
        ">": measured > target,
        "<": measured < target,
        "==": measured == target,
    }[comparison]


def aim(text: str, measured: float | None, target: float, comparison: str = ">=") -> Aim:
    """An :class:`Aim` with ``met`` computed (``False`` when nothing was measured)."""
    if comparison not in COMPARISONS:
        raise ValueError(f"aim: comparison must be one of {COMPARISONS}, got {comparison!r}")
    met = measured is not None and _compare(float(measured), float(target), comparison)
    return Aim(text, measured, target, comparison, met)  # type: ignore[arg-type]


def output_dir(quick: bool) -> Path:
    """Folder for result JSON and figures: ``reference/results`` or, for quick runs,
    ``artifacts/bench-quick``; the environment variable ``REFERENCE_RESULTS_DIR`` overrides."""
    override = os.environ.get(OUT_ENV)
    if override:
        return Path(override)
    return QUICK_DIR if quick else RESULTS_DIR


# --------------------------------------------------------------------------- validation

_TOP_KEYS = (
    "schema_version",
    "slug",
    "module",
    "title",
    "quick",
    "settings",
    "metrics",
    "rows",
    "headline",
    "aims",
    "notes",
    "figures",
    "provenance",
)
_HEADLINE_KEYS = ("speedup", "speedup_limit", "memory_ratio", "quality_ratio", "quality_metric")
_AIM_KEYS = ("text", "measured", "target", "comparison", "met")
_PROV_TYPES: dict[str, type | tuple[type, ...]] = {
    "commit": str,
    "dirty": bool,
    "source_sha256": dict,
    "python": str,
    "torch": str,
    "diffusers": str,
    "platform": str,
    "cpu": str,
    "threads": int,
    "date": str,
    "command": str,
}


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _keys(obj: Any, where: str, required: Sequence[str], optional: Sequence[str] = ()) -> list[str]:
    if not isinstance(obj, Mapping):
        return [f"{where}: must be an object"]
    out = [f"{where}: missing key {k!r}" for k in required if k not in obj]
    allowed = set(required) | set(optional)
    out += [f"{where}: unknown key {k!r}" for k in obj if k not in allowed]
    return out


def _validate_rows(rows: Any, metric_keys: set[str]) -> list[str]:
    if not isinstance(rows, list) or not rows:
        return ["rows: must be a non-empty list"]
    out: list[str] = []
    for i, row in enumerate(rows):
        where = f"rows[{i}]"
        problems = _keys(row, where, ("name", "role", "values"), ("spread",))
        if problems:
            out += problems
            continue
        if not isinstance(row["name"], str) or not row["name"]:
            out.append(f"{where}.name: must be a non-empty string")
        if row["role"] not in ROLES:
            out.append(f"{where}.role: must be one of {', '.join(ROLES)}")
        for part in ("values", "spread"):
            mapping = row.get(part, {})
            if not isinstance(mapping, Mapping):
                out.append(f"{where}.{part}: must be an object")
                continue
            for key, value in mapping.items():
                if key not in metric_keys:
                    out.append(f"{where}.{part}.{key}: not declared in metrics")
                nullable = part == "values"
                if not (_is_number(value) or (nullable and value is None)):
                    out.append(f"{where}.{part}.{key}: must be a finite number")
    roles = {r.get("role") for r in rows if isinstance(r, Mapping)}
    for needed in ("baseline", "technique"):
        if needed not in roles:
            out.append(f"rows: needs at least one {needed!r} row")
    return out


def validate_result(data: Any) -> list[str]:
    """Every problem of a result object against schema version 1, one line each ([] = valid)."""
    out = _keys(data, "result", _TOP_KEYS)
    if out and not isinstance(data, Mapping):
        return out
    get = data.get
    if get("schema_version") != SCHEMA_VERSION:
        out.append(f"schema_version: must be {SCHEMA_VERSION}")
    if not isinstance(get("slug"), str) or not SLUG_RE.match(get("slug")):
        out.append("slug: must be lowercase ascii words joined by hyphens")
    if not isinstance(get("module"), str) or not get("module", "").startswith("reference."):
        out.append("module: must be an import path under 'reference.'")
    if not isinstance(get("title"), str) or not get("title"):
        out.append("title: must be a non-empty string")
    if not isinstance(get("quick"), bool):
        out.append("quick: must be true or false")
    if not isinstance(get("settings"), Mapping):
        out.append("settings: must be an object")
    metric_keys: set[str] = set()
    if isinstance(get("metrics"), Mapping) and get("metrics"):
        for key, spec in get("metrics").items():
            problems = _keys(spec, f"metrics.{key}", ("label", "unit", "better"))
            if not problems:
                if not isinstance(spec["label"], str) or not isinstance(spec["unit"], str):
                    problems.append(f"metrics.{key}: label and unit must be strings")
                if spec["better"] not in BETTER:
                    problems.append(f"metrics.{key}.better: must be 'lower' or 'higher'")
            out += problems
            metric_keys.add(key)
    else:
        out.append("metrics: must be a non-empty object")
    if "rows" in data:
        out += _validate_rows(get("rows"), metric_keys)
    headline = get("headline")
    if headline is not None:
        problems = _keys(headline, "headline", _HEADLINE_KEYS)
        if not problems:
            for key in _HEADLINE_KEYS[:4]:
                if headline[key] is not None and not _is_number(headline[key]):
                    problems.append(f"headline.{key}: must be a finite number or null")
            qm = headline["quality_metric"]
            if qm is not None and qm not in metric_keys:
                problems.append("headline.quality_metric: not declared in metrics")
        out += problems
    aims = get("aims")
    if isinstance(aims, list):
        for i, a in enumerate(aims):
            problems = _keys(a, f"aims[{i}]", _AIM_KEYS)
            if problems:
                out += problems
                continue
            if not isinstance(a["text"], str) or not a["text"]:
                out.append(f"aims[{i}].text: must be a non-empty string")
            if a["comparison"] not in COMPARISONS:
                out.append(f"aims[{i}].comparison: must be one of {' '.join(COMPARISONS)}")
            if not _is_number(a["target"]):
                out.append(f"aims[{i}].target: must be a finite number")
            if a["measured"] is not None and not _is_number(a["measured"]):
                out.append(f"aims[{i}].measured: must be a finite number or null")
            if not isinstance(a["met"], bool):
                out.append(f"aims[{i}].met: must be true or false")
            elif (
                _is_number(a["measured"])
                and _is_number(a["target"])
                and a["comparison"] in COMPARISONS
                and a["met"] != _compare(a["measured"], a["target"], a["comparison"])
            ):
                out.append(f"aims[{i}].met: contradicts measured {a['comparison']} target")
    elif "aims" in data:
        out.append("aims: must be a list")
    for key in ("notes", "figures"):
        value = get(key)
        if key in data and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            out.append(f"{key}: must be a list of strings")
    for name in get("figures") or []:
        if isinstance(name, str) and not FIGURE_RE.match(name):
            out.append(f"figures: {name!r} must be a bare .png/.svg file name")
    prov = get("provenance")
    if "provenance" in data:
        problems = _keys(prov, "provenance", tuple(_PROV_TYPES))
        if not problems:
            for key, typ in _PROV_TYPES.items():
                if not isinstance(prov[key], typ) or (typ is int and isinstance(prov[key], bool)):
                    problems.append(f"provenance.{key}: must be of type {typ.__name__}")
            if isinstance(prov["source_sha256"], Mapping) and not all(
                isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v)
                for v in prov["source_sha256"].values()
            ):
                problems.append("provenance.source_sha256: values must be sha256 hex digests")
        out += problems
    return out


# --------------------------------------------------------------------------- provenance


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _repo_relative(path: str | Path) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        raise ValueError(f"provenance: {p} is not inside the repository {REPO_ROOT}") from None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def provenance(source_files: Iterable[str | Path], command: str | None = None) -> Provenance:
    """Provenance of a measurement made now by the code in ``source_files``.

    ``source_files``: the files whose content determines the numbers - at least the technique's
    module (``[__file__]``), ideally also the zoo weights it measured
    (``reference.zoo.weight_files("teacher", "classifier")``; the classifier defines the FDD), so
    that retraining a model marks the result stale. ``dirty`` is true when git reports
    uncommitted changes in those files or under ``reference/harness`` and ``reference/zoo`` (or
    git is unavailable).
    """
    import diffusers
    import torch

    files = sorted({_repo_relative(f) for f in source_files})
    if not files:
        raise ValueError("provenance: list at least the technique's own source file")
    commit = (_git("rev-parse", "HEAD") or "unknown").strip()
    status = _git("status", "--porcelain", "--", *files, "reference/harness", "reference/zoo")
    return Provenance(
        commit=commit,
        dirty=status is None or bool(status.strip()),
        source_sha256={f: sha256_file(REPO_ROOT / f) for f in files},
        python=platform.python_version(),
        torch=torch.__version__,
        diffusers=diffusers.__version__,
        platform=platform.platform(),
        cpu=cpu_model(),
        threads=torch.get_num_threads(),
        date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        command=command or " ".join([Path(sys.executable).name, *sys.argv]),
    )


# --------------------------------------------------------------------------- files


def write_result(result: BenchmarkResult, directory: Path | None = None) -> Path:
    """Validate ``result`` and write ``<directory>/<slug>.json`` atomically; return the path.

    ``directory`` defaults to :func:`output_dir` of ``result.quick``.
    """
    data = result.to_dict()
    problems = validate_result(data)
    if problems:
        raise ValueError(f"{result.slug}: invalid result: " + "; ".join(problems))
    directory = Path(directory) if directory is not None else output_dir(result.quick)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{result.slug}.json"
    tmp = directory / f".{result.slug}.json.tmp"
    tmp.write_text(result.to_json(), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_result(path: Path) -> BenchmarkResult:
    """Load and validate a result file (``ValueError`` with every problem otherwise)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable result ({exc})") from None
    try:
        return BenchmarkResult.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def module_source(module: str) -> Path | None:
    """The source file of ``module`` if it exists (without importing it), else ``None``."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin)


def check_results(
    registry: Mapping[str, str] | None = None, results_dir: Path | None = None
) -> list[str]:
    """Problems with committed results of *implemented* techniques, one line each.

    ``registry`` maps slug -> module (default: the runner's 15 techniques). A technique whose
    module does not exist yet is skipped. For the others the result must exist, validate, not
    be a ``--quick`` result, name the same slug and module, list the module's own file in
    ``source_sha256``, match every recorded sha256 and have its figures next to it.
    """
    if registry is None:
        from .runner import TECHNIQUES

        registry = TECHNIQUES
    results_dir = Path(results_dir) if results_dir is not None else RESULTS_DIR
    problems: list[str] = []
    for slug, module in registry.items():
        source = module_source(module)
        if source is None:
            continue
        rerun = f"run: glossary bench {slug}"
        path = results_dir / f"{slug}.json"
        shown = _display(path)
        if not path.is_file():
            problems.append(f"{slug}: {shown} is missing; {rerun}")
            continue
        try:
            result = read_result(path)
        except ValueError as exc:
            problems.append(f"{slug}: {exc}")
            continue
        if result.quick:
            problems.append(f"{slug}: {shown} holds a --quick result; {rerun}")
        if result.slug != slug or result.module != module:
            problems.append(f"{slug}: {shown} is for {result.slug} ({result.module})")
        recorded = result.provenance.source_sha256
        try:
            own = _repo_relative(source)
        except ValueError:
            own = None
        if own is not None and own not in recorded:
            problems.append(f"{slug}: {shown} does not record the sha256 of {own}; {rerun}")
        for rel, digest in sorted(recorded.items()):
            file = REPO_ROOT / rel
            if not file.is_file():
                problems.append(f"{slug}: stale result: {rel} no longer exists; {rerun}")
            elif sha256_file(file) != digest:
                problems.append(f"{slug}: stale result: {rel} changed since measured; {rerun}")
        for fig in result.figures:
            if not (path.parent / fig).is_file():
                problems.append(f"{slug}: figure {fig} listed in {shown} is missing; {rerun}")
    return problems


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)
