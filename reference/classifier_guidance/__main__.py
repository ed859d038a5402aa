"""``python -m reference.classifier_guidance``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
