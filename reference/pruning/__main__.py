"""``python -m reference.pruning``: the shared technique command line (see ``--help``)."""

from reference.harness.entry import main

main(__package__)
