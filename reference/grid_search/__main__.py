"""``python -m reference.grid_search``: the shared technique command line."""

from reference.harness.cli import main

main(__package__)
