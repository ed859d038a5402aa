"""Benchmark and demo of :mod:`reference.classifier_guidance` (the technique contract of
:mod:`reference.harness.cli`).

Rows: the zoo teacher fed the null class (baseline), classifier guidance of that unconditional
model by the noise-aware classifier at every scale (technique), classifier-free guidance on the
same weights at every scale (control) and the plain conditional model, ``w = 1`` (reference); all
at the same DDIM steps from the same noise. The three headline rows also carry the cost of one
denoising step and the NFE their accuracy curve needs to reach the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reference.harness.cli import Option, at_least, float_tuple, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Figure,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)

from .figures import GRID_ROWS, plot_study, save_samples
from .study import Study, first_reaching, measure

SLUG = "classifier-guidance"
METHODS = {
    "uncond": "unguided",
    "cg": "classifier-guidance",
    "cfg": "classifier-free-guidance",
}


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    samples: int = 200
    steps: int = 20
    cg_scales: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
    cfg_scales: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 5.0)
    nfe_grid: tuple[int, ...] = (2, 5, 10, 20, 40)
    target_accuracy: float = 0.9
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 2
    seed: int = 0

    def validate(self) -> None:
        if self.samples < 20:
            raise ValueError(f"--samples must be >= 20 (two per class), got {self.samples}")
        at_least(self, steps=1)
        if not self.nfe_grid or min(self.nfe_grid) < 1:
            raise ValueError(f"--nfe-grid must be >= 1, got {self.nfe_grid}")
        for name, scales, neutral, row in (
            ("--cg-scales", self.cg_scales, 0.0, "the unguided row"),
            ("--cfg-scales", self.cfg_scales, 1.0, "the conditional row"),
        ):
            if any(s < 0 for s in scales):
                raise ValueError(f"{name} must be >= 0, got {scales}")
            if len(set(scales)) != len(scales):
                raise ValueError(f"{name} repeats a scale: {scales}")
            if neutral not in scales:
                raise ValueError(f"{name} must include {neutral:g} ({row}), got {scales}")
            if not any(s > neutral for s in scales):
                raise ValueError(f"{name} needs a scale above {neutral:g}, got {scales}")
        if not 0.0 < self.target_accuracy <= 1.0:
            raise ValueError(f"target accuracy must be in (0, 1], got {self.target_accuracy}")
        at_least(self, latency_batch=1, repeats=1)
        if self.warmup < 0:
            raise ValueError(f"warm-up rounds must be >= 0, got {self.warmup}")


FULL = Config()
QUICK = Config(
    samples=20,
    steps=2,
    cg_scales=(0.0, 2.0),
    cfg_scales=(1.0, 2.0),
    nfe_grid=(1, 2),
    latency_batch=2,
    repeats=2,
    warmup=0,
)
DEMO = Config(
    samples=60,
    steps=10,
    cg_scales=(0.0, 1.0, 4.0),
    cfg_scales=(1.0, 3.0),
    nfe_grid=(5, 10),
    repeats=3,
    warmup=1,
)
OPTIONS = (
    Option("samples"),
    Option("steps"),
    Option("cg_scales", float_tuple, "X,X,..."),
    Option("cfg_scales", float_tuple, "X,X,..."),
    Option("nfe_grid", int_tuple, "N,N,..."),
    Option("latency_batch"),
    Option("repeats"),
)


def row_id(method: str, scale: float) -> str:
    """``uncond``, ``cg-2``, ``cfg-1.5``: the row of a method at the main steps."""
    return "uncond" if method == "uncond" else f"{method}-{scale:g}"


def _rows(study: Study, cfg: Config) -> list[Row]:
    k, lat = cfg.steps, study.lat
    heads = {
        "uncond": ("uncond", 0.0),
        "cg": ("cg", study.cg_scale),
        "cfg": ("cfg", study.cfg_scale),
    }
    timed = {row_id(*mk): name for name, mk in heads.items()}
    curves = {("cg", study.cg_scale), ("cfg", study.cfg_scale), ("cfg", 1.0)}
    keys = [("uncond", 0.0)] + [("cg", s) for s in cfg.cg_scales]
    keys += [("cfg", w) for w in cfg.cfg_scales]
    rows = []
    for method, scale in keys:
        rid = row_id(method, scale)
        config: dict[str, object] = {"method": METHODS[method], "scale": scale, "steps": k}
        if method == "uncond":
            config = {"method": "unguided", "steps": k}
        elif method == "cfg" and scale == 1.0:
            config["method"] = "conditional"
        role = {"uncond": "baseline", "cg": "technique"}.get(method, "control")
        role = "reference" if config["method"] == "conditional" else role
        values = {"nfe": float(k), **study.results[(method, scale, k)]}
        intervals, spread = {}, {}
        if rid in timed:
            name = timed[rid]
            values |= {
                "step_ms": lat.median_ms(name),
                "speedup": lat.speedup[name],
                "step_gflops": study.flops[name] / 1e9,
            }
            intervals = {"speedup": lat.speedup_interval(name)}
            spread = {"step_ms": lat.iqr_ms(name)}
        if (method, scale) in curves:
            reach = first_reaching(study.curve(method, scale, cfg.nfe_grid), cfg.target_accuracy)
            values["nfe_to_target"] = None if reach is None else float(reach)
        rows.append(Row(rid, config, role, values, intervals=intervals, spread=spread))  # type: ignore[arg-type]
    return rows


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Classifier vs classifier-free guidance on the zoo teacher; figures into ``out``."""
    from reference.harness import fdd_floor, real_diversity

    study = measure(cfg)
    res, lat, flops, k = study.results, study.lat, study.flops, cfg.steps
    s_cg, s_cfg = study.cg_scale, study.cfg_scale
    head = row_id("cg", s_cg)
    acc_cg, fd_cg = res[("cg", s_cg, k)]["accuracy"], res[("cg", s_cg, k)]["fd_digits"]
    q_ratio = fd_cg / res[("uncond", 0.0, k)]["fd_digits"]
    figures = [Figure(f"{SLUG}.png", "scales-and-nfe"), Figure(f"{SLUG}-samples.png", "samples")]
    plot_study(study, cfg, out / figures[0].file)
    save_samples(study, cfg, out / figures[1].file)
    curves = (("cg", s_cg), ("cfg", s_cfg), ("cfg", 1.0))
    notes = [
        note("setup", steps=k, n=cfg.samples, real_diversity=real_diversity()),
        note("fdd-at-n", n=cfg.samples, floor=fdd_floor(cfg.samples)),
        note(
            "headline-scales",
            target=cfg.target_accuracy,
            steps=k,
            cg_scale=s_cg,
            cg_accuracy=acc_cg,
            cfg_scale=s_cfg,
            cfg_accuracy=res[("cfg", s_cfg, k)]["accuracy"],
        ),
        note(
            "step-cost",
            batch=cfg.latency_batch,
            uncond_ms=lat.median_ms("uncond"),
            cg_ms=lat.median_ms("cg"),
            cfg_ms=lat.median_ms("cfg"),
            uncond_mflops=flops["uncond"] / 1e6,
            cg_mflops=flops["cg"] / 1e6,
            cfg_mflops=flops["cfg"] / 1e6,
        ),
        latency_note(cfg.repeats, cfg.latency_batch),
        note("nfe-to-target", target=cfg.target_accuracy, grid=sorted(cfg.nfe_grid)),
    ]
    aims = [
        aim("accuracy", acc_cg, cfg.target_accuracy, ">=", scale=s_cg, steps=k),
        aim("quality", q_ratio, 1.5, "<=", scale=s_cg),
    ]
    grid = sorted(cfg.nfe_grid)
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            nfe_grid=grid,
            accuracy_vs_nfe_rows=[row_id(m, s) for m, s in curves],
            accuracy_vs_nfe=[list(study.curve(m, s, tuple(grid)).values()) for m, s in curves],
        ),
        metrics=metrics(
            "nfe",
            "accuracy",
            "fd_digits",
            "diversity",
            "speedup",
            step_ms=Metric("ms", "lower"),
            step_gflops=Metric("GFLOP", "lower"),
            nfe_to_target=Metric("", "lower"),
        ),
        rows=_rows(study, cfg),
        headline=speedup_headline(
            head,
            lat,
            "cg",
            limit=flops["uncond"] / flops["cg"],
            limit_kind="estimate",
            quality_ratio=q_ratio,
        ),
        aims=aims,
        notes=notes,
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Accuracy, FDD and diversity of every method and scale; ms per step; the figures."""
    study = measure(cfg)
    print(f"{'configuration':40} {'acc':>6} {'FDD':>7} {'div':>6}")
    for (method, scale, steps), q in sorted(study.results.items()):
        acc = "-" if q["accuracy"] is None else f"{q['accuracy']:.2f}"
        name = f"{METHODS[method]} {scale:g}, {steps} steps"
        print(f"{name:40} {acc:>6} {q['fd_digits']:7.2f} {q['diversity']:6.2f}")
    lat = study.lat
    print("ms per step: " + ", ".join(f"{k} {lat.median_ms(k):.1f}" for k in lat.stats))
    print(
        f"headline scales: classifier s={study.cg_scale:g}, classifier-free w={study.cfg_scale:g}"
    )
    fig = plot_study(study, cfg, out / f"{SLUG}-demo.png")
    grid = save_samples(study, cfg, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(GRID_ROWS)})")
