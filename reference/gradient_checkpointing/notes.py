"""The notes of the benchmark's result: what the rows mean, in numbers the catalogs quote.

Every note is a message id of this package's catalogs (``locale/``) and the numbers it quotes;
the ``chain-law`` note also keeps the chain study's memory per length ``n`` (``ns``, and one
list per policy in ``retained`` and ``peak``, in units of one block input), the data of the
chain figure, so that the site can draw it again in each language.

    step-time ratio  1 / s, s = median T(none) / median T(row) the row's speed     (1)
    growth           p in M(n) ~ n^p, least squares on log-log axes                 (2)

A memory technique's speed ``s`` (the harness's "speedup") is below 1; the ``step-time`` note
says so in words, the ``control`` note quotes the micro-batch control's step-time ratio (1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from reference.harness.compare import Measured
from reference.harness.cost import latency_note
from reference.harness.results import Note, note

from .measure import MB, ChainCurves, growth
from .policies import even_segments, sqrt_segments, unet_stages

TECHNIQUES = ("module", "stage", "sqrt")


@dataclass
class Study:
    """What the notes need beside the rows: the FLOPs per row, the peak RSS of the probed rows
    (empty when not measured) and the chain study."""

    flops: dict[str, int]
    rss: dict[str, float]
    chain: ChainCurves


def chain_note(curves: ChainCurves) -> Note:
    """The growth exponents (2) of the chain's retained and peak memory, and the curves."""
    return note(
        "chain-law",
        plain=growth(curves.saved["none"], curves.ns),  # (2)
        per_block=growth(curves.saved["per-block"], curves.ns),
        sqrt=growth(curves.saved["sqrt"], curves.ns),
        peak_sqrt=growth(curves.peak["sqrt"], curves.ns),
        ns=list(curves.ns),
        series=list(curves.saved),
        retained=[list(v) for v in curves.saved.values()],
        peak=[list(curves.peak[k]) for k in curves.saved],
    )


def _peak_note(unet: torch.nn.Module, v: dict[str, dict[str, Any]], headline: str) -> Note:
    stages = [name for name, _ in unet_stages(unet)]
    last = even_segments(len(stages), sqrt_segments(len(stages)))[-1]
    h, base = v[headline], v["none"]
    best = min(TECHNIQUES, key=lambda k: v[k]["peak_activation_mb"])
    return note(
        "retained-not-peak",
        retained=h["activation_mb"],
        gain=base["activation_mb"] / h["activation_mb"],
        peak=h["peak_activation_mb"],
        peak_gain=base["peak_activation_mb"] / h["peak_activation_mb"],
        first=stages[last[0]],
        last=stages[last[-1]],
        best=best,
        best_peak=v[best]["peak_activation_mb"],
    )


def result_notes(
    unet: torch.nn.Module, cfg: Any, m: Measured, study: Study, headline: str
) -> list[Note]:
    """The notes of a measured comparison ``m`` and its ``study`` (FLOPs, RSS, chain)."""
    v = {r.id: r.values for r in m.rows}
    base, accum = v["none"], v["accum"]
    lat = m.latency
    assert lat is not None, "every row is timed"
    notes = [
        note(
            "setup",
            batch=cfg.batch,
            params_mb=sum(p.numel() for p in unet.parameters()) * 4 / MB,
            retained=base["activation_mb"],
        ),
        note(
            "gradients-equal",
            diff=max(v[k]["grad_max_abs_diff"] for k in ("diffusers", *TECHNIQUES)),
            accum_diff=accum["grad_max_abs_diff"],
        ),
        _peak_note(unet, v, headline),
        note(
            "step-time",
            iqr=100 * lat.iqr_ms("none") / lat.median_ms("none"),
            flop_ratio=study.flops[headline] / study.flops["none"],
        ),
        note(
            "control",
            k=cfg.microbatches,
            gain=base["activation_mb"] / accum["activation_mb"],
            ratio=1 / accum["speedup"],  # (1)
        ),
        chain_note(study.chain),
        note("positional-tensors"),
        latency_note(cfg.repeats, cfg.batch),
    ]
    if study.rss:
        keys = ("idle", "none", "module", "sqrt", "accum")
        notes.append(note("peak-rss", **{k: study.rss[k] for k in keys}))
    return notes
