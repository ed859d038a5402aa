"""Provenance: what a result was made from, and the check that says when it no longer holds.

A result records the sha256 of

* every file of its technique package (its translations under ``locale/`` excepted: words do not
  change numbers),
* every file of the shared code it ran on: ``reference/harness``, the zoo's code,
  ``reference/data.py`` and ``reference/registry.py`` (`covered_files`),
* every weight file the benchmark loaded, as the zoo's loader verified it
  (`reference.zoo.store.LOADED_WEIGHTS`, recorded while loading, never listed by hand),

plus the data set's fingerprint, the versions, the machine, the thread count, the load average at
start and end, the commit and whether any covered file had uncommitted changes.

`check_results` (``glossary bench --check``) recomputes all of it and names the result and
the file on any mismatch: a changed, added or removed covered file, a changed weight file, a
result recorded from a dirty tree, one that is missing, not the standard run, or invalid.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reference.registry import REFERENCE_DIR, TECHNIQUES, Technique

REPO_ROOT = REFERENCE_DIR.parent
RESULTS_DIR = REFERENCE_DIR / "results"
SHARED_CODE = ("harness", "zoo", "data.py", "registry.py", "__init__.py")
"""Paths under ``reference/`` that every result depends on."""
_SKIP_DIRS = {"__pycache__", "locale", "weights"}
_SKIP_SUFFIXES = {".pyc", ".png", ".svg"}
_SKIP_NAMES = {"manifest.json"}
"""The zoo manifest changes whenever any model is retrained; the weights a result loaded are
hashed one by one instead."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def rel(path: Path) -> str:
    """``path`` relative to the repository, with forward slashes."""
    return Path(path).resolve().relative_to(REPO_ROOT).as_posix()


def _walk(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for path in sorted(root.rglob("*")):
        parts = set(path.relative_to(root).parts[:-1])
        skipped = parts & _SKIP_DIRS or path.suffix in _SKIP_SUFFIXES or path.name in _SKIP_NAMES
        if path.is_file() and not skipped:
            yield path


def covered_files(technique: Technique) -> list[Path]:
    """The code a technique's result depends on: its package and the shared layers."""
    roots = [technique.directory, *(REFERENCE_DIR / p for p in SHARED_CODE)]
    files = {p.resolve() for root in roots for p in _walk(root)}
    return sorted(files)


def file_digests(paths: Iterable[Path]) -> dict[str, str]:
    return {rel(p): sha256_file(p) for p in sorted(paths)}


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def cpu_model() -> str:
    """The CPU model from ``/proc/cpuinfo`` (``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (zeros where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return [0.0, 0.0, 0.0]


def versions() -> dict[str, str]:
    """Versions of the interpreter and of every library that can change a number."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("torch", "diffusers", "numpy", "scipy", "scikit-learn", "optuna", "jax"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


@contextmanager
def recording() -> Iterator[dict[str, Any]]:
    """Collect provenance around a benchmark run.

    Clears every in-process cache of the ``reference`` package first (cached models and
    reference statistics would otherwise be loaded by an earlier run and not recorded), then
    records the weight files loaded and the load average at the start and the end.
    """
    from reference.zoo import store

    _clear_caches()
    store.LOADED_WEIGHTS.clear()
    record: dict[str, Any] = {"load_start": load_average()}
    yield record
    record["weights"] = {rel(p): d for p, d in store.LOADED_WEIGHTS.items()}
    record["load_end"] = load_average()


def _clear_caches() -> None:
    for name, module in list(sys.modules.items()):
        if not (name == "reference" or name.startswith("reference.")):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()


def provenance(
    technique: Technique, record: dict[str, Any], threads: int, command: str
) -> dict[str, Any]:
    """The ``provenance`` object of a result measured now (after `recording`)."""
    from reference.data import fingerprint

    files = covered_files(technique)
    status = _git("status", "--porcelain", "--", *(rel(p) for p in files))
    return {
        "commit": (_git("rev-parse", "HEAD") or "unknown").strip() or "unknown",
        "dirty": status is None or bool(status.strip()),
        "files": file_digests(files),
        "weights": dict(sorted(record["weights"].items())),
        "data": fingerprint(),
        "versions": versions(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "threads": threads,
        "load_average": {"start": record["load_start"], "end": record["load_end"]},
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command,
    }


def check_one(technique: Technique, results_dir: Path) -> list[str]:
    """Problems of one committed result, one line each, naming the result and the file."""
    from .results import read_result

    path = results_dir / f"{technique.slug}.json"
    shown = _display(path)
    rerun = f"rerun: glossary bench {technique.slug}"
    if not path.is_file():
        return [f"{shown}: missing; {rerun}"]
    try:
        data = read_result(path)
    except ValueError as exc:
        return [f"{exc}; {rerun}"]
    out = []
    if data["slug"] != technique.slug or data["module"] != technique.package:
        out.append(f"{shown}: is for {data['slug']} ({data['module']}), not {technique.slug}")
    if not data["standard"] or data["quick"]:
        out.append(f"{shown}: not the standard run (quick or options changed); {rerun}")
    prov = data["provenance"]
    if prov["dirty"]:
        out.append(f"{shown}: measured with uncommitted changes (dirty: true); {rerun}")
    recorded = prov["files"]
    current = {rel(p): p for p in covered_files(technique)}
    for name in sorted(set(recorded) - set(current)):
        out.append(f"{shown}: stale: {name} no longer exists; {rerun}")
    for name in sorted(set(current) - set(recorded)):
        out.append(f"{shown}: stale: {name} was added since it was measured; {rerun}")
    for name in sorted(set(recorded) & set(current)):
        if sha256_file(current[name]) != recorded[name]:
            out.append(f"{shown}: stale: {name} changed since it was measured; {rerun}")
    for name, digest in sorted(prov["weights"].items()):
        file = REPO_ROOT / name
        if not file.is_file():
            out.append(f"{shown}: stale: weight file {name} is missing; {rerun}")
        elif sha256_file(file) != digest:
            out.append(f"{shown}: stale: weight file {name} changed since it was measured; {rerun}")
    for fig in data["figures"]:
        if not (path.parent / fig["file"]).is_file():
            out.append(f"{shown}: figure {fig['file']} is missing; {rerun}")
    return out


def check_results(
    techniques: Iterable[Technique] = TECHNIQUES, results_dir: Path | None = None
) -> list[str]:
    """Problems of the committed results of ``techniques`` (all registered ones by default)."""
    directory = Path(results_dir) if results_dir is not None else RESULTS_DIR
    return [line for t in techniques for line in check_one(t, directory)]


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)
