"""``python -m reference.feature_caching``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
