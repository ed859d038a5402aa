"""``python -m reference.timestep_distillation``: the shared technique command line."""

from reference.harness.cli import main

main(__package__)
