"""``python -m reference.async_pipeline``: the shared technique command line."""

from reference.harness.entry import main

main(__package__)
