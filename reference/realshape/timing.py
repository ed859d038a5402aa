"""The real-shape study's measurement: the denoising loop, its FLOP count, one group timed in
interleaved rounds, and the rows, rounds and aims that the result keeps.

See `reference.realshape.bench` for equations (1)-(4); the numbers beside the lines below refer
to them.

On a CUDA device a loop ends by waiting for the device (``torch.cuda.synchronize``): kernels are
queued asynchronously, so a host clock read without it would time the queueing, not the work.
In bfloat16, a technique that rewrites weights (low rank's factorisation, pruning's
importance, fusion's folding) is applied to a float32 copy on the model's device and the result
is cast, as a model is prepared once before it is served; hooks and wrappers run on the model as
placed.
"""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from reference.harness.results import Aim, Row, aim

from .variants import COUNTERPARTS, VARIANTS, Around, Variant


def denoising_loop(
    model: nn.Module, inputs: dict[str, Any], steps: int, around: Around | None = None
) -> Callable[[], torch.Tensor]:
    """``steps`` calls of ``model`` from t = 999 down, each output folded into the sample
    (inside ``around(model)`` when a hook needs a fresh state and a context per run).

    The update is a fixed contraction, not a real scheduler step: at these shapes a scheduler
    step costs microseconds against seconds for the network, and a fixed update keeps every
    variant's work identical apart from the technique.
    """
    import contextlib

    key = "sample" if "sample" in inputs else "hidden_states"
    timesteps = torch.linspace(999, 0, steps)
    base = inputs[key]
    channels = base.shape[1]

    def run() -> torch.Tensor:
        x = base.clone()
        with torch.inference_mode(), around(model) if around else contextlib.nullcontext():
            for t in timesteps:
                step_t = inputs["timestep"].new_full(inputs["timestep"].shape, float(t))
                result = model(**{**inputs, key: x, "timestep": step_t})
                # diffusers' TaylorSeer hook on the root module returns its forecast as a bare
                # tensor where the model returns a tuple
                out = result if isinstance(result, torch.Tensor) else result[0]
                x = 0.9 * x + 0.1 * out[:, :channels]
        if x.is_cuda:
            torch.cuda.synchronize(x.device)  # the work, not its queueing
        return x

    return run


def loop_gflops(run: Callable[[], Any]) -> float:
    """GFLOPs of one call of ``run`` (`FlopCounterMode`; skipped network calls count 0)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops() / 1e9


def place(model: nn.Module, cfg: Any) -> nn.Module:
    """``model`` on ``cfg.device`` in ``cfg.dtype``."""
    return _moved(model, device=cfg.device, dtype=getattr(torch, cfg.dtype))


def _moved(model: nn.Module, **where: Any) -> nn.Module:
    # torch's own ``to``: diffusers' ``ModelMixin.to`` warns about modules to keep in float32
    # on every cast, and these classes declare none
    return nn.Module.to(model, **where)


def accelerator(cfg: Any) -> dict[str, str]:
    """The device a CUDA run timed (the provenance names the CPU only): its name and CUDA."""
    if cfg.device != "cuda":
        return {}
    return {"accelerator": torch.cuda.get_device_name(), "cuda": str(torch.version.cuda)}


def loop_inputs(model: nn.Module, cfg: Any) -> dict[str, Any]:
    """The loop's inputs at batch 1 and ``cfg.side``, beside ``model`` (its device and dtype)."""
    from reference.zoo import shapes

    return shapes.example_inputs(model, batch=1, side=cfg.side)


def model_sizes(model_id: str, base: nn.Module, cfg: Any) -> dict[str, float]:
    """The settings' facts of a model: millions of parameters, GFLOPs per step."""
    inputs = loop_inputs(base, cfg)
    key = model_id.replace("-", "_")
    return {
        f"{key}_params_m": sum(p.numel() for p in base.parameters()) / 1e6,
        f"{key}_gflops_per_step": loop_gflops(denoising_loop(base, inputs, 1)),
    }


@dataclass
class Group:
    """One group's rows and, per row id, its raw rounds (``against`` its group's baseline)."""

    rows: list[Row] = field(default_factory=list)
    rounds: dict[str, dict[str, Any]] = field(default_factory=dict)


def _variant_row(
    rid: str, config: dict[str, Any], role: str, lat: Any, flops: dict[str, float], name: str
) -> Row:
    speedup = lat.speedup_over(name, "baseline")  # (1)
    estimate = flops["baseline"] / flops[name] if flops[name] > 0 else None  # (2)
    return Row(
        id=rid,
        config=config,
        role=role,  # type: ignore[arg-type]
        values={
            "latency_ms": lat.median_ms(name),
            "baseline_ms": lat.median_ms("baseline"),
            "speedup": speedup,
            "gflops": flops[name],
            "flop_speedup": estimate,
            "efficiency": speedup / estimate if estimate else None,  # (3)
        },
        intervals={"speedup": lat.speedup_interval(name, against="baseline")},
        spread={"latency_ms": lat.iqr_ms(name)},
    )


def copy_for(base: nn.Module, shares_weights: bool) -> nn.Module:
    """A private copy of ``base``: its own modules, and its own tensors unless ``shares_weights``
    (a hook or a wrapper that never writes a weight)."""
    if not shares_weights:
        return copy.deepcopy(base)
    tensors = [*base.parameters(), *base.buffers()]
    return copy.deepcopy(base, memo={id(t): t for t in tensors})


def applied(variant: Variant, base: nn.Module, inputs: dict[str, Any]) -> nn.Module:
    """``variant`` on a private copy of ``base``; one that rewrites weights, in bfloat16, is
    applied to a float32 copy and then cast back (see the module's docstring)."""
    dtype = next(base.parameters()).dtype
    if variant.shares_weights or dtype == torch.float32:
        return variant.apply(copy_for(base, variant.shares_weights), inputs)
    prepared = variant.apply(_moved(copy_for(base, False), dtype=torch.float32), inputs)
    return _moved(prepared, dtype=dtype)


def _loops(
    base: nn.Module, inputs: dict[str, Any], steps: int, pairs: list[tuple[str, str | None]]
) -> dict[str, Callable[[], Any]]:
    """The loop of the untouched model, then of each technique and its counterpart, each on a
    private copy (compiled ones compile here, outside the clock)."""
    runs = {"baseline": denoising_loop(base, inputs, steps)}
    for technique, counterpart in pairs:
        named = [(technique, VARIANTS[technique])]
        named += [(counterpart, COUNTERPARTS[counterpart])] if counterpart else []
        for name, variant in named:
            runs[name] = denoising_loop(
                applied(variant, base, inputs), inputs, steps, variant.around
            )
            if variant.compiles:
                runs[name]()  # compiles outside the clock; counted FLOPs are the eager ones
    return runs


def time_group(
    cfg: Any, model_id: str, index: int, pairs: list[tuple[str, str | None]], base: nn.Module
) -> Group:
    """Group ``index`` on ``model_id``: the untouched model, each technique of ``pairs`` and its
    counterpart, in the same interleaved rounds."""
    from reference.harness.cost import compare_latency

    inputs = loop_inputs(base, cfg)
    runs = _loops(base, inputs, cfg.steps, pairs)
    flops = {name: loop_gflops(run) for name, run in runs.items()}
    lat = compare_latency(runs, repeats=cfg.repeats, warmup=cfg.warmup, baseline="baseline")
    base_id = f"{model_id}.baseline-{index}"
    group = Group()
    config = {"method": "baseline", "model": model_id, "group": index}
    values = {"latency_ms": lat.median_ms("baseline"), "gflops": flops["baseline"]}
    spread = {"latency_ms": lat.iqr_ms("baseline")}
    group.rows.append(Row(base_id, config, "baseline", values, spread=spread))  # type: ignore[arg-type]
    for technique, counterpart in pairs:
        config = {"method": technique, "model": model_id, "group": index}
        row = _variant_row(f"{model_id}.{technique}", config, "technique", lat, flops, technique)
        group.rows.append(row)
        if counterpart:
            row.values["counterpart_ms"] = lat.median_ms(counterpart)
            row.values["vs_counterpart"] = lat.speedup_over(technique, counterpart)  # (4)
            row.intervals["vs_counterpart"] = lat.speedup_interval(technique, against=counterpart)
            config = {"method": counterpart, "model": model_id, "group": index}
            rid = f"{model_id}.{counterpart}"
            group.rows.append(_variant_row(rid, config, "reference", lat, flops, counterpart))
    names = {"baseline": base_id} | {n: f"{model_id}.{n}" for n in runs if n != "baseline"}
    for name, rid in names.items():
        group.rounds[rid] = {"against": base_id, "latency_ms": lat.stats[name].samples_ms}
    del runs
    gc.collect()
    return group


def counterpart_aims(rows: list[Row], match: float) -> list[Aim]:
    """Per technique with a counterpart: (4) at least ``match``, judged on its interval."""
    out = []
    for row in rows:
        if "vs_counterpart" not in row.values:
            continue
        counterpart = VARIANTS[row.config["method"]].counterpart
        out.append(
            aim(
                f"matches-{counterpart}-on-{row.config['model']}",
                row.values["vs_counterpart"],
                match,
                ">=",
                row.intervals["vs_counterpart"],
                row=row.id,
                against=f"{row.config['model']}.{counterpart}",
            )
        )
    return out
