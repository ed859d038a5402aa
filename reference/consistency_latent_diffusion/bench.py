"""Benchmark and demo of :mod:`reference.consistency_latent_diffusion` (the technique contract of
:mod:`reference.harness.cli`).

Rows: the zoo latent teacher with DDIM at 50 steps (baseline), the consistency model at 1, 2 and 4
steps (technique), the latent teacher's DPM-Solver++ at 2 and 4 steps on the same timesteps
(control), and the VAE decode alone (reference). Every latency but the decode's includes the VAE
decode; ``denoise_ms`` is the sampler alone. The measuring helpers are shared with
:mod:`reference.timestep_distillation` (:mod:`reference.timestep_distillation.few_step`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference.harness.cli import Option, int_tuple
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
)
from reference.harness.sampling import LATENT_SHAPE, EpsFn
from reference.timestep_distillation import few_step

from .core import sampling_timesteps
from .schedulers import dpm_solver
from .train import ZOO_NAME

SLUG = "consistency-latent-diffusion"
BASELINE_STEPS = 50
QUALITY_AIM = 1.5
CONTROL_AIM = 0.5
SPEED_AIM = 0.8


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
QUICK = Config(n=20, latency_batch=4, repeats=2, warmup=0, cm_steps=(2,), control_steps=(2,))
DEMO = Config(n=100, latency_batch=8, repeats=2, warmup=1, cm_steps=(2,), control_steps=(2,))
OPTIONS = (
    *few_step.SIZE_OPTIONS,
    Option("cm_steps", int_tuple, "N,N,..."),
    Option("control_steps", int_tuple, "N,N,..."),
    Option("headline_steps"),
)


def load_consistency_model() -> torch.nn.Module:
    """The committed zoo consistency model: an epsilon-output U-Net read through c_skip/c_out."""
    from reference import zoo

    return zoo.load(ZOO_NAME)


def make_runs(cfg: Config, teacher: EpsFn, cm: EpsFn) -> few_step.MakeRuns:
    """``(noise, labels, wrap) -> {key: () -> latents}``: DDIM-50, the consistency model, DPM++."""
    from reference import zoo
    from reference.harness import sample

    from .core import consistency_sample

    acp = zoo.teacher_scheduler().alphas_cumprod

    def runs(noise, labels, wrap) -> few_step.Runs:  # type: ignore[no-untyped-def]
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
            out[f"cm{s}"] = lambda e=e, s=s: consistency_sample(
                e, noise, labels, acp, s, seed=cfg.seed
            )
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
    denoise = few_step.timed_runs(runs, cfg.latency_batch, cfg.seed, LATENT_SHAPE)
    z_fixed = denoise["ddim50"]()
    timed: dict[str, Callable[[], Any]] = {k: (lambda f=f: decode(f())) for k, f in denoise.items()}
    timed |= {f"{k}:denoise": f for k, f in denoise.items()}
    timed["decode"] = lambda: decode(z_fixed)
    return timed


def _rows(cfg: Config, s: few_step.Sampled, lat: Any) -> list[Row]:
    spec: dict[str, tuple[dict[str, object], str]] = {
        "ddim50": ({"method": "latent-ddim", "steps": BASELINE_STEPS}, "baseline")
    }
    spec |= {f"cm{n}": ({"method": "consistency", "steps": n}, "technique") for n in cfg.cm_steps}
    spec |= {
        f"dpm{n}": ({"method": "dpm-solver-pp", "steps": n}, "control") for n in cfg.control_steps
    }
    rows = [
        Row(
            key,
            config,
            role,  # type: ignore[arg-type]
            few_step.values(key, s, lat, denoise_ms=lat.median_ms(f"{key}:denoise")),
            intervals={} if key == "ddim50" else {"speedup": lat.speedup_interval(key)},
            spread={"latency_ms": lat.iqr_ms(key), "denoise_ms": lat.iqr_ms(f"{key}:denoise")},
        )
        for key, (config, role) in spec.items()
    ]
    decode = {"latency_ms": lat.median_ms("decode"), "nfe": 0.0}
    spread = {"latency_ms": lat.iqr_ms("decode")}
    return [*rows, Row("decode", {"method": "vae-decode"}, "reference", decode, spread=spread)]


def benchmark(cfg: Config, out: Path) -> Measurement:
    """Latent teacher DDIM-50 vs the consistency model at 1/2/4 steps vs DPM-Solver++ at 2/4."""
    from reference.harness import bar_chart, compare_latency, fdd_floor

    decode, teacher, cm = _models(cfg)
    runs = make_runs(cfg, teacher, cm)
    s = few_step.sample_all(runs, cfg.n, cfg.seed, LATENT_SHAPE, decode)
    with torch.inference_mode():
        lat = compare_latency(_timed(cfg, runs, decode), repeats=cfg.repeats, warmup=cfg.warmup)

    h = cfg.headline_steps
    head = f"cm{h}"
    nfe_ratio = s.nfe["ddim50"] / s.nfe[head]
    d, u = lat.median_ms("decode"), lat.median_ms("ddim50:denoise") / BASELINE_STEPS
    decode_limit = (BASELINE_STEPS * u + d) / (h * u + d)
    denoise = dataclasses.replace(lat, baseline="ddim50:denoise")  # same rounds, other baseline
    denoise_speedup = lat.median_ms("ddim50:denoise") / lat.median_ms(f"{head}:denoise")
    quality_ratio = s.fdd[head] / s.fdd["ddim50"]
    control_ratio = s.fdd[head] / s.fdd[f"dpm{h}"] if h in cfg.control_steps else None

    figures = [Figure(f"{SLUG}.png", "fdd-bars"), Figure(f"{SLUG}-samples.png", "samples")]
    keys = ["ddim50", *(f"cm{n}" for n in cfg.cm_steps), *(f"dpm{n}" for n in cfg.control_steps)]
    bar_chart(
        [f"DDIM {BASELINE_STEPS}", *(f"consistency {n}" for n in cfg.cm_steps)]
        + [f"DPM-Solver++ {n}" for n in cfg.control_steps],
        [s.fdd[k] for k in keys],
        out / figures[0].file,
        roles=["baseline"]
        + ["technique"] * len(cfg.cm_steps)
        + ["control"] * len(cfg.control_steps),
        ylabel="FDD (lower is better)",
    )
    grid_keys = ["ddim50", head, *([f"dpm{h}"] if h in cfg.control_steps else [])]
    few_step.save_samples(s.images, grid_keys, out / figures[1].file)

    aims = [
        aim("quality", quality_ratio, QUALITY_AIM, "<=", steps=h, base_steps=BASELINE_STEPS),
        aim("beats-control", control_ratio, CONTROL_AIM, "<=", steps=h),
        aim(
            "denoise-speedup",
            denoise_speedup,
            SPEED_AIM * nfe_ratio,
            ">=",
            interval=denoise.speedup_interval(f"{head}:denoise"),
            steps=h,
            share=SPEED_AIM,
            nfe_ratio=nfe_ratio,
        ),
        aim(
            "speedup-with-decode",
            lat.speedup[head],
            SPEED_AIM * decode_limit,
            ">=",
            interval=lat.speedup_interval(head),
            steps=h,
            share=SPEED_AIM,
            limit=decode_limit,
        ),
    ]
    notes = [
        note("fdd-at-n", n=cfg.n, floor=fdd_floor(cfg.n)),
        latency_note(cfg.repeats, cfg.latency_batch),
        note("decode-included", decode_ms=d),
        note(
            "limits",
            steps=h,
            nfe_ratio=nfe_ratio,
            base_steps=BASELINE_STEPS,
            limit=decode_limit,
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
            "accuracy",
            "nfe",
            denoise_ms=Metric("ms", "lower"),
        ),
        rows=_rows(cfg, s, lat),
        # the decode-inclusive limit, from this run's medians of u and d: an estimate
        headline=few_step.headline(head, lat, decode_limit, quality_ratio),
        aims=aims,
        notes=notes,
        figures=figures,
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
