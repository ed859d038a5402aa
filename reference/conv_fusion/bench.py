"""Benchmark and demo of [`reference.conv_fusion`][reference.conv_fusion] (the technique contract of
`reference.harness.cli`).

Rows: for the zoo classifier and a toy BatchNorm denoiser at each batch size, eager Conv-BN-ReLU
(baseline), BN folded with the ReLU left as it was and the fx-fused Conv+ReLU (technique); at the
headline batch, torch.compile of the unfused model with and without Inductor freezing (control)
and of the fused one (technique); the zoo teacher U-Net eager (baseline) and with Q/K/V +
GroupNorm-affine fusion (technique), and with every GroupNorm frozen (reference: why GroupNorm
cannot be folded).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from reference.harness.cli import Option, at_least, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Headline,
    Measurement,
    Metric,
    aim,
    metrics,
    note,
    settings_of,
)

from .measure import CompiledRun, run_all
from .rows import compiled_rows, figure, sweep_rows, unet_rows
from .unet import measure_unet


def flag(text: str) -> bool:
    """``yes/no``, ``true/false``, ``1/0`` -> ``bool``."""
    value = text.strip().lower()
    if value in ("yes", "true", "1", "on"):
        return True
    if value in ("no", "false", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected yes or no: {text!r}")


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    batches: tuple[int, ...] = (1, 8, 32, 128)
    headline_batch: int = 32
    width: int = 32
    depth: int = 12
    repeats: int = 50
    warmup: int = 5
    compile: bool = True

    def validate(self) -> None:
        if not self.batches or min(self.batches) < 1:
            raise ValueError(f"--batches must be >= 1, got {list(self.batches)}")
        if self.headline_batch not in self.batches:
            raise ValueError(
                f"--headline-batch {self.headline_batch} is not one of --batches "
                f"{list(self.batches)}"
            )
        at_least(self, width=1, depth=3, repeats=1, warmup=0)


FULL = Config()
QUICK = Config(batches=(1, 8), headline_batch=8, repeats=3, warmup=1, compile=False)
DEMO = Config(batches=(8, 32), headline_batch=32, repeats=10, compile=False)
OPTIONS = (
    Option("batches", int_tuple, "N,N,..."),
    Option("headline_batch"),
    Option("width"),
    Option("depth"),
    Option("repeats"),
    Option("warmup"),
    Option("compile", flag, "yes|no"),
)


def _metrics() -> dict[str, Metric]:
    return metrics(
        "latency_ms",
        "speedup",
        "gflops",
        max_abs_diff=Metric("", "lower"),
        elementwise_mb=Metric("MB", "lower"),
        speedup_limit=Metric("x", "higher"),
        groupnorm_rel_error=Metric("", "lower"),
    )


def _compile_notes(compiled: list[CompiledRun], cfg: Config) -> list:
    if not cfg.compile:
        return [note("compile-skipped")]
    if any(c.status != "ok" for c in compiled):
        return [note("compile-failed")]
    by = {c.network: c.lat for c in compiled}
    params: dict[str, float] = {"batch": cfg.headline_batch}
    for net, short in (("classifier", "c"), ("denoiser", "d")):
        lat = by[net]
        for key, name in (("gain", "compile_fused"), ("freezing", "compile_freezing")):
            lo, hi = lat.speedup_interval(name, against="compile")
            params[f"{short}_{key}"] = lat.speedup_over(name, "compile")
            params[f"{short}_{key}_lo"], params[f"{short}_{key}_hi"] = lo, hi
    return [note("compiled-gain", **params)]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Measure the fusion; write the figure into ``out``."""
    sweep, compiled, oracle = run_all(cfg)
    unet = measure_unet(cfg.headline_batch, cfg)
    head = next(r for r in sweep if r.network == "denoiser" and r.batch == cfg.headline_batch)
    head_ci = head.lat.speedup_interval("fused")
    figures = [Figure("conv-fusion.png", "speedup-vs-batch")]
    figure(sweep, cfg, out / figures[0].file)
    den = [r for r in sweep if r.network == "denoiser"]
    c, d = oracle["classifier"], oracle["denoiser"]
    g = unet.groupnorm
    notes = [
        latency_note(cfg.repeats, cfg.headline_batch),
        note("toy-denoiser", width=cfg.width, depth=cfg.depth),
        note("removed-work"),
        note(
            "exactness",
            fused=max(r.max_diff for r in sweep),
            library=max(max(v.values()) for v in oracle.values()),
            unet=unet.max_diff,
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
        note("unet-qkv", blocks=unet.blocks),
        *_compile_notes(compiled, cfg),
        *[note("denoiser-batch", batch=r.batch, speedup=r.speedup, limit=r.limit) for r in den],
    ]
    if head.speedup < 1.2:
        notes.append(
            note(
                "speedup-gap",
                batch=cfg.headline_batch,
                speedup=head.speedup,
                limit=head.limit,
                removed=100 * head.removed_ms / head.eager_ms,
            )
        )
    rows = [row for r in sweep for row in sweep_rows(r)]
    rows += [row for cr in compiled for row in compiled_rows(cr)]
    rows += unet_rows(unet, cfg.headline_batch)
    return Measurement(
        settings=settings_of(cfg),
        metrics=_metrics(),
        rows=rows,
        headline=Headline(
            f"denoiser-b{cfg.headline_batch}-fused",
            speedup=head.speedup,
            speedup_interval=head_ci,
            speedup_limit=head.limit,
            limit_kind="estimate",
        ),
        aims=[
            aim(
                "speedup",
                head.speedup,
                1.2,
                ">=",
                interval=head_ci,
                row=f"denoiser-b{cfg.headline_batch}-fused",
                against=f"denoiser-b{cfg.headline_batch}-eager",
                batch=cfg.headline_batch,
            )
        ],
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Time eager against fused on both BN networks, check exactness, draw the sweep."""
    sweep, _, oracle = run_all(cfg)
    unet = measure_unet(cfg.headline_batch, cfg)
    print(
        f"{'network':11} {'batch':>5} {'eager ms':>9} {'fold ms':>8} {'fused ms':>9} "
        f"{'speedup':>8} {'limit':>6} {'max|diff|':>9}"
    )
    for r in sweep:
        print(
            f"{r.network:11} {r.batch:5d} {r.eager_ms:9.2f} {r.fold_ms:8.2f} {r.fused_ms:9.2f} "
            f"{r.speedup:7.2f}x {r.limit:5.2f}x {r.max_diff:9.1e}"
        )
    print(
        f"{'U-Net QKV':11} {'':5} {unet.eager_ms:9.2f} {'':8} {unet.fused_ms:9.2f} "
        f"{unet.eager_ms / unet.fused_ms:7.2f}x {'':6} {unet.max_diff:9.1e}"
    )
    g = unet.groupnorm
    print(
        f"GroupNorm frozen on input 1: relative error {g.on_calibration_input:.1e} on input 1, "
        f"{g.on_other_input:.2f} on input 2 (cannot be folded)"
    )
    for k, diffs in oracle.items():
        print(f"{k} against torch: " + ", ".join(f"{n} {v:.1e}" for n, v in diffs.items()))
    path = out / "conv-fusion-demo.png"
    figure(sweep, cfg, path)
    print(f"{path}: measured speedup and its limit against the batch size")
