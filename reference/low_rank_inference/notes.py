"""The notes of the low-rank result: what the rows mean, in numbers the catalogs quote.

Every note is a message id of this package's catalogs (``locale/``) and the numbers it quotes.
The ``break-even-error`` note also keeps the error-against-rank curves of its two example layers
(``ranks``, ``series`` and one list of errors per series in ``errors``, fractions), the data of
the error-against-rank figure, so that the site draws it again in each reader's language.

    mac_speedup = 1 / kept,  kept = Σ r (in + out) / Σ in · out  (factorised layers)   (1)
    flops       = F_head / F_dense  (per forward; the control's step count follows it)  (2)
    faster      = median T(head) / median T(control)  (the sampling comparison's rounds) (3)
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from reference.harness.compare import Measured
from reference.harness.cost import latency_note
from reference.harness.results import Note, note
from reference.harness.seeds import quality_note

from .measure import CURVE_LAYERS, CURVE_NAMES
from .timed import LAYERS_AIM


def break_even_note(dit: Any, curves: dict[str, Any]) -> Note:
    """Each example layer's break-even rank and its relative output error there (percent, per
    method), with the whole curves."""
    from .factorize import break_even_rank

    quoted: dict[str, float] = {}
    for short, name in zip(CURVE_NAMES, CURVE_LAYERS, strict=True):
        r = break_even_rank(dit.get_submodule(name))
        quoted[f"{short}_rank"] = r
        for method in ("svd", "asvd"):
            errors = curves["errors"][curves["series"].index(f"{short}-{method}")]
            quoted[f"{short}_{method}"] = 100 * errors[r - 1]
    return note("break-even-error", **quoted, **curves)


def result_notes(cfg: Any, run: SimpleNamespace, m: Measured, lay: Measured) -> list[Note]:
    """The notes of the sampling comparison ``m`` and the layers-only comparison ``lay``."""
    rows = {r.id: r.values for r in m.rows}
    head, dense = rows[run.head.key], rows["dense"]
    layer_speed = {r.id: r.values["speedup"] for r in lay.rows}[f"layers-{run.head.key}"]
    mac_speedup = 1 / run.head.kept  # (1)
    if m.latency is None:
        raise ValueError("low-rank notes: the sampling comparison was not timed")
    lora = run.lora
    notes = [
        latency_note(cfg.repeats, cfg.batch_latency),
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        note("same-ode", steps=cfg.steps, solution_steps=cfg.solution_steps),
        note("timed-units", batch=cfg.batch_latency, steps=cfg.steps, layers=len(run.names)),
        note("calibration", calib_n=cfg.calib_n, calib_steps=cfg.calib_steps),
        note(
            "amdahl",
            budget=cfg.headline_budget,
            speedup=head["speedup"],
            limit=dense["gflops"] / head["gflops"],
            layers_speedup=layer_speed,
            mac_speedup=mac_speedup,
        ),
        note(
            "fewer-steps-control",
            steps=cfg.steps,
            control_steps=run.control.steps,
            flops=head["gflops"] / dense["gflops"],  # (2)
            faster=m.latency.speedup_over("control", run.head.key),  # (3)
        ),
        note("full-rank", max_diff=run.full_rank),
        note(
            "lora-merge",
            max_diff=lora.max_diff,
            gflops=lora.gflops["lora-merged"],
            extra=lora.gflops["lora-adapter"] - lora.gflops["lora-dense"],
        ),
        break_even_note(run.dit, run.curves),
    ]
    if layer_speed < LAYERS_AIM:
        notes.append(note("layers-speedup-gap", speedup=layer_speed, mac_speedup=mac_speedup))
    return notes
