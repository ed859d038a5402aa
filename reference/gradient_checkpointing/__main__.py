"""``python -m reference.gradient_checkpointing``: the shared technique command line."""

from reference.harness.launch import technique

technique(__package__)
