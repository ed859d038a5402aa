"""The committed distilled students, by the number of DDIM steps each was distilled for.

Progressive distillation (Salimans & Ho, 2022, arXiv:2202.00512) halves the step count per
round, so the zoo keeps one student per round (8, 4 and 2 steps); `load_student` reads one back.
Kept apart from the benchmark so that code which only samples with a student (the stacking
study, a user's script) imports neither the benchmark nor its command line.

Pitfall: a student is only valid on the step grid it was distilled for; ``STUDENTS`` maps that
step count to its zoo name, and any other count is refused with the counts that exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .train import PLAN, student_steps

if TYPE_CHECKING:
    import torch

STUDENTS: dict[int, str] = {student_steps(name): name for name in PLAN}
"""Steps a student was distilled for -> its zoo name."""


def load_student(steps: int) -> torch.nn.Module:
    """The committed zoo student distilled for ``steps`` DDIM steps (8, 4 or 2)."""
    from reference import zoo

    if steps not in STUDENTS:
        raise ValueError(f"no student for {steps} steps; distilled students: {sorted(STUDENTS)}")
    return zoo.load(STUDENTS[steps])
