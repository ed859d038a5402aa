"""The command line of every benchmark and study: every option checked before any work, nothing
half-written, and an installed package that writes where its user is.

A technique's ``__main__.py`` is ``from reference.harness.launch import technique;
technique(__package__)`` (which loads this module inside its Ctrl-C guard and calls `run`), a
study's is the same with ``study`` (`reference.harness.study`), and the ``bench.py`` of either
declares ``CONTRACT = 2`` and

``Config``
    a frozen dataclass of the run's sizes, with ``validate()`` raising ``ValueError``;
``FULL``, ``QUICK`` and ``DEMO``
    the committed benchmark, the seconds-long test configuration and the demo (``DEMO`` may be
    omitted: the demo then runs ``QUICK``);
``OPTIONS``
    the `Option` values a user may change, each with the bounds the code needs (`integer`,
    `integers`, `seeds`, `real`, `reals`, `switch`, `choice`, `names`, `compile_backend`);
``measure(cfg, staging) -> reference.harness.compare.Outcome``
    measures, writes its figures into ``staging`` and returns the result's body;
``demo(cfg, out) -> None``
    prints a small comparison and writes a sample grid into ``out``.

``bench.py`` imports torch only inside ``measure`` and ``demo``, so that a refused command has
loaded neither torch nor a model.

The idea
========
Work happens in three phases, and nothing of a later phase starts before the earlier one passed:

1. **Cheap checks** (no torch): the flags (unknown ones refused, no prefix abbreviation), every
   option value against its declared bounds (seeds: (1)), ``--threads`` within the machine
   (2), ``--out`` outside the package, ``Config.validate()``.
2. **Late checks**: checks that need a heavy import (a compile backend is one of
   ``torch._dynamo.list_backends()``), run only once every cheap check passed.
3. **The run**: the lock, the idle gate, ``measure`` into a staging folder (3), the result
   assembled (`assemble`), `finish`-ed, validated, written atomically, and only then the
   figures moved next to it.

The bounds
==========
A seed must be accepted by every generator a benchmark seeds::

    0 <= seed <= 2**32 - 1                                                      (1)

numpy's ``RandomState`` (``np.random.seed``) refuses anything outside (1); ``torch.manual_seed``
accepts ``[-2**63, 2**64 - 1]``, a superset. A thread count is useful only up to the cores::

    1 <= threads <= os.cpu_count()                                              (2)

(OpenBLAS segfaults at ``--threads 100000``.) Every number is finite and within the bounds the
bench declares: a step list is positive, a quality sample size is at least the size at which
every statistic of the result is defined (the bench's declared minimum), a list holds no
duplicate. A staging folder is named::

    <out>/.staging-<pid>-<random>                                               (3)

so that the next run can tell a folder of a dead process (removed) from a live one (kept).

Errors
======
A usage error is one line ``python -m reference.<pkg>: error: <what>`` and exit 2 (``--help``
prints the whole help); a runtime failure is one line and exit 1 (``--traceback`` shows it); an
interruption (SIGINT) is one line ``interrupted`` and exit 130, SIGTERM one line and exit 143,
both after every ``with`` unwound, so the staging folder is gone. A closed standard output
(``... | head``) ends quietly with exit 0.

Installed like a library
========================
Outside a git checkout (`installed`), results and figures go to ``./artifacts/<slug>`` in the
current folder, or ``--out``, never into site-packages; the lock sits in the output folder's
parent. The standard run is refused there: standard results live in the project's repository
(``reference/results/``), made with ``glossary bench <slug>`` in a checkout.

Sources: the numpy and torch seed ranges from their documentation (``RandomState.seed``,
``torch.Generator.manual_seed``); the quiet ``BrokenPipeError`` exit follows the Python
documentation's note on SIGPIPE (``signal`` module).

Pitfalls
========
* A second signal while the first unwinds is ignored, so that the clean-up finishes.
* Quick runs take no lock (they are tests, not timings); they remove only staging folders of
  dead processes, which cannot race with a live run.
* ``Option.parse`` receives arbitrary user text: it accepts ASCII digits only, at most 30 of
  them (``int()`` would accept ``"1_000"`` and Arabic-Indic digits, and 10**30 digits would take
  seconds to convert).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import fcntl
import importlib
import json
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, NoReturn

from .bounds import SEED_MAX  # the largest seed every generator accepts, (1)
from .machine import UsageError

CONTRACT = 2
"""The ``CONTRACT`` a ``bench.py`` declares to use this command line."""
SCHEMA_VERSION = 4
MAX_DIGITS = 30
MAX_ITEMS = 64
"""The most values one list option takes."""
BODY_KEYS = ("settings", "metrics", "rows", "headline", "aims", "anomalies", "notes", "figures")
"""The keys of `reference.harness.compare.Outcome.body`, in the result's order."""
STAGING_RE = re.compile(r"^\.staging-(\d+)-[A-Za-z0-9_]+$")
EXIT_USAGE, EXIT_FAILURE, EXIT_INTERRUPTED = 2, 1, 130


# --- signals ------------------------------------------------------------------------------------


_HIT: list[int] = []
"""The signal that started the unwinding (empty while none did)."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: raised in the main thread, it unwinds every ``with`` (like
    ``KeyboardInterrupt``) so that staging folders and temporary files are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _HIT:  # already unwinding: let the clean-up finish
        return
    _HIT.append(signum)
    raise Interrupted(signum)


def install_signals() -> dict[int, object]:
    """Turn SIGINT and SIGTERM into `Interrupted`; return the previous handlers (none outside
    the main thread, where Python lets no handler be installed)."""
    _HIT.clear()
    previous: dict[int, object] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, _on_signal)
    except ValueError:  # not the main thread
        pass
    return previous


# --- options ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """A ``Config`` field that the command line may change: ``--<name with dashes>``.

    ``parse`` turns the text into the field's value or raises ``argparse.ArgumentTypeError``
    with the bound it broke; ``late`` is a check that needs a heavy import, run only after every
    cheap check passed (`compile_backend`). The help text is the message ``option.<name>`` of
    the technique's catalog.
    """

    name: str
    parse: Callable[[str], Any]
    metavar: str = "N"
    late: Callable[[Any], None] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one printable line (``\\n`` escaped), cut at ``limit`` characters."""
    shown = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return shown if len(shown) <= limit else shown[:limit] + "…"


def _echo(text: str) -> str:
    return "'" + one_line(text, 40) + "'"


def _whole(text: str, low: int, high: int) -> int:
    """A whole number in ``[low, high]`` written in ASCII digits."""
    clean = text.strip()
    if not re.fullmatch(rf"[+-]?[0-9]{{1,{MAX_DIGITS}}}", clean) or not low <= int(clean) <= high:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {low} to {high}, got {_echo(text)}"
        )
    return int(clean)


def _items(text: str, unique: bool, min_count: int) -> list[str]:
    items = [x.strip() for x in text.split(",")]
    if any(not x for x in items):
        raise argparse.ArgumentTypeError(f"expected values separated by commas, got {_echo(text)}")
    if not min_count <= len(items) <= MAX_ITEMS:
        raise argparse.ArgumentTypeError(
            f"expected {min_count} to {MAX_ITEMS} values, got {len(items)}"
        )
    if unique:
        seen: set[str] = set()
        for x in items:
            if x in seen:
                raise argparse.ArgumentTypeError(f"{_echo(x)} is given twice")
            seen.add(x)
    return items


def integer(name: str, *, low: int, high: int, metavar: str = "N") -> Option:
    """A whole number in ``[low, high]``."""
    return Option(name, lambda text: _whole(text, low, high), metavar)


def integers(
    name: str,
    *,
    low: int,
    high: int,
    min_count: int = 1,
    unique: bool = True,
    metavar: str = "N,N,...",
) -> Option:
    """A comma-separated list of whole numbers in ``[low, high]`` (no duplicate by default)."""

    def parse(text: str) -> tuple[int, ...]:
        values = tuple(_whole(x, low, high) for x in _items(text, False, min_count))
        if unique and len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"a value is given twice in {_echo(text)}")
        return values

    return Option(name, parse, metavar)


def seeds(name: str = "seeds", *, min_count: int = 2) -> Option:
    """Distinct seeds within every generator's range (1); two at least, for an interval."""
    return integers(  # (1)
        name, low=0, high=SEED_MAX, min_count=min_count, metavar="SEED,SEED,..."
    )


def _finite(text: str, low: float, high: float) -> float:
    try:
        value = float(text) if len(text) <= 64 else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise argparse.ArgumentTypeError(
            f"expected a finite number from {low:g} to {high:g}, got {_echo(text)}"
        )
    return value


def real(name: str, *, low: float, high: float, metavar: str = "X") -> Option:
    """A finite number in ``[low, high]`` (``inf`` and ``nan`` refused)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{name}: the bounds of a number must be finite")
    return Option(name, lambda text: _finite(text, low, high), metavar)


def _bounded(text: str, low: float, high: float, open_low: bool, open_high: bool) -> float:
    value = _finite(text, low, high)
    if (open_low and value == low) or (open_high and value == high):
        left, right = "(" if open_low else "[", ")" if open_high else "]"
        raise argparse.ArgumentTypeError(
            f"expected a number in {left}{low:g}, {high:g}{right}, got {_echo(text)}"
        )
    return value


def reals(
    name: str,
    *,
    low: float,
    high: float,
    open_low: bool = False,
    open_high: bool = False,
    min_count: int = 1,
    unique: bool = True,
    metavar: str = "X,X,...",
) -> Option:
    """A comma-separated list of finite numbers in ``[low, high]`` (an end excluded with
    ``open_low`` / ``open_high``: a pruning ratio in (0, 1)); with ``min_count=0`` an empty
    text is the empty list."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{name}: the bounds of a number must be finite")

    def parse(text: str) -> tuple[float, ...]:
        if min_count == 0 and not text.strip():
            return ()
        items = _items(text, False, max(min_count, 1))
        values = tuple(_bounded(x, low, high, open_low, open_high) for x in items)
        if unique and len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"a value is given twice in {_echo(text)}")
        return values

    return Option(name, parse, metavar)


SWITCH_WORDS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}


def switch(name: str) -> Option:
    """A yes/no choice (``yes``/``no``, ``true``/``false``, ``on``/``off``)."""

    def parse(text: str) -> bool:
        value = text.strip().lower()
        if value not in SWITCH_WORDS:
            raise argparse.ArgumentTypeError(f"expected yes or no, got {_echo(text)}")
        return SWITCH_WORDS[value]

    return Option(name, parse, "{yes,no}")


def _one_of(text: str, allowed: Sequence[str]) -> str:
    value = text.strip()
    if value not in allowed:
        raise argparse.ArgumentTypeError(
            f"unknown value {_echo(text)}; valid: {', '.join(allowed)}"
        )
    return value


def choice(name: str, allowed: Sequence[str]) -> Option:
    """One word of ``allowed``."""
    return Option(name, lambda text: _one_of(text, allowed), "{" + ",".join(allowed) + "}")


def names(name: str, allowed: Sequence[str], *, min_count: int = 1) -> Option:
    """A comma-separated list of distinct words of ``allowed``."""

    def parse(text: str) -> tuple[str, ...]:
        return tuple(_one_of(x, allowed) for x in _items(text, True, min_count))

    return Option(name, parse, "NAME,NAME,...")


def _word(text: str) -> str:
    value = text.strip()
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", value):
        raise argparse.ArgumentTypeError(f"expected a lowercase name, got {_echo(text)}")
    return value


def compile_backend(name: str = "compile_backend") -> Option:
    """A ``torch.compile`` backend: a lowercase name now, one of
    ``torch._dynamo.list_backends()`` (debug ones included) after the cheap checks."""

    def late(value: str) -> None:
        import torch._dynamo

        known = sorted(torch._dynamo.list_backends(exclude_tags=()))
        if value not in known:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag}: unknown backend {_echo(value)}; valid: {', '.join(known)}")

    return Option(name, _word, "BACKEND", late)


# --- the technique and its contract -----------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The technique a command runs: its slug, its package, and the registry's record of it
    (what provenance hashes)."""

    slug: str
    package: str
    technique: Any


def target_of(package: str) -> Target | None:
    """The registered technique, or the study (`reference.registry.STUDIES`), whose
    package is ``package`` (``None`` if there is none)."""
    from reference.registry import by_package, study_by_package

    technique = by_package(package) or study_by_package(package)
    return None if technique is None else Target(technique.slug, technique.package, technique)


def target_by_slug(slug: str) -> Target:
    """The registered technique ``slug``; `UsageError` naming the known ones otherwise."""
    from reference.registry import get

    try:
        technique = get(slug)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    return Target(technique.slug, technique.package, technique)


def contract_version(slug: str) -> int:
    """The ``CONTRACT`` that ``reference/<pkg>/bench.py`` assigns at top level (1 if none),
    read with ``ast``: deciding the route imports neither the bench nor torch."""
    from reference.registry import REFERENCE_DIR, package_of

    path = REFERENCE_DIR / package_of(slug).removeprefix("reference.") / "bench.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return 1
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "CONTRACT" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            return node.value.value
    return 1


def load_bench(target: Target) -> ModuleType:
    """The technique's ``bench`` module, checked for contract 2's names."""
    bench = importlib.import_module(f"{target.package}.bench")
    needed = ("Config", "FULL", "QUICK", "OPTIONS", "measure", "demo")
    missing = [n for n in needed if not hasattr(bench, n)]
    if getattr(bench, "CONTRACT", None) != CONTRACT:
        missing.insert(0, f"CONTRACT = {CONTRACT}")
    if missing:
        raise TypeError(f"{bench.__name__} lacks {', '.join(missing)} (see {__name__})")
    return bench


# --- where outputs go -------------------------------------------------------------------------


def installed() -> bool:
    """Whether ``reference`` is imported from an installed distribution, not a git checkout."""
    from reference.registry import REFERENCE_DIR

    in_site = any(p in ("site-packages", "dist-packages") for p in REFERENCE_DIR.parts)
    return in_site or not (REFERENCE_DIR.parent / ".git").exists()


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def check_out(out: Path) -> None:
    """Refuse an output folder that is a file, or lies inside the ``reference`` package."""
    from reference.registry import REFERENCE_DIR

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {one_line(str(out))}: exists and is not a folder")
    if _inside(out, REFERENCE_DIR):
        raise UsageError(
            f"--out {one_line(str(out))}: inside the package {REFERENCE_DIR}; "
            "write outputs to a folder of your own"
        )


def _out_text(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path")
    return Path(text)


def _threads(text: str) -> int:
    return _whole(text, 1, os.cpu_count() or 1)  # (2)


# --- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A checked invocation: what to run, with which configuration, writing where."""

    target: Target
    bench: ModuleType
    mode: str  # "demo" | "bench"
    cfg: Any
    quick: bool
    threads: int
    options: dict[str, Any]
    out: Path
    standard: bool
    lock: Path | None
    """The bench lock of a timed run (``None`` for a quick run or a demo)."""
    max_load: float


def _outputs(target: Target, run_bench: bool, quick: bool, standard: bool) -> tuple[Path, Path]:
    """The default output folder and the lock of a run."""
    from reference.registry import REFERENCE_DIR

    from .machine import ARTIFACTS, LOCK_PATH

    if installed():
        out = Path.cwd() / "artifacts" / target.slug
        return out, out.parent / ".bench.lock"
    if standard:
        return REFERENCE_DIR / "results", LOCK_PATH
    if run_bench:
        return ARTIFACTS / ("bench-quick" if quick else "bench"), LOCK_PATH
    return ARTIFACTS / target.slug, LOCK_PATH


def plan(
    target: Target,
    bench: ModuleType,
    *,
    run_bench: bool,
    quick: bool,
    threads: int | None,
    out: Path | None,
    overrides: dict[str, Any],
) -> Plan:
    """Check every argument (cheap checks, then late ones) and decide the outputs; raises
    `UsageError`. Nothing is created or loaded."""
    from .machine import DEFAULT_THREADS, launched_rank, max_load

    if threads is not None:
        try:
            _threads(str(threads))
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"--threads: {exc}") from None
    launched = launched_rank()
    if run_bench and launched is not None and launched[1] > 1:
        raise UsageError(f"--bench runs in one process; this is one of {launched[1]} ranks")
    base = (bench.QUICK if quick else bench.FULL) if run_bench else bench.QUICK
    if not run_bench and not quick:
        base = getattr(bench, "DEMO", bench.QUICK)
    try:
        cfg = dataclasses.replace(base, **overrides)
        cfg.validate()
    except (TypeError, ValueError) as exc:
        raise UsageError(one_line(str(exc))) from None
    options = {k: v for k, v in overrides.items() if getattr(bench.FULL, k) != v}
    n_threads = threads or DEFAULT_THREADS
    standard = (
        run_bench and not quick and not options and n_threads == DEFAULT_THREADS and out is None
    )
    if standard and installed():
        raise UsageError(
            "the standard run is made in the project's repository: standard results live in "
            f"reference/results/, made with `glossary bench {target.slug}` in a checkout; "
            "here use --quick, change an option, or give --out"
        )
    default_out, lock = _outputs(target, run_bench, quick, standard)
    folder = out if out is not None else default_out
    if out is not None or installed():  # the checkout's own folders are not the user's
        check_out(folder)
    if out is not None and installed():
        lock = folder.parent / ".bench.lock"
    limit = max_load() if run_bench and not quick else 0.0
    for opt in bench.OPTIONS:
        if opt.late is not None and opt.name in overrides:
            opt.late(overrides[opt.name])
    mode = "bench" if run_bench else "demo"
    timed = run_bench and not quick
    return Plan(
        target, bench, mode, cfg, quick, n_threads, options, folder, standard,
        lock if timed else None, limit,
    )  # fmt: skip


# --- the run ----------------------------------------------------------------------------------


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (`glossary.safewrite.pid_alive`, the safe writer's rule
    for its own temporary files)."""
    from glossary.safewrite import pid_alive as alive

    return alive(pid)


def remove_stale_staging(out: Path) -> list[Path]:
    """Remove the staging folders (3) in ``out`` whose process no longer exists."""
    removed = []
    for path in sorted(out.iterdir()) if out.is_dir() else []:
        match = STAGING_RE.match(path.name)
        if match and path.is_dir() and not pid_alive(int(match.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


@contextmanager
def staging_folder(out: Path) -> Iterator[Path]:
    """A fresh staging folder (3) in ``out``, removed on leaving however the block ends."""
    remove_stale_staging(out)
    path = Path(tempfile.mkdtemp(prefix=f".staging-{os.getpid()}-", dir=out))  # (3)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def hold_lock(path: Path) -> Iterator[None]:
    """One timed benchmark at a time: an exclusive ``flock`` on ``path`` holding our pid."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            print(f"another benchmark is running (pid {holder}); waiting", file=sys.stderr)
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def set_threads(n: int) -> None:
    """The torch thread count of the run."""
    import torch

    torch.set_num_threads(n)


def recording_for(p: Plan) -> Any:
    """The context that records what the run used (`reference.harness.provenance`)."""
    from reference.harness.provenance import recording

    return recording()


def provenance_for(p: Plan, record: dict[str, Any]) -> dict[str, Any]:
    """The result's ``provenance`` object."""
    from reference.harness.provenance import provenance

    return provenance(p.target.technique, record, p.threads, command_of(p))


def command_of(p: Plan) -> str:
    """The command that reproduces the run."""
    if p.standard:
        return f"glossary bench {p.target.slug}"
    args = [f"python -m {p.target.package} --bench"]
    args += ["--quick"] if p.quick else []
    args += [f"--threads {p.threads}"] if p.threads != _default_threads() else []
    for key, value in p.options.items():
        shown = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        args.append(f"--{key.replace('_', '-')} {shown}")
    return " ".join(args)


def _default_threads() -> int:
    from .machine import DEFAULT_THREADS

    return DEFAULT_THREADS


def finish(result: dict[str, Any]) -> dict[str, Any]:
    """The last step before a result is validated and written: the digest of the whole result
    (`reference.harness.integrity.seal`), so that a hand edit of any value is named by
    ``glossary bench --check``."""
    from reference.harness.integrity import seal

    try:
        return seal(result)
    except (TypeError, ValueError) as exc:  # the canonical form refuses NaN and non-JSON values
        raise ValueError(f"{result.get('slug')}: the result is not finite JSON: {exc}") from None


def _plain(value: Any) -> Any:
    """Tuples to lists, recursively (JSON has no tuples)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def assemble(p: Plan, body: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    """The result: the envelope, then the body in `BODY_KEYS`' order, then the provenance."""
    if not isinstance(body, dict) or set(body) != set(BODY_KEYS):
        keys = sorted(body) if isinstance(body, dict) else type(body).__name__
        raise ValueError(f"{p.target.slug}: the body's keys are {keys}, not {list(BODY_KEYS)}")
    head = {
        "schema_version": SCHEMA_VERSION,
        "slug": p.target.slug,
        "module": p.target.package,
        "standard": p.standard,
        "quick": p.quick,
        "options": _plain(p.options),
    }
    return {**head, **{k: _plain(body[k]) for k in BODY_KEYS}, "provenance": provenance}


def check_result(slug: str, result: dict[str, Any], staging: Path) -> str:
    """The result's JSON text; ``ValueError`` if a number is not finite, a value is not JSON
    or a declared figure is not a plain file name that ``measure`` wrote into ``staging``."""
    try:
        text = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{slug}: the result is not finite JSON: {exc}") from None
    for fig in result.get("figures") or []:
        name = fig.get("file") if isinstance(fig, dict) else None
        plain = isinstance(name, str) and name == Path(name).name and not name.startswith(".")
        if not plain:
            raise ValueError(f"{slug}: figure {name!r} is not a plain file name")
        if not (staging / name).is_file():
            raise ValueError(f"{slug}: figure {name} was not written")
    from reference.harness.integrity import check_result as problems_of

    problems = problems_of(json.loads(text), slug)
    if problems:  # the schema, or a derived figure that its raw values do not give
        raise ValueError(problems[0])
    return text


def run_bench(p: Plan) -> tuple[dict[str, Any], Path]:
    """Measure into a staging folder, write the result atomically, then move the figures in;
    return ``(result, path)``. An interruption or a failure leaves the previous result and
    figures as they were, and no staging folder."""
    from glossary.safewrite import atomic_write_text

    from .machine import BusyMachine, wait_until_idle

    p.out.mkdir(parents=True, exist_ok=True)
    lock = hold_lock(p.lock) if p.lock is not None else nullcontext()
    with lock, staging_folder(p.out) as staging:
        if p.lock is not None:
            wait_until_idle(p.max_load)
        set_threads(p.threads)
        with recording_for(p) as record:
            outcome = p.bench.measure(p.cfg, staging)
        if p.lock is not None and record["load_end"][0] > p.max_load + p.threads:
            raise BusyMachine(
                f"the load average rose to {record['load_end'][0]:.2f} during the run: another "
                "job competed for the cores; nothing was written, rerun on an idle machine"
            )
        result = finish(assemble(p, outcome.body, provenance_for(p, record)))
        text = check_result(p.target.slug, result, staging)
        path = atomic_write_text(p.out / f"{p.target.slug}.json", text)
        for fig in result["figures"]:
            os.replace(staging / fig["file"], p.out / fig["file"])
    return result, path


def prepare_standard(
    slug: str, *, quick: bool = False, threads: int | None = None, out: Path | None = None
) -> Plan:
    """The checked plan of ``glossary bench <slug>`` (`UsageError`)."""
    target = target_by_slug(slug)
    bench = load_bench(target)
    return plan(target, bench, run_bench=True, quick=quick, threads=threads, out=out, overrides={})


def run_standard(
    slug: str, *, quick: bool = False, threads: int | None = None, out: Path | None = None
) -> tuple[dict[str, Any], Path]:
    """``glossary bench <slug>``'s run of a benchmark: `prepare_standard`, then
    `run_bench`."""
    return run_bench(prepare_standard(slug, quick=quick, threads=threads, out=out))


def report(result: dict[str, Any], path: Path) -> None:
    """Print the aims, their states and any anomaly, in the user's language."""
    from glossary.i18n import ui_lang_from_env
    from glossary.resulttext import ResultText

    text = ResultText(result["slug"], ui_lang_from_env())
    for a in result["aims"]:
        shown = "—" if a.get("measured") is None else f"{a['measured']:.3g}"
        if a.get("interval") is not None:
            shown += f" [{a['interval'][0]:.3g}, {a['interval'][1]:.3g}]"
        print(f"[{text.state(a['state'])}] {text.aim(a)}: {shown}")
    for x in result["anomalies"]:
        print(f"[!] {text.anomaly(x)}")
    if not result["standard"]:
        print(text.message("cli.nonstandard"))
    print(text.message("cli.wrote", {"path": one_line(str(path))}))


# --- the command line -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """Errors are raised as `UsageError` (one line), never printed with the usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _help_text(slug: str) -> Any:
    from glossary.i18n import ui_lang_from_env
    from glossary.resulttext import ResultText

    return ResultText(slug, ui_lang_from_env())


def build_parser(target: Target, bench: ModuleType) -> argparse.ArgumentParser:
    """The parser of ``python -m <package>``: the common flags, then the bench's options."""
    from .machine import DEFAULT_THREADS

    text = _help_text(target.slug)
    p = _Parser(
        prog=f"python -m {target.package}",
        description=text.title(),
        epilog=text.message("cli.epilog", {"slug": target.slug}),
        allow_abbrev=False,
    )
    p.add_argument("--bench", action="store_true", help=text.message("cli.bench"))
    p.add_argument("--quick", action="store_true", help=text.message("cli.quick"))
    threads_help = text.message("cli.threads", {"n": DEFAULT_THREADS})
    p.add_argument("--threads", type=_threads, metavar="N", help=threads_help)
    p.add_argument("--out", type=_out_text, metavar="DIR", help=text.message("cli.out"))
    p.add_argument("--traceback", action="store_true", help=text.message("cli.traceback"))
    for opt in bench.OPTIONS:
        default = getattr(bench.FULL, opt.name)
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else str(default)
        helptext = text.message(f"option.{opt.name}")
        if shown not in ("", "None"):
            helptext += " " + text.message("cli.default", {"value": shown})
        p.add_argument(opt.flag, dest=opt.name, type=opt.parse, metavar=opt.metavar, help=helptext)
    return p


def _run(package: str | Target, argv: Sequence[str]) -> int:
    target = package if isinstance(package, Target) else target_of(package)
    if target is None:
        raise UsageError(f"{package} is not a registered technique (reference/registry.py)")
    bench = load_bench(target)
    args = build_parser(target, bench).parse_args(argv)
    overrides = {o.name: getattr(args, o.name) for o in bench.OPTIONS}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    p = plan(
        target, bench, run_bench=args.bench, quick=args.quick, threads=args.threads,
        out=args.out, overrides=overrides,
    )  # fmt: skip
    if p.mode == "demo":
        set_threads(p.threads)
        p.out.mkdir(parents=True, exist_ok=True)
        bench.demo(p.cfg, p.out)
    else:
        report(*run_bench(p))
    return 0


def _say(prog: str, message: str, code: int) -> int:
    """Print the one line of a failure (a usage error once, by rank 0, under a launcher)."""
    other_rank = os.environ.get("WORLD_SIZE") is not None and os.environ.get("RANK", "0") != "0"
    if code != EXIT_USAGE or not other_rank:
        print(f"{prog}: {message}", file=sys.stderr)
    return code


def quiet_stdout() -> None:
    """Standard output is closed (``| head``): point it at ``/dev/null`` so that the final
    flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):
        pass


def _guarded(package: str | Target, argv: Sequence[str]) -> int:
    prog = f"python -m {package.package if isinstance(package, Target) else package}"
    try:
        code = _run(package, argv)
        sys.stdout.flush()
        return code
    except Interrupted as exc:
        if exc.signum == signal.SIGINT:
            return _say(prog, "interrupted", EXIT_INTERRUPTED)
        return _say(prog, "terminated", 128 + exc.signum)
    except KeyboardInterrupt:
        return _say(prog, "interrupted", EXIT_INTERRUPTED)
    except UsageError as exc:
        return _say(prog, "error: " + one_line(str(exc)), EXIT_USAGE)
    except BrokenPipeError:
        quiet_stdout()
        return 0
    except SystemExit as exc:  # --help
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            quiet_stdout()
        return exc.code if isinstance(exc.code, int) else 0
    except Exception as exc:
        if "--traceback" in argv:
            traceback.print_exc()
        first = (str(exc).strip().splitlines() or [""])[0]
        return _say(prog, f"error: {type(exc).__name__}: {one_line(first)}", EXIT_FAILURE)


def run(package: str | Target, argv: Sequence[str] | None = None) -> int:
    """Run the command line of ``package`` (a technique's or a study's package, or its
    `Target`) on ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    previous = install_signals()
    try:
        from .machine import quiet_threads

        quiet_threads()
        code = _guarded(package, list(sys.argv[1:] if argv is None else argv))
    except Interrupted as exc:  # arrived between two handlers above
        code = EXIT_INTERRUPTED if exc.signum == signal.SIGINT else 128 + exc.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
    return code


def main(package: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point of ``python -m reference.<package>``: `run`, then exit with its code."""
    raise SystemExit(run(package, argv))
