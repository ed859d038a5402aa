"""The notes of the benchmark's result: what its rows mean, in the catalogs' words.

Each note is an id of the package's catalogs (``note.<id>``, or of the shared ``results``
catalog) with the numbers it quotes. ``same-cost`` quotes the FLOPs of one step per sample of
each method and the speed of classifier guidance against its same-cost control, from the same
interleaved rounds:

    same = median T(cfg-matched) / median T(cg-s)                                          (1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference.harness.cost import latency_note
from reference.harness.results import note

from .config import BASELINE_STEPS

if TYPE_CHECKING:
    from reference.harness.compare import Measured

    from .config import Config


def notes(cfg: Config, m: Measured, flops: dict[str, float], matched: int) -> list[Any]:
    """The result's notes, in the order the page shows them."""
    from reference.harness import quality_note
    from reference.harness.quality import real_diversity

    head = m.comparison.headline.row
    assert m.latency is not None  # the baseline, the headline and its controls are timed
    lo, hi = m.latency.speedup_interval(head, against="cfg-matched")  # the same rounds
    return [
        note("setup", steps=BASELINE_STEPS, n=cfg.n_quality, real_diversity=real_diversity()),
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        latency_note(cfg.repeats, cfg.batch_latency),
        note("headline-scales", cg_scale=cfg.cg_scale, cfg_scale=cfg.cfg_scale),
        note(
            "same-cost",
            steps=BASELINE_STEPS,
            cfg_steps=matched,
            uncond_mflops=flops["uncond"] / 1e6,
            cg_mflops=flops["cg"] / 1e6,
            cfg_mflops=flops["cfg"] / 1e6,
            speedup=m.latency.speedup_over(head, "cfg-matched"),  # (1)
            lo=lo,
            hi=hi,
        ),
        note("nfe-curves", grid=sorted(cfg.nfe_grid), steps=BASELINE_STEPS),
    ]
