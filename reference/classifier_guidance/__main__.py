"""``python -m reference.classifier_guidance``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
