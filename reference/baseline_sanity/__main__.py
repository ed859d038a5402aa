"""``python -m reference.baseline_sanity``: the study on the technique command line, or
``--check`` of its committed result (`reference.harness.study`)."""

from reference.harness.launch import study

study(__package__)
