"""``python -m reference.consistency_latent_diffusion``: the shared technique command line."""

from reference.harness.cli import main

main(__package__)
