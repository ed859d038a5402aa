"""Benchmark and demo of [`reference.classifier_guidance`][reference.classifier_guidance] (the
technique contract of `reference.harness.cli`).

Rows: the zoo teacher fed the null class (baseline), classifier guidance of that unconditional
model by the noise-aware classifier at every scale (technique), classifier-free guidance on the
same weights at every scale (control), classifier-free guidance at the headline scale with the
fewer DDIM steps that cost what classifier guidance costs per sample (the same-cost control), the
plain conditional model, ``w = 1``, and class-balanced real digits (references); all from the
same noise on every paired seed. The timed rows carry the latency of a whole sampling run, its
FLOPs per sample, and the NFE their accuracy curve needs to reach the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reference.harness.cli import Option, at_least, check_seeds, float_tuple, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Aim,
    Figure,
    Measurement,
    Metric,
    Note,
    Row,
    aim,
    metrics,
    note,
    settings_of,
    speedup_headline,
)
from reference.harness.seeds import N_QUALITY, SEEDS

from .figures import GRID_ROWS, plot_study, save_samples
from .study import Key, Study, first_reaching, measure, table_key

SLUG = "classifier-guidance"
METHODS = {
    "uncond": "unguided",
    "cg": "classifier-guidance",
    "cfg": "classifier-free-guidance",
}


@dataclass(frozen=True)
class Config:
    """Sizes of a benchmark or demonstration run."""

    samples: int = N_QUALITY
    seeds: tuple[int, ...] = SEEDS
    steps: int = 20
    cg_scales: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0)
    cfg_scales: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0)
    nfe_grid: tuple[int, ...] = (2, 5, 10, 20)
    target_accuracy: float = 0.9
    latency_batch: int = 32
    repeats: int = 15
    warmup: int = 2

    def validate(self) -> None:
        if self.samples < 20:
            raise ValueError(f"--samples must be >= 20 (two per class), got {self.samples}")
        check_seeds(self.seeds)
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
    seeds=(0, 1),
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
    seeds=(0, 1),
    steps=10,
    cg_scales=(0.0, 1.0, 4.0),
    cfg_scales=(1.0, 3.0),
    nfe_grid=(5, 10),
    repeats=3,
    warmup=1,
)
OPTIONS = (
    Option("samples"),
    Option("seeds", int_tuple, "S,S,..."),
    Option("steps"),
    Option("cg_scales", float_tuple, "X,X,..."),
    Option("cfg_scales", float_tuple, "X,X,..."),
    Option("nfe_grid", int_tuple, "N,N,..."),
    Option("latency_batch"),
    Option("repeats"),
)
QUALITY_AIM = 1.5
"""Classifier guidance may cost FDD against the unguided sampler, but at most 1.5x."""


def row_id(method: str, scale: float) -> str:
    """``uncond``, ``cg-2``, ``cfg-1.5``: the row of a method at the main steps."""
    return "uncond" if method == "uncond" else f"{method}-{scale:g}"


def _row(study: Study, key: Key, rid: str, config: dict, role: str, cfg: Config) -> Row:
    """A row: per-seed quality of ``key``; latency, speedup and GFLOPs per sample when timed;
    the NFE that reaches the target accuracy on the accuracy-against-NFE curves."""
    method, scale, steps = key
    values, intervals, seeds = study.table.row_fields(table_key(*key))
    values["nfe"] = float(steps)
    spread = {}
    timed = {row_id("uncond", 0.0): "uncond", row_id("cg", study.cg_scale): "cg"}
    timed[row_id("cfg", study.cfg_scale)] = "cfg"
    name = "cfg-matched" if rid == "cfg-matched" else timed.get(rid)
    if name is not None:
        lat, per_step = study.lat, study.flops["cfg" if name == "cfg-matched" else name]
        values |= {
            "latency_ms": lat.median_ms(name),
            "speedup": lat.speedup[name],
            "gflops": per_step * steps / 1e9,
        }
        if name != lat.baseline:
            intervals["speedup"] = lat.speedup_interval(name)
        spread = {"latency_ms": lat.iqr_ms(name)}
    curves = {("cg", study.cg_scale), ("cfg", study.cfg_scale), ("cfg", 1.0)}
    if (method, scale) in curves and steps == cfg.steps:
        reach = first_reaching(study.curve(method, scale, cfg.nfe_grid), cfg.target_accuracy)
        values["nfe_to_target"] = None if reach is None else float(reach)
    return Row(rid, config, role, values, intervals, spread, seeds)  # type: ignore[arg-type]


def _rows(study: Study, cfg: Config) -> list[Row]:
    from reference.harness import real_reference_row

    k = cfg.steps
    keys = [("uncond", 0.0)] + [("cg", s) for s in cfg.cg_scales]
    keys += [("cfg", w) for w in cfg.cfg_scales]
    rows = []
    for method, scale in keys:
        config: dict[str, object] = {"method": METHODS[method], "scale": scale, "steps": k}
        if method == "uncond":
            config = {"method": "unguided", "steps": k}
        elif method == "cfg" and scale == 1.0:
            config["method"] = "conditional"
        role = {"uncond": "baseline", "cg": "technique"}.get(method, "control")
        role = "reference" if config["method"] == "conditional" else role
        rows.append(_row(study, (method, scale, k), row_id(method, scale), config, role, cfg))
    w, m = study.cfg_scale, study.matched
    same = {"method": "cfg-same-cost", "scale": w, "steps": m}
    rows.append(_row(study, ("cfg", w, m), "cfg-matched", same, "control", cfg))
    return [*rows, real_reference_row(cfg.samples)]


def _aims(study: Study, cfg: Config) -> list[Aim]:
    """The headline classifier guidance: its accuracy, its FDD cost against the unguided
    sampler, and its accuracy and FDD against classifier-free guidance at the same FLOPs."""
    k, s, w = cfg.steps, study.cg_scale, study.cfg_scale
    t = study.table
    head, uncond = table_key("cg", s, k), table_key("uncond", 0.0, k)
    control = table_key("cfg", w, study.matched)
    acc = t.summary(head, "accuracy")
    quality = t.ratio(head, uncond, "fd_digits")
    acc_vs = t.difference(head, control, "accuracy")
    fd_vs = t.ratio(head, control, "fd_digits")
    rid = row_id("cg", s)
    same = {"row": rid, "against": "cfg-matched", "scale": s, "cfg_scale": w, "steps": k}
    same["cfg_steps"] = study.matched
    return [
        aim(
            "accuracy",
            acc.value,
            cfg.target_accuracy,
            ">=",
            acc.interval,
            row=rid,
            scale=s,
            steps=k,
        ),
        aim(
            "quality",
            quality.value,
            QUALITY_AIM,
            "<=",
            quality.interval,
            row=rid,
            against="uncond",
            scale=s,
        ),
        aim("accuracy-vs-same-cost", acc_vs.value, 0.0, ">=", interval=acc_vs.interval, **same),
        aim("quality-vs-same-cost", fd_vs.value, 1.0, "<=", interval=fd_vs.interval, **same),
    ]


def _notes(study: Study, cfg: Config) -> list[Note]:
    from reference.harness import quality_note, real_diversity

    k, lat, flops = cfg.steps, study.lat, study.flops
    s_cg, s_cfg = study.cg_scale, study.cfg_scale
    lo, hi = lat.speedup_interval("cg", against="cfg-matched")  # same rounds, control as base
    return [
        note("setup", steps=k, n=cfg.samples, real_diversity=real_diversity()),
        quality_note(cfg.samples, cfg.seeds),
        note(
            "headline-scales",
            target=cfg.target_accuracy,
            steps=k,
            cg_scale=s_cg,
            cg_accuracy=study.mean(("cg", s_cg, k), "accuracy"),
            cfg_scale=s_cfg,
            cfg_accuracy=study.mean(("cfg", s_cfg, k), "accuracy"),
        ),
        note("scales-in-sample", seeds=len(cfg.seeds)),
        note(
            "same-cost",
            steps=k,
            cfg_steps=study.matched,
            uncond_mflops=flops["uncond"] / 1e6,
            cg_mflops=flops["cg"] / 1e6,
            cfg_mflops=flops["cfg"] / 1e6,
            speedup=lat.speedup_over("cg", "cfg-matched"),
            lo=lo,
            hi=hi,
        ),
        latency_note(cfg.repeats, cfg.latency_batch),
        note("nfe-to-target", target=cfg.target_accuracy, grid=sorted(cfg.nfe_grid)),
    ]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Classifier vs classifier-free guidance on the zoo teacher; figures into ``out``."""
    study = measure(cfg)
    k, s_cg = cfg.steps, study.cg_scale
    head = row_id("cg", s_cg)
    q_ratio = study.table.ratio(table_key("cg", s_cg, k), table_key("uncond", 0.0, k), "fd_digits")
    figures = [Figure(f"{SLUG}.png", "scales-and-nfe"), Figure(f"{SLUG}-samples.png", "samples")]
    plot_study(study, cfg, out / figures[0].file)
    save_samples(study, cfg, out / figures[1].file)
    curves = (("cg", s_cg), ("cfg", study.cfg_scale), ("cfg", 1.0))
    grid = sorted(cfg.nfe_grid)
    return Measurement(
        settings=settings_of(
            cfg,
            scheduler="ddim",
            nfe_grid=grid,
            matched_cfg_steps=study.matched,
            accuracy_vs_nfe_rows=[row_id(m, s) for m, s in curves],
            accuracy_vs_nfe=[list(study.curve(m, s, tuple(grid)).values()) for m, s in curves],
        ),
        metrics=metrics(
            "nfe",
            "accuracy",
            "fd_digits",
            "kid_digits",
            "diversity",
            "latency_ms",
            "speedup",
            "gflops",
            nfe_to_target=Metric("", "lower"),
        ),
        rows=_rows(study, cfg),
        headline=speedup_headline(
            head,
            study.lat,
            "cg",
            # FLOPs per sample, unguided over guided: the work done, an estimate of the latency
            limit=study.flops["uncond"] / study.flops["cg"],
            limit_kind="estimate",
            quality_ratio=q_ratio.value,
            quality_interval=q_ratio.interval,
        ),
        aims=_aims(study, cfg),
        notes=_notes(study, cfg),
        figures=figures,
    )


def demo(cfg: Config, out: Path) -> None:
    """Accuracy, FDD and diversity of every method and scale (means over the seeds); the
    latency of whole sampling runs; the figures."""
    study = measure(cfg)
    print(f"{'configuration':40} {'acc':>6} {'FDD':>7} {'div':>6}")
    for key in sorted(study.table.values):
        means = {m: study.table.summary(key, m).value for m in study.table.values[key]}
        acc = "-" if "accuracy" not in means else f"{means['accuracy']:.2f}"
        print(f"{key:40} {acc:>6} {means['fd_digits']:7.2f} {means['diversity']:6.2f}")
    lat = study.lat
    print("ms per run: " + ", ".join(f"{k} {lat.median_ms(k):.1f}" for k in lat.stats))
    print(
        f"headline scales: classifier s={study.cg_scale:g}, classifier-free w={study.cfg_scale:g}"
        f" (same-cost control: {study.matched} steps)"
    )
    fig = plot_study(study, cfg, out / f"{SLUG}-demo.png")
    grid = save_samples(study, cfg, out / f"{SLUG}-demo-samples.png")
    print(f"{fig}\n{grid} (rows: {', '.join(GRID_ROWS)})")
