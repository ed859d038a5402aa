"""The two timed-only comparisons of the low-rank benchmark, joined to the sampling comparison
(`reference.harness.compare.outcome`, ``more``).

* **layers**: the factorised layers alone, dense and factorised, each called on the inputs it
  saw in one dense forward (`reference.low_rank_inference.measure.layer_inputs`). A budget ``ρ``
  keeps ``ρ`` of their multiply-adds, so their speedup could reach

      mac_speedup = 1 / ρ                                                            (1)

  if they were compute-bound; the ``layers-speedup`` aim asks for `LAYERS_AIM` of the 2x that
  ρ = 0.5 allows. Whatever they gain, the whole sampling gains at most its share (Amdahl).
* **lora**: one DiT layer dense, with an unmerged rank-r LoRA adapter (``r (in + out)`` more
  multiply-adds per row) and merged (``W + (α/r) B A``: the dense layer's cost exactly), each
  called on the same recorded inputs.

Neither samples: their rows carry latencies and speedups (with raw rounds), no quality.

Pitfall: a LoRA layer call takes about a millisecond, so its rounds are `LORA_ROUNDS` times as
many as the comparison's; the layer rows' ``latency_ms`` is the time of all factorised layers
of one forward, the LoRA rows' the time of one layer: neither is comparable with a sampling.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from reference.harness.compare import Comparison, HeadlineSpec, SpeedupAim, Variant
from reference.harness.results import Metric, metrics

LAYERS_AIM = 1.5
"""The factorised layers alone at least this much faster at the headline budget (of (1)'s 2x
at budget 0.5)."""
LORA_ROUNDS = 5
"""A LoRA layer call is about a millisecond: its comparison takes this many times the rounds."""
LORA_ROLES = {"lora-dense": "baseline", "lora-adapter": "reference", "lora-merged": "reference"}


def _timed_only(
    variants: tuple[Variant, ...],
    head: str,
    aims: tuple[SpeedupAim, ...],
    repeats: int,
    cfg: Any,
    **facts: Metric,
) -> Comparison:
    from reference.harness.scores import held_out_score

    return Comparison(
        variants=variants,
        metrics=metrics("latency_ms", "speedup", **facts),
        score=held_out_score(cfg.n_quality),  # nothing is sampled: never called
        seeds=cfg.seeds,
        aims=aims,
        headline=HeadlineSpec(head),
        repeats=repeats,
        warmup=cfg.warmup,
    )


def layers_config(config: dict[str, Any]) -> dict[str, Any]:
    """A layers-only row's configuration: its model's method and budget, without steps."""
    budget = {"budget": config["budget"]} if "budget" in config else {}
    return {"method": f"{config['method']}-layers", **budget}


def layers(cfg: Any, run: SimpleNamespace, head: str) -> Comparison:
    """The factorised layers alone against the dense ones, on recorded inputs; ``head`` is
    the headline model's key."""
    from .measure import layers_call

    timed = [m for m in run.models if m.role != "control"]  # the control has the dense layers
    variants = tuple(
        Variant(
            f"layers-{m.key}",
            layers_config(m.config),
            m.role,
            timed=layers_call(m.model, run.inputs, run.names),
            facts={"kept": m.kept},
        )
        for m in timed
    )
    row = f"layers-{head}"
    aim = SpeedupAim(
        "layers-speedup", row, "layers-dense", ">=", LAYERS_AIM, {"budget": cfg.headline_budget}
    )
    return _timed_only(variants, row, (aim,), cfg.repeats, cfg, kept=Metric("", "lower"))


def lora(cfg: Any, run: SimpleNamespace) -> Comparison:
    """The dense layer, the unmerged adapter and the merged layer on the same recorded
    inputs."""
    c = run.lora

    def facts(key: str) -> dict[str, float]:
        merged = {"max_abs_diff": c.max_diff} if key == "lora-merged" else {}
        return {"lora_gflops": c.gflops[key], **merged}

    variants = tuple(
        Variant(
            key,
            {"method": key} if key == "lora-dense" else {"method": key, "rank": c.rank},
            LORA_ROLES[key],  # type: ignore[arg-type]
            timed=lambda m=m: m(c.x),
            facts=facts(key),
        )
        for key, m in c.layers.items()
    )
    rounds = max(cfg.repeats, 5) * LORA_ROUNDS
    return _timed_only(
        variants,
        "lora-merged",
        (),
        rounds,
        cfg,
        lora_gflops=Metric("GFLOP", "lower"),
        max_abs_diff=Metric("", "lower"),
    )
