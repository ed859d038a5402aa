"""``python -m reference.async_pipeline``: the shared technique command line."""

from reference.harness.cli import main

main(__package__)
