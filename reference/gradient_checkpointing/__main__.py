"""``python -m reference.gradient_checkpointing``: the shared technique CLI (``--help``)."""

from reference.harness.cli import main

main(__package__)
