"""``python -m reference.accelerate_method``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
