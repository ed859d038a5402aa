"""``python -m reference.stochastic_reparameterization``: the shared technique CLI (``--help``)."""

from reference.harness.entry import main

main(__package__)
