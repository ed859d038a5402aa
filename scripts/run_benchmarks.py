"""Run the reference benchmarks and the stacking study: the same as ``glossary bench``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from glossary.cli import cmd_bench

if __name__ == "__main__":
    raise SystemExit(cmd_bench(sys.argv[1:]))
