"""``python -m reference.baseline_sanity``: run or check the study.

See `reference.harness.study`.
"""

from reference.harness.study import STUDIES, main

STUDY = next(s for s in STUDIES if s.slug == "baseline-sanity")

if __name__ == "__main__":
    raise SystemExit(main(STUDY))
