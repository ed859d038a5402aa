"""The notes of the benchmark's result: what its rows mean, in the catalogs' words.

Each note is an id of the package's catalogs (``note.<id>``, or of the shared ``results``
catalog) with the numbers it quotes. ``same-nfe-control`` quotes the forecast against DDIM with
the same network evaluations: the paired fidelity ratio ((1) of the bench module) and the speed
from the same interleaved rounds,

    speed = median T(ddim-same) / median T(newton)                                          (1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference.harness.compare import FIDELITY
from reference.harness.cost import latency_note
from reference.harness.results import note

from .config import BASELINE_STEPS

if TYPE_CHECKING:
    from reference.harness.compare import Measured

    from .config import Config


def notes(cfg: Config, m: Measured, more: list[Measured]) -> list[Any]:
    """The result's notes, in the order the page shows them."""
    from reference.harness import quality_note

    assert m.latency is not None  # the baseline, the forecast and its controls are timed
    k, full = cfg.interval, int(m.table.summary("newton", "nfe").value)
    vs = m.table.ratio("newton", "ddim-same", FIDELITY)
    lo, hi = m.latency.speedup_interval("newton", against="ddim-same")
    out = [
        note("setup", steps=BASELINE_STEPS, n=cfg.n_quality, solution_steps=cfg.solution_steps),
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        note(
            "schedule",
            warmup=cfg.forecast_warmup,
            k=k,
            full=full,
            steps=BASELINE_STEPS,
            limit=limit(m),
        ),
        latency_note(cfg.repeats, cfg.batch_latency),
        note(
            "same-nfe-control",
            full=full,
            ratio=vs.value,
            lo=vs.interval[0],
            hi=vs.interval[1],
            speed=m.latency.speedup_over("newton", "ddim-same"),  # (1)
            speed_lo=lo,
            speed_hi=hi,
        ),
    ]
    if more:
        out.append(note("dit-hook"))
    if next(a for a in m.aims if a.id == "beats-same-nfe").state == "missed":
        out.append(note("forecast-loses", k=k, ratio=vs.value, full=full))
    return out


def limit(m: Measured) -> float:
    """(5) of the bench module: the baseline's network evaluations over the headline forecast's,
    both counted in the run (of the U-Net's comparison or of the DiT's)."""
    c = m.comparison
    return m.table.summary(c.baseline, "nfe").value / m.table.summary(c.headline.row, "nfe").value
