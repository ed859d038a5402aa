"""``python -m reference.tpu_deployment``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
