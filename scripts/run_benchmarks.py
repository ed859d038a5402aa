"""Run the reference benchmarks: the same as ``glossary bench`` (see ``--help``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.harness.runner import main

if __name__ == "__main__":
    raise SystemExit(main())
