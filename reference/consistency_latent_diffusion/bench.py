"""Benchmark and command line (``python -m reference.consistency_latent_diffusion``)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference import zoo
from reference.harness import (
    LATENT_SHAPE,
    BenchmarkResult,
    EpsFn,
    Headline,
    MetricSpec,
    NFECounter,
    Row,
    aim,
    bar_chart,
    class_accuracy,
    class_labels,
    compare_latency,
    count_nfe,
    fdd_floor,
    frechet_digits_distance,
    make_noise,
    metrics,
    model_eps_fn,
    output_dir,
    provenance,
    sample,
    save_grid,
)
from reference.zoo import ZooError

from .core import consistency_sample, sampling_timesteps
from .train import ZOO_NAME

SLUG = "consistency-latent-diffusion"
MODULE = "reference.consistency_latent_diffusion"
BASELINE_STEPS = 50
HEADLINE_STEPS = 2
QUALITY_AIM = 1.5
CONTROL_AIM = 0.5
SPEED_AIM = 0.8


@dataclass(frozen=True)
class Config:
    n: int
    latency_batch: int
    repeats: int
    warmup: int
    cm_steps: tuple[int, ...]
    control_steps: tuple[int, ...]
    seed: int = 0
    threads: int = 2


FULL = Config(
    n=300, latency_batch=32, repeats=15, warmup=2, cm_steps=(1, 2, 4), control_steps=(2, 4)
)
QUICK = Config(n=20, latency_batch=4, repeats=1, warmup=0, cm_steps=(2,), control_steps=(2,))


def load_consistency_model() -> torch.nn.Module:
    """The committed zoo consistency model: an epsilon-output U-Net read through c_skip/c_out."""
    return zoo.load(ZOO_NAME)


def latent_scheduler(name: str = "DDIMScheduler", **overrides: Any) -> Any:
    """A diffusers scheduler on the zoo schedule for **latents**: no clipping of ``x_0`` to [-1, 1].

    The zoo's default configuration clips ``x_0`` (right for pixels in [-1, 1]); scaled latents
    have unit variance, and clipping them would cut off most of their range.
    """
    return zoo.teacher_scheduler(name, **{"clip_sample": False, **overrides})


def with_timesteps(scheduler: Any, timesteps: list[int]) -> Any:
    """Make ``scheduler.set_timesteps(n)`` use the custom ``timesteps`` (for the harness' loop).

    Works with schedulers whose ``set_timesteps`` accepts ``timesteps=`` (LCM, DPM-Solver).
    """
    original = scheduler.set_timesteps

    def set_timesteps(num_inference_steps: int | None = None, device: Any = None) -> None:
        if num_inference_steps is not None and num_inference_steps != len(timesteps):
            raise ValueError(
                f"scheduler fixed to {len(timesteps)} timesteps, asked for {num_inference_steps}"
            )
        original(timesteps=list(timesteps), device=device)

    scheduler.set_timesteps = set_timesteps
    return scheduler


def lcm_scheduler(steps: int) -> Any:
    """diffusers' ``LCMScheduler`` on the zoo schedule at this module's consistency timesteps."""
    previous = logging.getLogger("diffusers.schedulers.scheduling_lcm").level
    logging.getLogger("diffusers.schedulers.scheduling_lcm").setLevel(logging.ERROR)
    try:
        sched = latent_scheduler("LCMScheduler", original_inference_steps=50)
    finally:
        logging.getLogger("diffusers.schedulers.scheduling_lcm").setLevel(previous)
    return with_timesteps(sched, sampling_timesteps(steps))


def decoder(vae: torch.nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """``z -> images``: the zoo VAE's decoder (scaled latents to [-1, 1] digits)."""
    return lambda z: zoo.decode_latents(vae, z)


def _runs(
    cfg: Config,
    teacher_eps: EpsFn,
    cm_eps: EpsFn,
    noise: torch.Tensor,
    labels: torch.Tensor,
    wrap: Callable[[str, EpsFn], EpsFn],
) -> dict[str, Callable[[], torch.Tensor]]:
    """``key -> () -> latents`` for baseline, consistency model and controls."""
    acp = zoo.teacher_scheduler().alphas_cumprod
    runs: dict[str, Callable[[], torch.Tensor]] = {}
    eps = wrap("ddim50", teacher_eps)
    runs["ddim50"] = lambda: sample(
        eps, latent_scheduler(), noise, steps=BASELINE_STEPS, labels=labels, clamp=False
    )
    for s in cfg.cm_steps:
        e = wrap(f"cm{s}", cm_eps)
        runs[f"cm{s}"] = lambda e=e, s=s: consistency_sample(
            e, noise, labels, acp, s, seed=cfg.seed
        )
    for s in cfg.control_steps:
        e = wrap(f"dpm{s}", teacher_eps)
        runs[f"dpm{s}"] = lambda e=e, s=s: sample(
            e, dpm_solver(s), noise, steps=s, labels=labels, clamp=False
        )
    return runs


def dpm_solver(steps: int) -> Any:
    """DPM-Solver++ (2M) on the latents at the consistency model's timesteps (same start, 979)."""
    sched = latent_scheduler(
        "DPMSolverMultistepScheduler", algorithm_type="dpmsolver++", solver_order=2
    )
    return with_timesteps(sched, sampling_timesteps(steps))


def benchmark(quick: bool = False, cfg: Config | None = None) -> BenchmarkResult:
    """Latent teacher DDIM-50 vs the consistency model at 1/2/4 steps vs DPM-Solver++ at 2/4."""
    cfg = cfg or (QUICK if quick else FULL)
    torch.set_num_threads(cfg.threads)
    vae, teacher, cm = zoo.load_vae(), zoo.load_latent_teacher(), load_consistency_model()
    decode = decoder(vae)
    t_eps, c_eps = model_eps_fn(teacher), model_eps_fn(cm)
    noise, labels = make_noise(cfg.n, cfg.seed, LATENT_SHAPE), class_labels(cfg.n)
    counters: dict[str, NFECounter] = {}
    runs = _runs(
        cfg, t_eps, c_eps, noise, labels, lambda k, f: counters.setdefault(k, count_nfe(f))
    )
    images = {k: decode(fn()) for k, fn in runs.items()}
    fdd = {k: frechet_digits_distance(x) for k, x in images.items()}
    acc = {k: class_accuracy(x, labels) for k, x in images.items()}

    b = cfg.latency_batch
    lat_noise, lat_labels = make_noise(b, cfg.seed + 1, LATENT_SHAPE), class_labels(b)
    denoise = _runs(cfg, t_eps, c_eps, lat_noise, lat_labels, lambda k, f: f)
    z_fixed = denoise["ddim50"]()
    timed: dict[str, Callable[[], Any]] = {
        k: (lambda fn=fn: decode(fn())) for k, fn in denoise.items()
    }
    timed |= {f"{k}:denoise": fn for k, fn in denoise.items()}
    timed["decode"] = lambda: decode(z_fixed)
    lat = compare_latency(timed, repeats=cfg.repeats, warmup=cfg.warmup, threads=cfg.threads)

    names = {"ddim50": (f"Latent teacher, DDIM {BASELINE_STEPS} steps", "baseline")}
    names |= {
        f"cm{s}": (f"Consistency model, {s} step{'s' * (s > 1)}", "technique") for s in cfg.cm_steps
    }
    names |= {
        f"dpm{s}": (f"Latent teacher, DPM-Solver++ {s} steps", "control") for s in cfg.control_steps
    }
    rows = [
        Row(
            name,
            role,  # type: ignore[arg-type]
            {
                "latency_ms": lat.median_ms(k),
                "denoise_ms": lat.median_ms(f"{k}:denoise"),
                "fd_digits": fdd[k],
                "accuracy": acc[k],
                "nfe": float(counters[k].nfe),
            },
            {"latency_ms": lat.iqr_ms(k), "denoise_ms": lat.iqr_ms(f"{k}:denoise")},
        )
        for k, (name, role) in names.items()
    ]
    rows.append(
        Row(
            "VAE decode only",
            "reference",
            {"latency_ms": lat.median_ms("decode"), "nfe": 0.0},
            {"latency_ms": lat.iqr_ms("decode")},
        )
    )
    h = HEADLINE_STEPS if HEADLINE_STEPS in cfg.cm_steps else cfg.cm_steps[0]
    nfe_ratio = BASELINE_STEPS / h
    d = lat.median_ms("decode")
    u = lat.median_ms("ddim50:denoise") / BASELINE_STEPS
    decode_limit = (BASELINE_STEPS * u + d) / (h * u + d)
    speedup = lat.speedup[f"cm{h}"]
    denoise_speedup = lat.median_ms("ddim50:denoise") / lat.median_ms(f"cm{h}:denoise")
    quality_ratio = fdd[f"cm{h}"] / fdd["ddim50"]
    control_ratio = fdd[f"cm{h}"] / fdd[f"dpm{h}"] if h in cfg.control_steps else None
    figures = _figures(cfg, images, fdd, counters, quick)
    aims = [
        aim(
            f"{h}-step FDD within {QUALITY_AIM}x of latent teacher DDIM-{BASELINE_STEPS}",
            quality_ratio,
            QUALITY_AIM,
            "<=",
        ),
        aim(
            f"{h}-step FDD <= {CONTROL_AIM}x of the teacher's DPM-Solver++ at {h} steps",
            control_ratio,
            CONTROL_AIM,
            "<=",
        ),
        aim(
            f"denoising speedup at {h} steps >= {SPEED_AIM} x NFE ratio ({nfe_ratio:.0f}x)",
            denoise_speedup,
            SPEED_AIM * nfe_ratio,
            ">=",
        ),
        aim(
            f"speedup with VAE decode >= {SPEED_AIM} x its limit ({decode_limit:.1f}x)",
            speedup,
            SPEED_AIM * decode_limit,
            ">=",
        ),
    ]
    notes = [
        f"FDD on {cfg.n} decoded conditional samples (labels 0-9 balanced) from the same latent "
        f"noise; fdd_floor({cfg.n}) = {fdd_floor(cfg.n):.2f} (real training digits).",
        f"Latency: batch {b}, {cfg.threads} threads, median of {cfg.repeats} interleaved runs. "
        f"latency_ms includes the VAE decode ({d:.1f} ms per batch, row 'VAE decode only'); "
        "denoise_ms is the sampler alone.",
        f"Analytic limits at {h} steps: NFE ratio {nfe_ratio:.0f}x; with the decode cost d and "
        f"per-call cost u of the U-Net, (50u + d)/({h}u + d) = {decode_limit:.1f}x.",
        f"Consistency timesteps {sampling_timesteps(h)} (LCM's rule on a grid that stops at "
        "t=979: the zoo schedule's t=999 has alpha = 5e-5). The control DPM-Solver++ uses the "
        "same timesteps; the same samples come out of diffusers' LCMScheduler (tested).",
        "Guidance-free (w = 1) conditional sampling throughout.",
    ]
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Latent consistency distillation of the zoo latent teacher: 50 steps -> 1, 2, 4",
        quick=quick,
        settings={
            "n": cfg.n,
            "seed": cfg.seed,
            "latency_batch": b,
            "repeats": cfg.repeats,
            "threads": cfg.threads,
            "baseline_steps": BASELINE_STEPS,
            "consistency_steps": list(cfg.cm_steps),
            "control_steps": list(cfg.control_steps),
            "guidance_scale": 1.0,
            "consistency_train_seconds": _train_seconds(ZOO_NAME),
            "latent_teacher_train_seconds": _train_seconds("latent_teacher"),
        },
        metrics=metrics(
            "latency_ms",
            "fd_digits",
            "accuracy",
            "nfe",
            denoise_ms=MetricSpec("Latency without VAE decode", "ms", "lower"),
        ),
        rows=rows,
        headline=Headline(
            speedup=speedup,
            speedup_limit=decode_limit,  # the headline speedup includes the VAE decode
            quality_ratio=quality_ratio,
            quality_metric="fd_digits",
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance(
            [
                *sorted(Path(__file__).parent.glob("*.py")),
                *zoo.weight_files("vae", "latent_teacher", "consistency_latent", "classifier"),
            ]
        ),
    )


def _train_seconds(name: str) -> float:
    return float(zoo.manifest_entry(name)["train_seconds"])


def _figures(
    cfg: Config,
    images: dict[str, torch.Tensor],
    fdd: dict[str, float],
    counters: dict[str, NFECounter],
    quick: bool,
) -> list[str]:
    out = output_dir(quick)
    keys = ["ddim50", *(f"cm{s}" for s in cfg.cm_steps), *(f"dpm{s}" for s in cfg.control_steps)]
    roles = ["baseline"] + ["technique"] * len(cfg.cm_steps) + ["control"] * len(cfg.control_steps)
    labels = [
        f"DDIM {BASELINE_STEPS}",
        *(f"consistency {s}" for s in cfg.cm_steps),
        *(f"DPM-Solver++ {s}" for s in cfg.control_steps),
    ]
    bar_chart(
        labels,
        [fdd[k] for k in keys],
        out / f"{SLUG}.png",
        roles=roles,
        ylabel="FDD (lower is better)",
        title="Latent consistency model vs latent teacher",
    )
    h = HEADLINE_STEPS if HEADLINE_STEPS in cfg.cm_steps else cfg.cm_steps[0]
    k = min(10, cfg.n)
    grid_keys = ["ddim50", f"cm{h}", *(f"dpm{h}" for _ in [0] if h in cfg.control_steps)]
    save_grid(
        torch.cat([images[key][:k] for key in grid_keys]), out / f"{SLUG}-samples.png", nrow=k
    )
    return [f"{SLUG}.png", f"{SLUG}-samples.png"]


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.consistency_latent_diffusion",
        description="Latent consistency model demo: few-step sampling against the latent teacher.",
    )
    p.add_argument("--steps", type=int, default=HEADLINE_STEPS, help="consistency steps (1-49)")
    p.add_argument("--n", type=int, default=100, help="samples per sampler (>= 10)")
    p.add_argument("--seed", type=int, default=0, help="noise seed")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="output folder")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write the result")
    p.add_argument("--quick", action="store_true", help="with --bench: the small test setting")
    return p


def _demo(steps: int, n: int, seed: int, out: Path) -> None:
    from tqdm.auto import tqdm

    sampling_timesteps(steps)  # validates steps
    if n < 10:
        raise ValueError(f"--n must be >= 10, got {n}")
    cfg = Config(
        n=n,
        latency_batch=n,
        repeats=3,
        warmup=1,
        cm_steps=(steps,),
        control_steps=(steps,),
        seed=seed,
    )
    vae, teacher, cm = zoo.load_vae(), zoo.load_latent_teacher(), load_consistency_model()
    decode = decoder(vae)
    noise, labels = make_noise(n, seed, LATENT_SHAPE), class_labels(n)
    runs = _runs(cfg, model_eps_fn(teacher), model_eps_fn(cm), noise, labels, lambda k, f: f)
    titles = {
        "ddim50": f"teacher DDIM {BASELINE_STEPS}",
        f"cm{steps}": f"consistency {steps}",
        f"dpm{steps}": f"teacher DPM-Solver++ {steps}",
    }
    images = {k: decode(fn()) for k, fn in tqdm(runs.items(), desc="sampling", leave=False)}
    lat = compare_latency(
        {k: (lambda fn=fn: decode(fn())) for k, fn in runs.items()}, repeats=3, warmup=1
    )
    print(f"{'sampler (+ VAE decode)':28} {'ms':>8} {'FDD':>7} {'acc':>6}")
    for k, x in images.items():
        fd, acc = frechet_digits_distance(x), class_accuracy(x, labels)
        print(f"{titles[k]:28} {lat.median_ms(k):8.1f} {fd:7.2f} {acc:6.2f}")
    print(f"(FDD of {n} real training digits: {fdd_floor(n):.2f})")
    out.mkdir(parents=True, exist_ok=True)
    grid = torch.cat([x[:10] for x in images.values()])
    path = save_grid(grid, out / "samples.png", nrow=10)
    print(f"samples (rows: {', '.join(titles.values())}): {path}")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    args = _parser().parse_args(argv)
    try:
        torch.set_num_threads(2)
        if args.quick and not args.bench:
            raise ValueError("--quick only applies to --bench")
        if args.bench:
            from reference.harness import write_and_report

            write_and_report(benchmark(quick=args.quick))
            return 0
        _demo(args.steps, args.n, args.seed, args.out)
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
