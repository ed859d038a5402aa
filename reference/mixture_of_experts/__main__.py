"""``python -m reference.mixture_of_experts``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
