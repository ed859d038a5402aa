"""Benchmark and demo of
[`reference.consistency_latent_diffusion`][reference.consistency_latent_diffusion] (the technique
contract of `reference.harness.cli`).

Rows: the zoo latent teacher with DDIM at 50 steps (baseline), the consistency model at 1, 2 and 4
steps (technique), the latent teacher's DPM-Solver++ at 2 and 4 steps on the same timesteps
(control: the same network calls, so the same cost), and the VAE decode alone and class-balanced
real digits (references). Quality over paired noise seeds (the consistency sampler's re-noising is
seeded by the same seed). Every latency but the decode's includes the VAE decode; ``denoise_ms`` is
the sampler alone. The measuring helpers are shared with
[`reference.timestep_distillation`][reference.timestep_distillation]
([`reference.timestep_distillation.few_step`][reference.timestep_distillation.few_step]).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference.harness.cli import Option, int_tuple
from reference.harness.cost import latency_note
from reference.harness.results import (
    Aim,
    Figure,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
)
from reference.harness.sampling import LATENT_SHAPE, EpsFn
from reference.timestep_distillation import few_step

from .core import sampling_timesteps
from .model import load_consistency_model
from .schedulers import dpm_solver
from .train import ZOO_NAME

SLUG = "consistency-latent-diffusion"
BASELINE_STEPS = 50
CONTROL_AIM = 1.0
"""The consistency model must beat the teacher's DPM-Solver++ at as many steps: ratio below 1."""
QUALITY_TOLERANCE = 1.1
"""The headline step count keeps the FDD of the teacher's DDIM-50 within 10% (paired ratio)."""


@dataclass(frozen=True)
class Config(few_step.Sizes):
    """Sizes of a benchmark or demonstration run, and the step counts it measures."""

    warmup: int = 2
    cm_steps: tuple[int, ...] = (1, 2, 4)
    control_steps: tuple[int, ...] = (2, 4)
    headline_steps: int = 2

    def validate(self) -> None:
        super().validate()
        for name in ("cm_steps", "control_steps"):
            steps = getattr(self, name)
            if not steps or any(not 1 <= s <= 49 for s in steps):
                raise ValueError(f"--{name.replace('_', '-')} must be in [1, 49], got {steps}")
        if self.headline_steps not in self.cm_steps:
            raise ValueError(
                f"--headline-steps {self.headline_steps} is not one of --cm-steps {self.cm_steps}"
            )


FULL = Config()
QUICK = Config(
    n=20, seeds=(0, 1), latency_batch=4, repeats=2, warmup=0, cm_steps=(2,), control_steps=(2,)
)
DEMO = Config(
    n=100, seeds=(0, 1), latency_batch=8, repeats=2, warmup=1, cm_steps=(2,), control_steps=(2,)
)
OPTIONS = (
    *few_step.SIZE_OPTIONS,
    Option("cm_steps", int_tuple, "N,N,..."),
    Option("control_steps", int_tuple, "N,N,..."),
    Option("headline_steps"),
)


def make_runs(cfg: Config, teacher: EpsFn, cm: EpsFn) -> few_step.MakeRuns:
    """``(noise, labels, seed, wrap) -> {key: () -> latents}``: DDIM-50, the consistency model
    (re-noised from a generator seeded by ``seed``, so it is paired too), DPM++."""
    from reference import zoo
    from reference.harness import sample

    from .core import consistency_sample

    acp = zoo.teacher_scheduler().alphas_cumprod

    def runs(noise, labels, seed, wrap) -> few_step.Runs:  # type: ignore[no-untyped-def]
        base = wrap("ddim50", teacher)
        out: few_step.Runs = {
            "ddim50": lambda: sample(
                base,
                zoo.latent_scheduler(),
                noise,
                steps=BASELINE_STEPS,
                labels=labels,
                clamp=False,
            )
        }
        for s in cfg.cm_steps:
            e = wrap(f"cm{s}", cm)
            out[f"cm{s}"] = lambda e=e, s=s: consistency_sample(e, noise, labels, acp, s, seed=seed)
        for s in cfg.control_steps:
            e = wrap(f"dpm{s}", teacher)
            out[f"dpm{s}"] = lambda e=e, s=s: sample(
                e, dpm_solver(s), noise, steps=s, labels=labels, clamp=False
            )
        return out

    return runs


def _models(cfg: Config) -> tuple[Callable[[torch.Tensor], torch.Tensor], EpsFn, EpsFn]:
    from reference import zoo
    from reference.harness import model_eps_fn

    vae = zoo.load_vae()
    teacher, cm = model_eps_fn(zoo.load_latent_teacher()), model_eps_fn(load_consistency_model())
    return (lambda z: zoo.decode_latents(vae, z)), teacher, cm


def _timed(cfg: Config, runs: few_step.MakeRuns, decode) -> dict[str, Callable[[], Any]]:  # type: ignore[no-untyped-def]
    """Each run with its decode, each run alone (``key:denoise``) and the decode alone."""
    denoise = few_step.timed_runs(runs, cfg.latency_batch, cfg.seeds, LATENT_SHAPE)
    z_fixed = denoise["ddim50"]()
    timed: dict[str, Callable[[], Any]] = {k: (lambda f=f: decode(f())) for k, f in denoise.items()}
    timed |= {f"{k}:denoise": f for k, f in denoise.items()}
    timed["decode"] = lambda: decode(z_fixed)
    return timed


def _rows(cfg: Config, s: few_step.Sampled, lat: Any) -> list[Row]:
    from reference.harness import real_reference_row

    spec: dict[str, tuple[dict[str, object], str]] = {
        "ddim50": ({"method": "latent-ddim", "steps": BASELINE_STEPS}, "baseline")
    }
    spec |= {f"cm{n}": ({"method": "consistency", "steps": n}, "technique") for n in cfg.cm_steps}
    spec |= {
        f"dpm{n}": ({"method": "dpm-solver-pp", "steps": n}, "control") for n in cfg.control_steps
    }
    rows = [
        few_step.row(
            key,
            config,
            role,
            s,
            lat,
            values={"denoise_ms": lat.median_ms(f"{key}:denoise")},
            spread={"denoise_ms": lat.iqr_ms(f"{key}:denoise")},
        )
        for key, (config, role) in spec.items()
    ]
    decode = {"latency_ms": lat.median_ms("decode"), "nfe": 0.0}
    spread = {"latency_ms": lat.iqr_ms("decode")}
    decode_row = Row("decode", {"method": "vae-decode"}, "reference", decode, spread=spread)
    return [*rows, decode_row, real_reference_row(cfg.n)]


def _flops(cfg: Config, teacher: EpsFn, decode) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """FLOPs per sample of one network call (the consistency model has the teacher's U-Net) and
    of one VAE decode (``torch.utils.flop_counter``: matrix multiplications and convolutions)."""
    from reference.harness import class_labels, count_flops, make_noise

    b = cfg.latency_batch
    z, y = make_noise(b, 0, LATENT_SHAPE), class_labels(b)
    t = torch.full((b,), 500, dtype=torch.long)
    with torch.inference_mode():
        return count_flops(teacher, z, t, y) / b, count_flops(decode, z) / b


def _aims(cfg: Config, s: few_step.Sampled) -> list[Aim]:
    """The consistency model against the teacher's DPM-Solver++ at as many steps (the claim of
    the technique), and the headline step count against the teacher's DDIM-50 (a tolerance)."""
    aims = []
    for n in sorted(set(cfg.cm_steps) & set(cfg.control_steps)):
        r = s.table.ratio(f"cm{n}", f"dpm{n}", "fd_digits")
        aims.append(
            aim(
                "beats-control",
                r.value,
                CONTROL_AIM,
                "<",
                interval=r.interval,
                row=f"cm{n}",
                against=f"dpm{n}",
                steps=n,
            )
        )
    h = cfg.headline_steps
    r = s.table.ratio(f"cm{h}", "ddim50", "fd_digits")
    aims.append(
        aim(
            "quality",
            r.value,
            QUALITY_TOLERANCE,
            "<=",
            interval=r.interval,
            row=f"cm{h}",
            against="ddim50",
            steps=h,
            base_steps=BASELINE_STEPS,
        )
    )
    return aims


def _figures(cfg: Config, s: few_step.Sampled, out: Path) -> list[Figure]:
    from reference.harness import bar_chart

    figures = [Figure(f"{SLUG}.png", "fdd-bars"), Figure(f"{SLUG}-samples.png", "samples")]
    keys = ["ddim50", *(f"cm{n}" for n in cfg.cm_steps), *(f"dpm{n}" for n in cfg.control_steps)]
    fdd = [s.table.summary(k, "fd_digits") for k in keys]
    bar_chart(
        [f"DDIM {BASELINE_STEPS}", *(f"consistency {n}" for n in cfg.cm_steps)]
        + [f"DPM-Solver++ {n}" for n in cfg.control_steps],
        [q.value for q in fdd],
        out / figures[0].file,
        roles=["baseline"]
        + ["technique"] * len(cfg.cm_steps)
        + ["control"] * len(cfg.control_steps),
        errors=[(q.interval[1] - q.interval[0]) / 2 for q in fdd],
        ylabel=f"FDD, mean over {len(cfg.seeds)} seeds with 95% interval (lower is better)",
    )
    h = cfg.headline_steps
    grid_keys = ["ddim50", f"cm{h}", *([f"dpm{h}"] if h in cfg.control_steps else [])]
    few_step.save_samples(s.images, grid_keys, out / figures[1].file)
    return figures


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Latent teacher DDIM-50 vs the consistency model at 1/2/4 steps vs DPM-Solver++ at 2/4."""
    from reference.harness import compare_latency, quality_note

    decode, teacher, cm = _models(cfg)
    runs = make_runs(cfg, teacher, cm)
    s = few_step.sample_seeds(runs, cfg.n, cfg.seeds, LATENT_SHAPE, decode)
    with torch.inference_mode():
        lat = compare_latency(_timed(cfg, runs, decode), repeats=cfg.repeats, warmup=cfg.warmup)

    h = cfg.headline_steps
    head = f"cm{h}"
    nfe_ratio = s.nfe["ddim50"] / s.nfe[head]  # counted network calls: the work done
    unet_flops, decode_flops = _flops(cfg, teacher, decode)
    lo, hi = lat.speedup_interval(f"{head}:denoise", against="ddim50:denoise")  # same rounds
    notes = [
        quality_note(cfg.n, cfg.seeds),
        latency_note(cfg.repeats, cfg.latency_batch),
        note("limits", steps=h, base_steps=BASELINE_STEPS, nfe_ratio=nfe_ratio),
        note(
            "decoder-cost",
            unet_mflops=unet_flops / 1e6,
            decode_mflops=decode_flops / 1e6,
            calls=decode_flops / unet_flops,
            decode_ms=lat.median_ms("decode"),
            batch=cfg.latency_batch,
        ),
        note(
            "denoise-speedup",
            steps=h,
            speedup=lat.speedup_over(f"{head}:denoise", "ddim50:denoise"),
            lo=lo,
            hi=hi,
            nfe_ratio=nfe_ratio,
        ),
        note("timesteps", timesteps=sampling_timesteps(h)),
        note("guidance-free"),
    ]
    return Measurement(
        settings=settings_of(
            cfg,
            baseline_steps=BASELINE_STEPS,
            guidance_scale=1.0,
            consistency_train_seconds=few_step.train_seconds(ZOO_NAME),
            latent_teacher_train_seconds=few_step.train_seconds("latent_teacher"),
        ),
        metrics=metrics(
            "latency_ms",
            "speedup",
            "fd_digits",
            "kid_digits",
            "accuracy",
            "nfe",
            denoise_ms=Metric("ms", "lower"),
        ),
        rows=_rows(cfg, s, lat),
        # the counted NFE ratio; a fixed decode cost on both sides only lowers the ratio
        headline=few_step.headline(head, lat, nfe_ratio, s, "ddim50"),
        aims=_aims(cfg, s),
        notes=notes,
        figures=_figures(cfg, s, out),
    )


def demo(cfg: Config, out: Path) -> None:
    """The headline step count against the teacher's DDIM-50 and DPM-Solver++ (latencies include
    the VAE decode): table and grid."""
    h = cfg.headline_steps
    decode, teacher, cm = _models(cfg)
    runs = make_runs(cfg, teacher, cm)
    titles = {"ddim50": f"teacher DDIM {BASELINE_STEPS}", f"cm{h}": f"consistency {h}"}
    titles |= {f"dpm{n}": f"teacher DPM-Solver++ {n}" for n in cfg.control_steps}
    timed = _timed(cfg, runs, decode)
    few_step.run_demo(runs, timed, titles, cfg, LATENT_SHAPE, out / f"{SLUG}-demo.png", decode)
