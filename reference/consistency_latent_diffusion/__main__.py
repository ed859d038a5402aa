"""``python -m reference.consistency_latent_diffusion``: the shared technique command line
(``--help``)."""

from reference.harness.entry import main

main(__package__)
