"""``python -m reference.feature_caching``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
