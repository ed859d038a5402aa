"""``python -m reference.realshape_gpu``: run the accelerator study on the technique command line
(`reference.harness.studyentry`), or check its committed result (``--check``,
`reference.harness.study`)."""

import sys

from reference.harness.study import main
from reference.harness.studyentry import run
from reference.registry import Technique

STUDY = Technique("realshape-gpu")
"""Not in `reference.harness.study.STUDIES` yet: every committed study result records that
file, so the accelerator study joins the list at the next harness-wide rerun."""

if __name__ == "__main__":
    raise SystemExit(main(STUDY) if "--check" in sys.argv[1:] else run(STUDY))
