"""The technique command line (`reference.harness.entry`) for a study whose ``bench.py``
declares ``CONTRACT = 2``: the same cheap checks before any work, the same staging, sealing and
atomic write, the same one-line errors and exit codes.

A study is not in the registry (`reference.harness.study.STUDIES`), so `entry.target_of` does not
find it; this module gives `entry` the study's target instead and runs it. ``--check`` stays with
`reference.harness.study.main`, which reads any schema version.

Pitfall: the exception-to-exit-code mapping follows `entry`'s own (usage 2, failure 1, SIGINT
130, SIGTERM 143, a closed standard output 0); it is written here rather than shared because
every committed result records ``entry.py``, and changing it would stale all of them. The two
merge at the next harness-wide rerun.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Sequence

from reference.registry import Technique

from . import entry


def target(study: Technique) -> entry.Target:
    """The study as the command line's target (its record is what provenance keeps)."""
    return entry.Target(study.slug, study.package, study)


def _run(study: Technique, argv: Sequence[str]) -> int:
    t = target(study)
    bench = entry.load_bench(t)
    args = entry.build_parser(t, bench).parse_args(argv)
    overrides = {o.name: getattr(args, o.name) for o in bench.OPTIONS}
    p = entry.plan(
        t, bench, run_bench=args.bench, quick=args.quick, threads=args.threads, out=args.out,
        overrides={k: v for k, v in overrides.items() if v is not None},
    )  # fmt: skip
    if p.mode == "demo":
        entry.set_threads(p.threads)
        p.out.mkdir(parents=True, exist_ok=True)
        bench.demo(p.cfg, p.out)
    else:
        entry.report(*entry.run_bench(p))
    return 0


def _code(exc: BaseException, argv: Sequence[str]) -> tuple[str, int]:
    """The one line and the exit code of ``exc``, as `entry` maps them."""
    if isinstance(exc, entry.Interrupted) and exc.signum != signal.SIGINT:
        return "terminated", 128 + exc.signum
    if isinstance(exc, entry.Interrupted | KeyboardInterrupt):
        return "interrupted", entry.EXIT_INTERRUPTED
    if isinstance(exc, entry.UsageError):
        return "error: " + entry.one_line(str(exc)), entry.EXIT_USAGE
    if "--traceback" in argv:
        traceback.print_exception(exc)
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"error: {type(exc).__name__}: {entry.one_line(first)}", entry.EXIT_FAILURE


def run(study: Technique, argv: Sequence[str] | None = None) -> int:
    """``python -m <study package>`` on the technique command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    prog = f"python -m {study.package}"
    previous = entry.install_signals()
    try:
        from reference.harness.cli import quiet_threads

        quiet_threads()
        code = _run(study, args)
        sys.stdout.flush()
    except BrokenPipeError:  # a closed standard output (``| head``): quiet, like `entry`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives until exit)
        code = 0
    except SystemExit as exc:  # --help
        code = exc.code if isinstance(exc.code, int) else 0
    except (entry.Interrupted, KeyboardInterrupt, Exception) as exc:
        line, code = _code(exc, args)
        print(f"{prog}: {line}", file=sys.stderr)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
    return code
