"""``python -m reference.grid_search``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
