"""The one command line of every technique: ``python -m reference.<package>``.

Each technique's ``__main__.py`` is the same two lines (``main(__package__)``); what differs lives
in its ``bench.py``, the technique contract:

``Config``
    a frozen dataclass of the run's sizes, with ``validate()`` raising ``ValueError``;
``FULL``, ``QUICK`` and ``DEMO``
    the committed benchmark, the seconds-long test configuration and the demo (``DEMO`` may be
    omitted: the demo then runs ``QUICK``);
``OPTIONS``
    the ``Config`` fields a user may change from the command line (`Option`), declared once;
``benchmark(cfg, out) -> Measurement``
    measures and writes its figures into ``out``;
``demo(cfg, out) -> None``
    prints a small comparison and writes a sample grid into ``out``.

Usage:

    python -m reference.feature_caching                 # demo, artifacts/feature-caching/
    python -m reference.feature_caching --bench         # the committed result
    python -m reference.feature_caching --bench --interval 5   # non-standard: artifacts/bench/
    python -m reference.feature_caching --quick --bench # the test configuration

A ``--bench`` run is *standard* only with no option changed, not ``--quick``, the default thread
count and no ``--out``; only a standard run writes ``reference/results/<slug>.json``. Any other
run writes to ``artifacts/`` (or ``--out``) and is marked ``"standard": false``, which
``glossary bench --check`` and the site refuse as a committed result. Every argument is checked
before any model is loaded; one benchmark runs at a time (a lock in ``artifacts/``), and a
full run waits for the machine to be idle (load average at most `max_load`) and is refused
if another job competed with it.

Under a launcher such as ``torchrun`` (``RANK`` and ``WORLD_SIZE`` set, `launched_rank`)
every rank runs this same command: a demo may use the ranks (``reference.async_pipeline`` does),
``--bench`` with more than one rank is refused (one lock, one load gate and one result file
belong to one process), and a usage error is printed once, by rank 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from reference.registry import REFERENCE_DIR, Technique, by_package

DEFAULT_THREADS = 2
ARTIFACTS = REFERENCE_DIR.parent / "artifacts"
LOCK_PATH = ARTIFACTS / ".bench.lock"
MAX_LOAD_ENV = "REFERENCE_MAX_LOAD"
SETTLE_SECONDS = 240.0
"""How long a benchmark waits for the load of an earlier run (or another job) to decay."""


class BusyMachine(RuntimeError):
    """The machine is too busy for a wall-clock measurement; nothing is written."""


def max_load() -> float:
    """The 1-minute load average a benchmark tolerates from *other* processes.

    ``REFERENCE_MAX_LOAD`` overrides; the default, three quarters of the cores (1.5 on the
    2-core reference machine), leaves room for the shell and the OS but not for a second job.
    """
    value = os.environ.get(MAX_LOAD_ENV)
    if value:
        try:
            return float(value)
        except ValueError:
            raise UsageError(f"{MAX_LOAD_ENV}={value!r} is not a number") from None
    return max(1.0, 0.75 * (os.cpu_count() or 1))


def wait_until_idle(limit: float, timeout: float = SETTLE_SECONDS, poll: float = 5.0) -> float:
    """Wait until the 1-minute load average is at most ``limit``; ``BusyMachine`` after
    ``timeout`` seconds. Returns the load it started at."""
    import time

    start = time.monotonic()
    told = False
    while True:
        load = os.getloadavg()[0]
        if load <= limit:
            return load
        if time.monotonic() - start > timeout:
            raise BusyMachine(
                f"the machine is busy: load average {load:.2f} > {limit:.2f} after waiting "
                f"{timeout:.0f} s; benchmarks time wall clock, so run them on an idle machine "
                f"(or set {MAX_LOAD_ENV})"
            )
        if not told:
            print(
                f"waiting for the machine to settle (load {load:.2f} > {limit:.2f})",
                file=sys.stderr,
            )
            told = True
        time.sleep(poll)


@dataclass(frozen=True)
class Option:
    """A ``Config`` field that the command line may change: ``--<name with dashes>``.

    ``parse`` turns the argument into the field's value (``int``, ``float``, `int_tuple`
    ...); the help text is the message ``option.<name>`` of the technique's catalog.
    """

    name: str
    parse: Callable[[str], Any] = int
    metavar: str = "N"


def int_tuple(text: str) -> tuple[int, ...]:
    """``"2,3,5"`` -> ``(2, 3, 5)`` (for options that take several values)."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected integers separated by commas: {text!r}"
        ) from None


def check_seeds(seeds: tuple[int, ...]) -> None:
    """``Config.validate()`` of a ``seeds`` field: at least two distinct, non-negative seeds
    (an interval needs two), else ``ValueError`` naming ``--seeds``."""
    if len(set(seeds)) < 2 or len(set(seeds)) != len(seeds) or min(seeds, default=0) < 0:
        raise ValueError(f"--seeds needs at least 2 distinct non-negative seeds, got {seeds}")


def at_least(cfg: Any, **minimums: float) -> None:
    """Check ``Config`` fields against their minimums, in order, for ``Config.validate()``.

    ``at_least(self, steps=1, repeats=1, warmup=0)`` raises ``ValueError("--steps must be >= 1,
    got 0")`` for the first field below its minimum (the option's name, as the user typed it).
    """
    for name, minimum in minimums.items():
        value = getattr(cfg, name)
        if value < minimum:
            raise ValueError(f"--{name.replace('_', '-')} must be >= {minimum}, got {value}")


def out_dir(text: str) -> Path:
    """argparse type of ``--out``: a folder path, never the empty string (which is ``.``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path")
    return Path(text)


def float_tuple(text: str) -> tuple[float, ...]:
    """``"0.5,1,2"`` -> ``(0.5, 1.0, 2.0)``."""
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected numbers separated by commas: {text!r}"
        ) from None


def name_tuple(text: str) -> tuple[str, ...]:
    """``"ddim,dpm-solver-pp"`` -> ``("ddim", "dpm-solver-pp")`` (lowercase identifiers)."""
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [n for n in names if not n.replace("-", "").replace("_", "").isalnum() or n != n.lower()]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"expected lowercase names separated by commas: {text!r}")
    return names


class UsageError(ValueError):
    """A bad argument: reported as one line, exit code 2, before any work."""


def launched_rank() -> tuple[int, int] | None:
    """``(RANK, WORLD_SIZE)`` when a launcher (``torchrun``) started this process, else ``None``.

    These are the variables of ``torch.distributed``'s ``env://`` rendezvous; raises
    `UsageError` when they are set but are not integers.
    """
    rank, size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None or size is None:
        return None
    try:
        return int(rank), int(size)
    except ValueError:
        raise UsageError(f"RANK={rank!r} and WORLD_SIZE={size!r} must be integers") from None


def _text(slug: str) -> Any:
    from glossary.i18n import ui_lang_from_env
    from glossary.resulttext import ResultText

    return ResultText(slug, ui_lang_from_env())


def contract(technique: Technique) -> ModuleType:
    """The technique's ``bench`` module, checked for the contract's names."""
    bench = importlib.import_module(f"{technique.package}.bench")
    missing = [
        n
        for n in ("Config", "FULL", "QUICK", "OPTIONS", "benchmark", "demo")
        if not hasattr(bench, n)
    ]
    if missing:
        raise TypeError(f"{bench.__name__} lacks {', '.join(missing)} (see reference.harness.cli)")
    return bench


def parser(technique: Technique, bench: ModuleType) -> argparse.ArgumentParser:
    text = _text(technique.slug)
    p = argparse.ArgumentParser(
        prog=f"python -m {technique.package}",
        description=text.title(),
        epilog=text.message("cli.epilog", {"slug": technique.slug}),
    )
    p.add_argument("--bench", action="store_true", help=text.message("cli.bench"))
    p.add_argument("--quick", action="store_true", help=text.message("cli.quick"))
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help=text.message("cli.threads", {"n": DEFAULT_THREADS}),
    )
    p.add_argument("--out", type=out_dir, default=None, metavar="DIR", help=text.message("cli.out"))
    for opt in bench.OPTIONS:
        default = getattr(bench.FULL, opt.name)
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else str(default)
        helptext = text.message(f"option.{opt.name}")
        if shown not in ("", "None"):
            helptext += " " + text.message("cli.default", {"value": shown})
        p.add_argument(
            "--" + opt.name.replace("_", "-"),
            dest=opt.name,
            type=opt.parse,
            default=None,
            metavar=opt.metavar,
            help=helptext,
        )
    return p


@dataclass(frozen=True)
class Plan:
    """A checked invocation: what to run, with which configuration, writing where."""

    technique: Technique
    bench: ModuleType
    mode: str  # "demo" | "bench"
    cfg: Any
    quick: bool
    threads: int
    options: dict[str, Any]
    out: Path
    standard: bool


def _check_out(out: Path | None) -> None:
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")


def plan(
    technique: Technique,
    bench: ModuleType,
    *,
    run_bench: bool,
    quick: bool,
    threads: int | None,
    out: Path | None,
    overrides: dict[str, Any],
) -> Plan:
    """Check every argument and decide the output folder; raises `UsageError`."""
    if threads is not None and threads < 1:
        raise UsageError(f"--threads must be >= 1, got {threads}")
    _check_out(out)
    launched = launched_rank()
    if run_bench and launched is not None and launched[1] > 1:
        message = "cli.bench-launched"
        raise UsageError(_text(technique.slug).message(message, {"world": launched[1]}))
    if run_bench:
        base = bench.QUICK if quick else bench.FULL
    else:
        base = getattr(bench, "DEMO", bench.QUICK) if not quick else bench.QUICK
    try:
        cfg = dataclasses.replace(base, **overrides)
        cfg.validate()
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    options = {k: v for k, v in overrides.items() if getattr(bench.FULL, k) != v}
    n_threads = threads or DEFAULT_THREADS
    standard = (
        run_bench and not quick and not options and n_threads == DEFAULT_THREADS and out is None
    )
    if out is None:
        if standard:
            out = REFERENCE_DIR / "results"
        elif run_bench:
            out = ARTIFACTS / ("bench-quick" if quick and not options else "bench")
        else:
            out = ARTIFACTS / technique.slug
    return Plan(
        technique,
        bench,
        "bench" if run_bench else "demo",
        cfg,
        quick,
        n_threads,
        options,
        out,
        standard,
    )


@contextmanager
def bench_lock() -> Iterator[None]:
    """One benchmark at a time on this machine: they time wall clock."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(LOCK_PATH, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            print(
                f"another benchmark is running (pid {holder}); waiting for it to finish",
                file=sys.stderr,
            )
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _command(p: Plan) -> str:
    if p.standard:
        return f"glossary bench {p.technique.slug}"
    args = [f"python -m {p.technique.package} --bench"]
    args += ["--quick"] if p.quick else []
    args += [f"--threads {p.threads}"] if p.threads != DEFAULT_THREADS else []
    for key, value in p.options.items():
        shown = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        args.append(f"--{key.replace('_', '-')} {shown}")
    return " ".join(args)


def run_benchmark(p: Plan) -> tuple[Any, Path]:
    """Measure, validate and write the result and its figures; return ``(result, path)``.

    The figures are written into a staging folder and moved next to the result only after the
    result validated, so a failed run leaves the previous figures and result untouched.
    """
    import torch

    from .provenance import provenance, recording
    from .results import BenchmarkResult, write_result

    torch.set_num_threads(p.threads)
    p.out.mkdir(parents=True, exist_ok=True)
    lock = nullcontext() if p.quick else bench_lock()  # quick runs are tests, not figures
    with lock, tempfile.TemporaryDirectory(dir=p.out, prefix=".staging-") as tmp:
        staging = Path(tmp)
        limit = max_load()
        if not p.quick:
            wait_until_idle(limit)
        with recording() as record:
            measurement = p.bench.benchmark(p.cfg, staging)
        if not p.quick and record["load_end"][0] > limit + p.threads:
            raise BusyMachine(
                f"the load average rose to {record['load_end'][0]:.2f} during the run (more "
                f"than this benchmark's {p.threads} threads above {limit:.2f}): another job "
                "competed for the cores; nothing was written, rerun on an idle machine"
            )
        result = BenchmarkResult(
            slug=p.technique.slug,
            module=p.technique.package,
            standard=p.standard,
            quick=p.quick,
            options=p.options,
            measurement=measurement,
            provenance=provenance(p.technique, record, p.threads, _command(p)),
        )
        for fig in measurement.figures:
            if not (staging / fig.file).is_file():
                raise ValueError(f"{p.technique.slug}: figure {fig.file} was not written")
        path = write_result(result, p.out)
        for fig in measurement.figures:
            shutil.move(str(staging / fig.file), str(p.out / fig.file))
    return result, path


def report(result: Any, path: Path) -> None:
    """Print the aims, their states and any anomaly, in the user's language."""
    data = result.to_dict()
    text = _text(result.slug)
    for a in data["aims"]:
        shown = "—" if a["measured"] is None else f"{a['measured']:.3g}"
        if a["interval"] is not None:
            shown += f" [{a['interval'][0]:.3g}, {a['interval'][1]:.3g}]"
        print(f"[{text.state(a['state'])}] {text.aim(a)}: {shown}")
    for x in data["anomalies"]:
        print(f"[!] {text.anomaly(x)}")
    if not data["standard"]:
        print(text.message("cli.nonstandard"))
    print(text.message("cli.wrote", {"path": str(path)}))


def _fail(prog: str, message: str, code: int) -> NoReturn:
    launched = os.environ.get("WORLD_SIZE") is not None and os.environ.get("RANK", "0") != "0"
    if code != 2 or not launched:  # a usage error: every rank checked the same arguments
        print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def quiet_threads() -> None:
    """OpenMP threads sleep instead of spinning when idle (set before torch is imported): on a
    shared 2-core machine the default active wait made torch 10-50x slower whenever another
    process was busy. An explicit ``OMP_WAIT_POLICY`` wins."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main(package: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point of ``python -m reference.<package>``."""
    quiet_threads()
    technique = by_package(package)
    if technique is None:
        _fail(package, f"{package} is not a registered technique (reference/registry.py)", 2)
    bench = contract(technique)
    p_args = parser(technique, bench).parse_args(argv)
    overrides = {
        o.name: getattr(p_args, o.name)
        for o in bench.OPTIONS
        if getattr(p_args, o.name) is not None
    }
    prog = f"python -m {package}"
    try:
        p = plan(
            technique,
            bench,
            run_bench=p_args.bench,
            quick=p_args.quick,
            threads=p_args.threads,
            out=p_args.out,
            overrides=overrides,
        )
    except UsageError as exc:
        _fail(prog, str(exc), 2)
    try:
        if p.mode == "demo":
            import torch

            torch.set_num_threads(p.threads)
            bench.demo(p.cfg, p.out)
        else:
            report(*run_benchmark(p))
    except KeyboardInterrupt:
        _fail(prog, "interrupted", 130)
    except Exception as exc:
        from reference.zoo import ZooError

        if isinstance(exc, ZooError | OSError | BusyMachine):
            _fail(prog, str(exc), 1)
        raise
    raise SystemExit(0)
