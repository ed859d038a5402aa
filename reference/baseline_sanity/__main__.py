"""``python -m reference.baseline_sanity``: run the study on the technique command line
(`reference.harness.studyentry`), or check its committed result (``--check``,
`reference.harness.study`)."""

import sys

from reference.harness.study import STUDIES, main
from reference.harness.studyentry import run

STUDY = next(s for s in STUDIES if s.slug == "baseline-sanity")

if __name__ == "__main__":
    raise SystemExit(main(STUDY) if "--check" in sys.argv[1:] else run(STUDY))
