"""``python -m reference.scheduler_tradeoff``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
