"""``python -m reference.stacking``: the technique command line, plus three reading commands.

The study runs on the technique command line (`reference.harness.entry.run`, with the study
as its target): its options are bounded and checked before
any work, unknown or abbreviated flags are refused, errors are one line (exit 2 for usage, 1 for
a failure, 130 and 143 for SIGINT and SIGTERM), the run stages into a folder named by its
process that every ending removes, and the result is sealed and written atomically; installed
as a package, it writes under the current folder, never into site-packages. Three more
commands read instead of measuring, without torch: ``--list`` prints the compatibility matrix,
``--check`` checks the committed result, ``--summary [--out DIR]`` prints the greedy path and
the fastest stack within each budget of a result (the committed one by default).
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


def names(members: Sequence[str], text: Any, slugs: dict[str, str] | None = None) -> str:
    """The display names of ``members`` joined by `` + ``: each element's glossary term in the
    reader's language, with the study's name of the method after it where it says more (as on
    the site); the study's name alone for an element without an entry (``slugs`` maps an
    element to its entry's slug)."""
    from glossary.resulttext import entry_term, term_with_method

    def one(m: str) -> str:
        slug = (slugs or {}).get(m)
        term = entry_term(slug, text.lang) if slug else None
        return term_with_method(term, text.message(f"element.{m}"))

    return " + ".join(one(m) for m in members)


def summary(result: dict[str, Any]) -> None:
    """How the pairs and stacks fare against their controls, the greedy path, the fastest stack
    within each budget and the wall time."""
    from collections import Counter

    from glossary.resulttext import format_number

    data = result
    text = _text()
    rows = {r["id"]: r for r in data["rows"]}
    s = data["settings"]
    slugs = dict(zip(s.get("elements", []), s.get("element_slugs", []), strict=False))

    def shown(r: dict[str, Any], key: str) -> str:
        v, ci = r["values"].get(key), r.get("intervals", {}).get(key)
        if v is None:
            return "—"
        fmt = lambda x: format_number(x, text.lang)  # noqa: E731 (the reader's decimal mark)
        return fmt(v) + (f" [{fmt(ci[0])}; {fmt(ci[1])}]" if ci else "")

    controls = Counter(a["state"] for a in data["aims"] if a["id"] == "beats-control")
    counts = {state: controls[state] for state in ("met", "missed", "inconclusive")}
    print(text.message("cli.controls", counts))
    print(text.message("cli.greedy"))
    for i, k in enumerate(s["greedy"], 1):
        r = rows[k]
        print(
            f"  {i}. {names(r['config']['members'], text, slugs)}: {shown(r, 'speedup')}x, "
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
                    "members": names(best["config"]["members"], text, slugs),
                    "speedup": best["values"]["speedup"],
                    "lo": lo,
                    "hi": hi,
                },
            )
        )
    print(text.message("cli.wall", {"minutes": s["wall_s"] / 60.0}))


READERS = ("--list", "--check", "--summary")
"""The commands that read instead of measuring (torch-free)."""


def _reader(argv: Sequence[str]) -> Any:
    """The parsed reading command of ``argv`` (one line and exit 2 for a bad one)."""
    import argparse

    p = argparse.ArgumentParser(prog=PROG, allow_abbrev=False, add_help=False)
    one = p.add_mutually_exclusive_group(required=True)
    for flag in READERS:
        one.add_argument(flag, action="store_true")
    p.add_argument("--out", type=Path, default=None, metavar="DIR")
    p.error = lambda message: _fail(message, 2)  # type: ignore[method-assign]
    args = p.parse_args(list(argv))
    if args.out is not None and not args.summary:
        _fail("--out goes with --summary (or with a run)", 2)
    return args


def read(argv: Sequence[str]) -> int:
    """``--list``, ``--check`` or ``--summary``; returns the exit code."""
    from .provenance import RESULTS_DIR, check_stacking

    args = _reader(argv)
    if args.list:
        print_matrix()
        return 0
    if args.check:
        lines = check_stacking()
        for line in lines:
            print(line)
        print(f"stacking: 1 result checked, {len(lines)} problem(s)")
        return 1 if lines else 0
    path = (args.out or RESULTS_DIR) / "stacking.json"
    if not path.is_file():
        _fail(f"{path}: no stacking result there; run: glossary bench stacking", 1)
    from reference.harness.integrity import read_checked

    data, problems = read_checked(path)
    if data is None or problems:
        _fail(problems[0], 1)
    summary(data)
    return 0


def _fail(message: str, code: int) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reference.stacking``: a reading command, or the study on the technique
    command line; returns the exit code."""
    from reference.harness import entry

    from .provenance import STACKING

    args = list(sys.argv[1:] if argv is None else argv)
    if not any(a in READERS for a in args):
        return entry.run(entry.Target(STACKING.slug, STACKING.package, STACKING), args)
    try:
        code = read(args)
        sys.stdout.flush()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BrokenPipeError:  # ``--list | head``: the reader has gone, which is not an error
        from reference.harness.entry import quiet_stdout

        quiet_stdout()
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return code
