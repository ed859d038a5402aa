"""``python -m reference.realshape_gpu``: run the accelerator study on the technique command line
(`reference.harness.studyentry`), or check its committed result (``--check``,
`reference.harness.study`)."""

import sys

from reference.harness.study import STUDIES, main
from reference.harness.studyentry import run

STUDY = next(s for s in STUDIES if s.slug == "realshape-gpu")

if __name__ == "__main__":
    raise SystemExit(main(STUDY) if "--check" in sys.argv[1:] else run(STUDY))
