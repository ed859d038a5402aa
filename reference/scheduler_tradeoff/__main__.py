"""``python -m reference.scheduler_tradeoff``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
