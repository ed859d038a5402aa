"""``python -m reference.accelerate_method``: the shared technique command line (``--help``)."""

from reference.harness.cli import main

main(__package__)
