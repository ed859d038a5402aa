"""``python -m reference.timestep_distillation``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
