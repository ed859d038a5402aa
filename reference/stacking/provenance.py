"""What ``stacking.json`` was made from, and its check (torch-free, like the harness's).

The study runs the code of every member technique, so its result records more than a technique's:
every file under ``reference/`` the run imported or opened (the stacking package, the members'
modules and ``reference/compatibility.py`` among them), as the technique command line records for
any result. `check_stacking` recomputes the digest of every recorded file and reports a changed or
removed one with the hint to rerun the study (an added file stales nothing; see
`reference.harness.provenance`), then every figure the result derives.
"""

from __future__ import annotations

from pathlib import Path

from reference.harness.provenance import (
    RESULTS_DIR,
    check_one,
)
from reference.registry import Technique

STACKING = Technique("stacking")
"""The study as a harness technique (not registered: it has no glossary entry of its own)."""
RERUN = "rerun: glossary bench stacking"


def check_stacking(results_dir: Path | None = None) -> list[str]:
    """Problems of the committed ``stacking.json``, one line each (empty: it still holds).

    `check_one` compares every file the result recorded, so the study's longer list is checked
    like a technique's, and it recomputes the
    study's derived figures (`reference.harness.integrity`: the configurations its settings
    enumerate, its matrices, frontier, headline and aims).
    """
    directory = Path(results_dir) if results_dir is not None else RESULTS_DIR
    return check_one(STACKING, directory)
