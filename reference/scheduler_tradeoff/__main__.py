"""``python -m reference.scheduler_tradeoff``: the shared technique command line (``--help``)."""

from reference.harness.cli import main

main(__package__)
