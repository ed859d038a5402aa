"""``python -m reference.stacking``: the harness's command line, plus the study's summary.

The study is not a registered technique, so it cannot use `reference.harness.cli.main`; it uses
the same pieces (``parser``, ``plan``, ``run_benchmark``, ``report``), so its options, output
folders, lock, load gate and standard-run rules are the harness's. Two additions: ``--list``
prints the compatibility matrix (no torch), ``--check`` checks the committed result.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

PROG = "python -m reference.stacking"


def _text() -> Any:
    from glossary.i18n import ui_lang_from_env
    from glossary.resulttext import ResultText

    return ResultText("stacking", ui_lang_from_env())


def print_matrix() -> None:
    """Every pair of inference-time techniques with its verdict, in the user's language."""
    from reference.compatibility import all_pairs

    text = _text()
    for a, b, v in all_pairs():
        mark = "+" if v.compatible else "x"
        why = "" if v.compatible else "  " + text.message(f"reason.{v.reason}")
        print(f"{mark} {a} / {b}{why}")


def names(members: Sequence[str], text: Any) -> str:
    return " + ".join(text.message(f"element.{m}") for m in members)


def report(result: Any, path: Path) -> None:
    """The harness's report, with the one aim per pair and stack counted instead of listed."""
    from collections import Counter

    data = result.to_dict()
    text = _text()
    per_stack = Counter(a["state"] for a in data["aims"] if a["id"] == "beats-control")
    print(
        text.message("cli.controls", {s: per_stack[s] for s in ("met", "missed", "inconclusive")})
    )
    for a in data["aims"]:
        if a["id"] == "beats-control":
            continue
        shown = "—" if a["measured"] is None else f"{a['measured']:.3g}"
        if a["interval"] is not None:
            shown += f" [{a['interval'][0]:.3g}, {a['interval'][1]:.3g}]"
        print(f"[{text.state(a['state'])}] {text.aim(a)}: {shown}")
    for x in data["anomalies"]:
        print(f"[!] {text.anomaly(x)}")
    if not data["standard"]:
        print(text.message("cli.nonstandard"))
    print(text.message("cli.wrote", {"path": str(path)}))


def summary(result: Any) -> None:
    """The greedy path, the fastest stacks within each budget and the wall time."""
    data = result.to_dict() if hasattr(result, "to_dict") else result
    text = _text()
    rows = {r["id"]: r for r in data["rows"]}
    s = data["settings"]

    def shown(r: dict[str, Any], key: str) -> str:
        v, ci = r["values"].get(key), r.get("intervals", {}).get(key)
        if v is None:
            return "—"
        return f"{v:.3g}" + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")

    print(text.message("cli.greedy"))
    for i, k in enumerate(s["greedy"], 1):
        r = rows[k]
        print(
            f"  {i}. {names(r['config']['members'], text)}: {shown(r, 'speedup')}x, "
            f"FDD x{shown(r, 'fd_ratio')}, I {shown(r, 'interaction')}"
        )
    for budget in s["budgets"]:
        fits = [
            r
            for r in rows.values()
            if r["config"].get("size", 0) >= 2 and r["values"]["fd_ratio"] <= budget
        ]
        best = max(fits, key=lambda r: r["values"]["speedup"], default=None)
        if best is None:
            print(text.message("cli.none-within", {"budget": budget}))
            continue
        lo, hi = best["intervals"]["speedup"]
        print(
            text.message(
                "cli.fastest-within",
                {
                    "budget": budget,
                    "members": names(best["config"]["members"], text),
                    "speedup": best["values"]["speedup"],
                    "lo": lo,
                    "hi": hi,
                },
            )
        )
    print(text.message("cli.wall", {"minutes": s["wall_s"] / 60.0}))


def run(argv: Sequence[str] | None = None) -> int:
    """Parse, plan, run and report; returns the exit code (raises SystemExit on usage errors)."""
    from reference.harness import cli as harness

    from . import bench
    from .provenance import STACKING, amend, check_stacking

    p_args = _parser(harness, bench, STACKING).parse_args(argv)
    _check_threads(p_args.threads)
    if p_args.list:
        print_matrix()
        return 0
    if p_args.check:
        lines = check_stacking()
        for line in lines:
            print(line)
        print(f"stacking: 1 result checked, {len(lines)} problem(s)")
        return 1 if lines else 0
    overrides = {
        o.name: getattr(p_args, o.name)
        for o in bench.OPTIONS
        if getattr(p_args, o.name) is not None
    }
    try:
        p = harness.plan(
            STACKING,
            bench,
            run_bench=p_args.bench,
            quick=p_args.quick,
            threads=p_args.threads,
            out=p_args.out,
            overrides=overrides,
        )
    except harness.UsageError as exc:
        _fail(str(exc), 2)
    if p.mode == "demo":
        import torch

        torch.set_num_threads(p.threads)
        bench.demo(p.cfg, p.out)
        return 0
    result, path = harness.run_benchmark(p)
    result.provenance = amend(result.provenance, result.measurement.settings["element_slugs"])
    from reference.harness.results import write_result

    path = write_result(result, Path(p.out))
    report(result, path)
    summary(result)
    return 0


def _check_threads(threads: int | None) -> None:
    """``--threads`` within what the machine offers (OpenBLAS crashes far above it)."""
    import os

    cores = os.cpu_count() or 1
    if threads is not None and not 1 <= threads <= cores:
        _fail(f"--threads must be in 1..{cores} (this machine's cores), got {threads}", 2)


def _parser(harness: Any, bench: Any, technique: Any) -> Any:
    p = harness.parser(technique, bench)
    p.error = lambda message: _fail(message, 2)  # one line, not argparse's usage block
    text = _text()
    p.add_argument("--list", action="store_true", help=text.message("cli.list"))
    p.add_argument("--check", action="store_true", help=text.message("cli.check"))
    return p


def _fail(message: str, code: int) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point of ``python -m reference.stacking``."""
    from reference.harness.cli import BusyMachine, quiet_threads

    quiet_threads()
    try:
        code = run(argv)
        sys.stdout.flush()
    except BrokenPipeError:  # ``--list | head``: the reader has gone, which is not an error
        from reference.harness.entry import _quiet_stdout

        _quiet_stdout()
        raise SystemExit(0) from None
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except (ValueError, KeyError) as exc:
        from .elements import IncompatibleStack

        if isinstance(exc, IncompatibleStack):
            a, b = exc.pair
            _fail(f"--stack: {a} and {b} do not stack: {exc}", 2)
        raise
    except Exception as exc:
        from reference.zoo import ZooError

        if isinstance(exc, ZooError | OSError | BusyMachine):
            _fail(str(exc), 1)
        raise
    raise SystemExit(code)
