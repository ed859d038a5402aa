"""``python -m reference.stacking``: a reading command, or the study on the technique command line
(`reference.stacking.cli.main`)."""

from reference.harness.launch import start

start(__package__, "reference.stacking.cli", "main")
