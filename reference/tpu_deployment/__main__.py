"""``python -m reference.tpu_deployment``: the shared technique command line (``--help``)."""

from reference.harness.entry import main

main(__package__)
