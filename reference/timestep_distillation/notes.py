"""The notes of the benchmark's result: what each row's numbers mean, in the catalogs' words.

Each note is an id of the package's catalogs (``note.<id>``) with the numbers it quotes; the
words are in es, ru and en under ``locale/``. ``same-architecture`` quotes the headline
student's speed against the teacher on its own timesteps, from the same interleaved rounds:

    same = median T(teacher_h) / median T(student_h)                                      (1)

``distillation-cost`` the CPU seconds of all rounds of distillation against the teacher's own
training, both from the zoo manifest:

    ratio = Σ_rounds train_seconds(student) / train_seconds(teacher)                    (2)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from reference.harness.cost import latency_note
from reference.harness.results import note

from .config import BASELINE, BASELINE_STEPS
from .core import BASE_STEPS, timestep_grid
from .students import STUDENTS
from .train import PLAN

if TYPE_CHECKING:
    from reference.harness.compare import Measured

    from .config import Config


def train_seconds(*names: str) -> float:
    """CPU training seconds of zoo models ``names`` together, from the zoo manifest."""
    from reference import zoo

    return sum(float(zoo.manifest_entry(name)["train_seconds"]) for name in names)


def notes(cfg: Config, m: Measured) -> list[Any]:
    """The result's notes, in the order the page shows them."""
    from reference.harness import ode, quality_note

    h = cfg.headline_steps
    head, control = f"student{h}", f"teacher{h}"
    assert m.latency is not None  # the baseline, students and controls are timed
    same_lo, same_hi = m.latency.speedup_interval(head, against=control)  # the same rounds
    distil, teacher = train_seconds(*PLAN), train_seconds("teacher")
    return [
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        latency_note(cfg.repeats, cfg.batch_latency),
        note(
            "same-architecture",
            steps=h,
            base_steps=BASELINE_STEPS,
            nfe_ratio=nfe_ratio(m),
            same=m.latency.speedup_over(head, control),  # (1)
            same_lo=same_lo,
            same_hi=same_hi,
        ),
        note(
            "samplers",
            steps=h,
            start=timestep_grid(h)[0],
            trailing_start=int(ode.grid(h)[0]),
            base_steps=BASELINE_STEPS,
            grid_steps=BASE_STEPS,
        ),
        note(
            "distillation-cost",
            base=BASE_STEPS,
            final=min(STUDENTS),
            rounds=int(math.log2(BASE_STEPS // min(STUDENTS))),
            distil=distil,
            teacher=teacher,
            ratio=distil / teacher,  # (2)
        ),
        note("x-space-student"),
    ]


def nfe_ratio(m: Measured) -> float:
    """(3) of the bench module: the counted network evaluations of the baseline over the headline
    student's."""
    head = m.comparison.headline.row
    return m.table.summary(BASELINE, "nfe").value / m.table.summary(head, "nfe").value
