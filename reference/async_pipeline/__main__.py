"""``python -m reference.async_pipeline``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
