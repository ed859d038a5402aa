"""``python -m reference.stochastic_reparameterization``: the shared technique command line."""

from reference.harness.launch import technique

technique(__package__)
