"""``python -m reference.low_rank_inference``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
