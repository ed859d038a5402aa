"""``python -m reference.low_rank_inference``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
