"""``python -m reference.consistency_latent_diffusion``: the shared technique command line."""

from reference.harness.launch import technique

technique(__package__)
