"""``python -m reference.feature_caching``: the shared technique command line (see ``--help``)."""

from reference.harness.cli import main

main(__package__)
