"""``python -m reference.accelerate_method``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
