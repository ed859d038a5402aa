"""What the conv-fusion result says beside its measured rows: the estimated limit (3) of
`reference.conv_fusion.measure` added to the rows of each network and batch, the notes, and the
speedup-against-batch figure, all read from the measured comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reference.harness.cost import latency_note
from reference.harness.results import Note, note

from .measure import FIDELITY, NETWORKS, limit

SPEEDUP_AIM = 1.2
"""The aim of the headline's speedup, chosen before measuring (the speedup-gap note explains a
miss)."""
PARTS = ("eager", "fold", "fused")
"""The rows of a network and batch that carry its limit (3)."""


def add_limits(m: Any, keys: Sequence[str]) -> dict[str, float]:
    """Write ``speedup_limit`` (3) into the eager, fold and fused rows of every ``key``
    (``"denoiser-b32"``); return the limits by key."""
    limits = {key: limit(m.latency, key) for key in keys}
    for row in m.rows:
        key, _, part = row.id.rpartition("-")
        if key in limits and part in PARTS:
            row.values["speedup_limit"] = limits[key]
    return limits


def _compile_notes(m: Any, cfg: Any, status: str) -> list[Note]:
    """How much fusion still gives after torch.compile, with and without Inductor freezing,
    as speedups over torch.compile of the unfused network (4)-(5) of the harness."""
    if not cfg.compile:
        return [note("compile-skipped")]
    if status != "ok":
        return [note("compile-failed")]
    lat, params = m.latency, {"batch": cfg.headline_batch}
    for net, short in (("classifier", "c"), ("denoiser", "d")):
        key = f"{net}-b{cfg.headline_batch}"
        for name, part in (("gain", "compile-fused"), ("freezing", "compile-freezing")):
            params[f"{short}_{name}"] = lat.speedup_over(f"{key}-{part}", f"{key}-compile")
            lo, hi = lat.speedup_interval(f"{key}-{part}", against=f"{key}-compile")
            params[f"{short}_{name}_lo"], params[f"{short}_{name}_hi"] = lo, hi
    return [note("compiled-gain", **params)]


def _worst(values: Mapping[str, Mapping[str, Any]], metric: str) -> float:
    """The largest ``metric`` over the technique and control rows (0 for the baselines)."""
    return max((v[metric] for v in values.values() if metric in v), default=0.0)


def notes(cfg: Any, m: Any, limits: Mapping[str, float], extra: Mapping[str, Any]) -> list[Note]:
    """The result's notes; ``extra`` holds the library ``oracle`` differences, each network's
    rounding ``tolerance`` (2), the U-Net's fused ``blocks``, its GroupNorm counter-example
    ``groupnorm`` and the compilation ``status``."""
    values = {r.id: r.values for r in m.rows}
    oracle, tolerance = extra["oracle"], extra["tolerance"]
    c, d, g = oracle["classifier"], oracle["denoiser"], extra["groupnorm"]
    hb = cfg.headline_batch
    head = values[f"denoiser-b{hb}-fused"]
    out = [
        latency_note(cfg.repeats, hb),
        note("toy-denoiser", width=cfg.width, depth=cfg.depth),
        note("removed-work"),
        note(
            "fidelity",
            seeds=len(cfg.seeds),
            worst=_worst(values, FIDELITY),
            worst_abs=_worst(values, "max_abs_diff"),
            tol_c=tolerance["classifier"],
            tol_d=tolerance["denoiser"],
            tol_u=tolerance["unet"],
        ),
        note(
            "library-oracles",
            c_weights=c["weights_vs_fuse_conv_bn_eval"],
            c_ao=c["outputs_vs_fuse_modules"],
            c_original=c["outputs_vs_original"],
            d_weights=d["weights_vs_fuse_conv_bn_eval"],
            d_ao=d["outputs_vs_fuse_modules"],
            d_original=d["outputs_vs_original"],
        ),
        note("groupnorm-freeze", same=g.on_calibration_input, other=g.on_other_input),
        note("unet-qkv", blocks=extra["blocks"]),
        *_compile_notes(m, cfg, extra["status"]),
    ]
    for b in cfg.batches:
        speedup = values[f"denoiser-b{b}-fused"]["speedup"]
        out.append(note("denoiser-batch", batch=b, speedup=speedup, limit=limits[f"denoiser-b{b}"]))
    if head["speedup"] < SPEEDUP_AIM:
        eager = values[f"denoiser-b{hb}-eager"]["latency_ms"]
        removed = (
            values[f"denoiser-b{hb}-elementwise"]["latency_ms"]
            - values[f"denoiser-b{hb}-elementwise-fused"]["latency_ms"]
        )
        gap = {"speedup": head["speedup"], "limit": limits[f"denoiser-b{hb}"]}
        out.append(note("speedup-gap", batch=hb, removed=100 * removed / eager, **gap))
    return out


def figure(m: Any, cfg: Any, path: Path) -> None:
    """Measured speedup of the fused network and its limit (3) against the batch size."""
    from reference.harness import curve_plot

    values = {r.id: r.values for r in m.rows}
    label = {"classifier": "zoo classifier", "denoiser": "toy BN denoiser"}
    series = {}
    for net in NETWORKS:
        fused = [values[f"{net}-b{b}-fused"] for b in cfg.batches]
        series[f"{label[net]}: measured"] = [v["speedup"] for v in fused]
        series[f"{label[net]}: estimate T/(T-T_removed)"] = [v["speedup_limit"] for v in fused]
    curve_plot(
        list(cfg.batches),
        series,
        path,
        xlabel="batch size",
        ylabel="speedup of fused over eager (x)",
        title="Conv-BN-ReLU fusion, 2-core CPU",
        logx=True,
        hlines={"no gain": 1.0},
    )
