"""``python -m reference.stacking`` (`reference.stacking.cli.main`).

A SIGINT while the command line's modules load ends in one line and exit 130, like one during a
run (the run's own signal handlers are installed only once those modules have loaded)."""

import sys

try:
    from reference.stacking.cli import main

    code = main()
except KeyboardInterrupt:
    print("python -m reference.stacking: interrupted", file=sys.stderr)
    code = 130

raise SystemExit(code)
