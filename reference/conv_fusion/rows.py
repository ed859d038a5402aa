"""The rows and the figure of the conv-fusion result, built from the measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference.harness.results import Row

from .measure import NETWORKS, CompiledRun, NetworkRun
from .unet import UNetRun

COMPILED = ("compile", "compile-fused", "compile-freezing")


def sweep_rows(r: NetworkRun) -> list[Row]:
    key, common = f"{r.network}-b{r.batch}", {"gflops": r.gflops, "speedup_limit": r.limit}
    out = [
        Row(
            f"{key}-eager",
            {"method": f"{r.network}-eager", "batch": r.batch},
            "baseline",
            {
                "latency_ms": r.eager_ms,
                "speedup": 1.0,
                "max_abs_diff": 0.0,
                "elementwise_mb": r.traffic.before_bytes / 1e6,
                **common,
            },
            spread={"latency_ms": r.eager_iqr},
        )
    ]
    for part, ms, iqr, diff in (
        ("fold", r.fold_ms, r.fold_iqr, None),
        ("fused", r.fused_ms, r.fused_iqr, r.max_diff),
    ):
        values = {
            "latency_ms": ms,
            "speedup": r.eager_ms / ms,
            "max_abs_diff": diff,
            "elementwise_mb": r.traffic.after_bytes / 1e6,
            **common,
        }
        out.append(
            Row(
                f"{key}-{part}",
                {"method": f"{r.network}-{part}", "batch": r.batch},
                "technique",
                values,
                intervals={"speedup": r.lat.speedup_interval(part)},
                spread={"latency_ms": iqr},
            )
        )
    return out


def compiled_rows(c: CompiledRun) -> list[Row]:
    base, out = c.stats["eager"][0], []
    for part, stat in zip(COMPILED, ("compile", "compile_fused", "compile_freezing"), strict=True):
        if stat not in c.stats:
            continue
        ms, iqr = c.stats[stat]
        out.append(
            Row(
                f"{c.network}-b{c.batch}-{part}",
                {"method": f"{c.network}-{part}", "batch": c.batch},
                "technique" if part == "compile-fused" else "control",
                {"latency_ms": ms, "speedup": base / ms, "max_abs_diff": c.diffs[stat]},
                intervals={"speedup": c.lat.speedup_interval(stat)},
                spread={"latency_ms": iqr},
            )
        )
    return out


def unet_rows(u: UNetRun, batch: int) -> list[Row]:
    g = u.groupnorm
    return [
        Row(
            "unet-eager",
            {"method": "unet-eager", "batch": batch},
            "baseline",
            {"latency_ms": u.eager_ms, "speedup": 1.0, "max_abs_diff": 0.0},
            spread={"latency_ms": u.eager_iqr},
        ),
        Row(
            "unet-fused",
            {"method": "unet-fused", "blocks": u.blocks, "batch": batch},
            "technique",
            {
                "latency_ms": u.fused_ms,
                "speedup": u.eager_ms / u.fused_ms,
                "max_abs_diff": u.max_diff,
            },
            intervals={"speedup": u.lat.speedup_interval("fused")},
            spread={"latency_ms": u.fused_iqr},
        ),
        Row(
            "unet-gn-frozen-same",
            {"method": "unet-gn-frozen-same", "t": 50},
            "reference",
            {"groupnorm_rel_error": g.on_calibration_input},
        ),
        Row(
            "unet-gn-frozen-other",
            {"method": "unet-gn-frozen-other", "t_calib": 50, "t": 900},
            "reference",
            {"groupnorm_rel_error": g.on_other_input},
        ),
    ]


def figure(sweep: list[NetworkRun], cfg: Any, path: Path) -> None:
    from reference.harness import curve_plot

    label = {"classifier": "zoo classifier", "denoiser": "toy BN denoiser"}
    series = {}
    for net in NETWORKS:
        runs = [r for r in sweep if r.network == net]
        series[f"{label[net]}: measured"] = [r.speedup for r in runs]
        series[f"{label[net]}: estimate T/(T-T_removed)"] = [r.limit for r in runs]
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
