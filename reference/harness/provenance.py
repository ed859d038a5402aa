"""Provenance: what a result was made from, and the check that says when it no longer holds.

A result records the sha256 of

* every file of its technique package (its translations under ``locale/`` excepted: words do not
  change numbers),
* every other file under ``reference/`` that the run used: each module it had imported when it
  ended and each file it opened while measuring (`recording`; results written before this rule
  recorded all of ``reference/harness``, the zoo's code, ``reference/data.py`` and
  ``reference/registry.py`` instead, `covered_files`),
* every weight file the benchmark loaded, as the zoo's loader verified it
  (`reference.zoo.store.LOADED_WEIGHTS`, recorded while loading, never listed by hand),

plus the data set's fingerprint, the versions, the machine, the thread count, the load average at
start and end, the commit and whether any recorded file had uncommitted changes.

`check_results` (``glossary bench --check``) recomputes the digest of every recorded file and
names the result and the file when one changed or is gone, when a weight file changed, or when a
result is missing, not the standard run, recorded from a dirty tree or invalid, or when a figure
it records differs from its recomputation from the result's raw values
(`reference.harness.integrity`).

Pitfalls:

* A file *added* since a result was measured does not stale it: code that ran could only have
  imported it through a recorded file, and that file would have changed. (The registry's modules
  are named in ``reference/registry.py``, which every result records.)
* `BOOKKEEPING` lists the files that record and check provenance and compute no figure: a change
  to them cannot move a number, so they are not compared. Anything that measures, samples or
  scores is never listed there.
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
BOOKKEEPING = frozenset({"reference/harness/provenance.py", "reference/stacking/provenance.py"})
"""Files that record or check provenance and compute no figure (not compared by the check)."""
_OPENED: set[Path] | None = None
"""Files under ``reference/`` opened while `recording` (``None`` outside it)."""


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
    """The code a technique's result may depend on: its package and every shared layer."""
    roots = [technique.directory, *(REFERENCE_DIR / p for p in SHARED_CODE)]
    files = {p.resolve() for root in roots for p in _walk(root)}
    return sorted(files)


def _is_source(path: Path) -> bool:
    """A file under ``reference/`` that can change a figure (not a result, weight or word)."""
    try:
        parts = path.relative_to(REFERENCE_DIR).parts
    except ValueError:
        return False
    skipped = set(parts[:-1]) & (_SKIP_DIRS | {"results"}) or path.suffix in _SKIP_SUFFIXES
    return bool(parts) and not skipped and path.name not in _SKIP_NAMES and path.is_file()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], (str, os.PathLike)):
        path = Path(os.path.abspath(args[0]))
        if _is_source(path):
            _OPENED.add(path)


def used_files() -> set[Path]:
    """The files under ``reference/`` of every imported module, and those opened so far."""
    out = set(_OPENED or ())
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and _is_source(Path(file).resolve()):
            out.add(Path(file).resolve())
    return out


def recorded_files(technique: Technique, used: Iterable[Path]) -> list[Path]:
    """What a result records: its whole package, and every other source file the run used."""
    own = {p.resolve() for p in _walk(technique.directory)}
    return sorted(own | {p.resolve() for p in used})


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

    global _OPENED
    if not _HOOKED:
        _hook()
    _clear_caches()
    store.LOADED_WEIGHTS.clear()
    _OPENED = set()
    record: dict[str, Any] = {"load_start": load_average()}
    try:
        yield record
        record["used"] = used_files()
    finally:
        _OPENED = None
    record["weights"] = {rel(p): d for p, d in store.LOADED_WEIGHTS.items()}
    record["load_end"] = load_average()


_HOOKED = False


def _hook() -> None:
    """Install the audit hook once per interpreter (audit hooks cannot be removed)."""
    global _HOOKED
    sys.addaudithook(_audit)
    _HOOKED = True


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

    files = recorded_files(technique, record["used"])
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
    """Problems of one committed result, one line each, naming the result and the file.

    The file is read by `reference.harness.integrity.read_checked`: finite numbers, bounded
    depth, the schema of its version, then every derived figure recomputed from its raw values
    (and its digest, from schema 4). A result that can be read at all is then checked for
    staleness too.
    """
    from .integrity import read_checked

    path = results_dir / f"{technique.slug}.json"
    shown = _display(path)
    rerun = f"rerun: glossary bench {technique.slug}"
    if not path.is_file():
        return [f"{shown}: missing; {rerun}"]
    data, problems = read_checked(path, shown)
    out = [f"{line}; {rerun}" for line in problems]
    if data is None:
        return out
    if data["slug"] != technique.slug or data["module"] != technique.package:
        out.append(f"{shown}: is for {data['slug']} ({data['module']}), not {technique.slug}")
    if not data["standard"] or data["quick"]:
        out.append(f"{shown}: not the standard run (quick or options changed); {rerun}")
    prov = data["provenance"]
    if prov["dirty"]:
        out.append(f"{shown}: measured with uncommitted changes (dirty: true); {rerun}")
    out += stale_lines(shown, prov["files"], rerun)
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


def stale_lines(shown: str, recorded: dict[str, str], rerun: str) -> list[str]:
    """One line per recorded file that changed or is gone (`BOOKKEEPING` files excepted)."""
    out = []
    for name, digest in sorted(recorded.items()):
        file = REPO_ROOT / name
        if name in BOOKKEEPING:
            continue
        if not file.is_file():
            out.append(f"{shown}: stale: {name} no longer exists; {rerun}")
        elif sha256_file(file) != digest:
            out.append(f"{shown}: stale: {name} changed since it was measured; {rerun}")
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
