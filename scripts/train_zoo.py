"""Train the reference model zoo (see ``reference/zoo/cli.py`` and ``--help``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.harness.plots import zoo_sample_grid
from reference.zoo.cli import main

if __name__ == "__main__":
    raise SystemExit(main(draw=zoo_sample_grid))
