"""``python -m reference.classifier_guidance``: the shared technique command line (``--help``)."""

from reference.harness.cli import main

main(__package__)
