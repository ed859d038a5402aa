"""``python -m reference.gradient_checkpointing``: the shared command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
