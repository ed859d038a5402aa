"""``python -m reference.grid_search``: the shared technique command line (``--help``)."""

from reference.harness.launch import technique

technique(__package__)
