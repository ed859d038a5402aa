"""``python -m reference.realshape``: run or check the study (see `reference.harness.study`)."""

from reference.harness.study import STUDIES, main

STUDY = next(s for s in STUDIES if s.slug == "realshape")

if __name__ == "__main__":
    raise SystemExit(main(STUDY))
