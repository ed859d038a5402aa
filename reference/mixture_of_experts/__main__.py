"""``python -m reference.mixture_of_experts``: the shared technique command line (``--help``)."""

from reference.harness.cli import main

main(__package__)
