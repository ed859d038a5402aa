"""``python -m reference.mixture_of_experts``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
