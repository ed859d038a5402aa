"""``python -m reference.timestep_distillation``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
