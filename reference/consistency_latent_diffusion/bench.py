"""Benchmark and demo of
[`reference.consistency_latent_diffusion`][reference.consistency_latent_diffusion] (the technique
contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Idea
====
Rows, all from the same latent noise and labels on every seed, decoded by the same VAE:

* the zoo latent teacher with DDIM at 50 steps (baseline), on the harness's ODE without clipping
  and on a grid that starts at t = 979
  ([`latent_ode`][reference.consistency_latent_diffusion.latent_ode] says why not at 999);
* the consistency model at 1, 2 and 4 steps (technique; its re-noising is seeded by the quality
  seed, so it is paired too);
* the teacher's DPM-Solver++(2M) at as many steps, on the consistency model's own timesteps
  (control: the same network calls, so the same cost);
* the class-balanced held-out real digits (reference).

A consistency model is a *trained* change, so the primary figures are distribution distances:
`reference.harness.scores.held_out_score` (FDD, class-weighted KID, accuracy, within-class
diversity) at 140 samples per seed against the reference half of the held-out digits. A
per-sample distance to the teacher's ODE solution would not apply: multistep consistency
sampling draws fresh noise at every step, so its samples leave the teacher's trajectories on
purpose.

The headline is the 4-step setting: at 2 steps the model's FDD is several times the teacher's,
at 4 it is near it. Two aims per kept step count: better than the matched-cost control, and
(for the headline) as good as the teacher's DDIM-50 within 10%.

Every latency of the first comparison includes the VAE decode, as the site's speedup should. The
decoder is stated apart in a second comparison with its own timing rounds (`outcome`'s
``more``): the teacher's DDIM-50 and the headline's sampler without the decode, and the decode
alone (its own pair, so its row carries a latency, not a speedup).

Math
====
    limit = NFE(ddim50) / NFE(cm_h), counted while sampling                         (1)
    (50 U + D) / (h U + D) < 50 / h   for a decode cost D > 0 and call cost U        (2)

(1) is an estimate, not a bound (per-step overheads differ between samplers); (2) says why the
measured speedup with the decode stays below it.

Sources: Song et al. 2023 (arXiv:2303.01469), Luo et al. 2023 (arXiv:2310.04378).

Pitfalls
========
* The control must start where the consistency model starts (t = 979): the harness's own
  DPM-Solver++ grid would start at 999, where an unclipped latent sampler is ill-conditioned.
* ``steps`` and the controls are one list: every kept step count gets its control and its aim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reference.harness import compare, sizes
from reference.harness.builders import held_out_comparison
from reference.harness.compare import HeadlineSpec, QualityAim, Variant
from reference.harness.declared import sampled_outcome
from reference.harness.entry import integer, integers
from reference.harness.results import Figure, metrics
from reference.harness.scores import QUALITY_METRICS

from .core import MAX_TIMESTEP, sampling_timesteps
from .figures import fdd_bars, sample_grid
from .latent_ode import baseline_grid, solve_latent
from .report import Parts, notes

CONTRACT = 2
SLUG = "consistency-latent-diffusion"
BASELINE = "ddim50"
BASELINE_STEPS = 50
CONTROL_AIM = 1.0
"""The consistency model must beat the teacher's DPM-Solver++ at as many steps: ratio below 1."""
QUALITY_TOLERANCE = 1.1
"""The headline keeps the FDD of the teacher's DDIM-50 within 10% (paired ratio)."""
MAX_STEPS = 49
"""The consistency grid holds 49 timesteps (19, 39, ..., 979)."""


@dataclass(frozen=True)
class Config(sizes.Scored, sizes.Timed):
    """Sizes of a benchmark or demonstration run (`sizes`), and the step counts it measures."""

    warmup: int = 2
    steps: tuple[int, ...] = (1, 2, 4)
    headline_steps: int = 4

    def validate(self) -> None:
        super().validate()
        sizes.check_one_of("headline_steps", self.headline_steps, "steps", self.steps)


FULL = Config()
QUICK = Config(steps=(1, 4), n_quality=20, seeds=(0, 1), batch_latency=4, repeats=2, warmup=0)
DEMO = Config(steps=(2, 4), n_quality=100, seeds=(0, 1), batch_latency=8, repeats=2, warmup=1)
OPTIONS = (
    integers("steps", low=1, high=MAX_STEPS),
    integer("headline_steps", low=1, high=MAX_STEPS),
    *sizes.SCORED_OPTIONS,
    *sizes.TIMED_OPTIONS,
)

Latents = Callable[[Any, torch.Tensor, torch.Tensor, int], torch.Tensor]
"""``(eps_fn, noise, labels, seed) -> latents``: one sampler of the comparison."""


@dataclass(frozen=True)
class Models:
    """The two networks as eps functions (the consistency model has the teacher's U-Net) and the
    VAE decode (scaled latents to images in [-1, 1])."""

    teacher: Any
    cm: Any
    decode: Callable[[torch.Tensor], torch.Tensor]


def samplers(steps: tuple[int, ...]) -> dict[str, tuple[dict[str, Any], str, str, Latents]]:
    """``id -> (config, role, network, sampler)``: DDIM-50, the consistency model at each step
    count ``n`` (``cm<n>``), then the teacher's DPM-Solver++ on the same timesteps (``dpm<n>``)."""
    from reference.zoo import teacher_scheduler

    from .core import consistency_sample

    acp = teacher_scheduler().alphas_cumprod
    grid = baseline_grid(BASELINE_STEPS)
    out: dict[str, tuple[dict[str, Any], str, str, Latents]] = {
        BASELINE: (
            {"method": "latent-ddim", "steps": BASELINE_STEPS},
            "baseline",
            "teacher",
            lambda eps, z, y, seed: solve_latent(eps, z, y, grid),
        )
    }
    for n in steps:
        out[f"cm{n}"] = (
            {"method": "consistency", "steps": n},
            "technique",
            "cm",
            lambda eps, z, y, seed, n=n: consistency_sample(eps, z, y, acp, n, seed=seed),
        )
    for n in steps:
        taus = sampling_timesteps(n)
        out[f"dpm{n}"] = (
            {"method": "dpm-solver-pp", "steps": n},
            "control",
            "teacher",
            lambda eps, z, y, seed, taus=taus: solve_latent(eps, z, y, taus, "dpmpp2m"),
        )
    return out


def _variant(
    key: str, spec: tuple[dict[str, Any], str, str, Latents], cfg: Config, models: Models
) -> Variant:
    """A sampler of `samplers` as a variant: decoded samples of ``n_quality`` class-balanced
    labels per seed with the network calls it counted, and one decoded latency batch."""
    from reference.harness import LATENT_SHAPE, class_labels, count_nfe, make_noise

    config, role, network, run = spec
    eps = models.teacher if network == "teacher" else models.cm
    labels, batch = class_labels(cfg.n_quality), class_labels(cfg.batch_latency)
    z_lat = make_noise(cfg.batch_latency, sizes.LATENCY_SEED, LATENT_SHAPE)

    def sample(seed: int) -> tuple[torch.Tensor, dict[str, float]]:
        counter = count_nfe(eps)
        z = run(counter, make_noise(cfg.n_quality, seed, LATENT_SHAPE), labels, seed)
        return models.decode(z), {"nfe": float(counter.nfe)}

    return Variant(
        key,
        config,
        role,  # type: ignore[arg-type]
        sample=sample,  # type: ignore[arg-type]
        timed=lambda: models.decode(run(eps, z_lat, batch, sizes.LATENCY_SEED)),
    )


def _nfe_ratio(m: compare.Measured) -> float:
    """(1): the counted network calls of the baseline over the headline row's."""
    head = m.comparison.headline.row
    return m.table.summary(BASELINE, "nfe").value / m.table.summary(head, "nfe").value


def comparison(cfg: Config, models: Models) -> compare.Comparison:
    """The samplers on paired seeds, decoded; the headline is the consistency model at
    ``headline_steps``, judged against the teacher's DDIM-50 and its own matched control."""
    specs = samplers(cfg.steps)
    h = cfg.headline_steps
    aims = [
        QualityAim(
            "beats-control", f"cm{n}", f"dpm{n}", "fd_digits", "<", CONTROL_AIM, params={"steps": n}
        )
        for n in cfg.steps
    ]
    aims.append(
        QualityAim(
            "quality",
            f"cm{h}",
            BASELINE,
            "fd_digits",
            "<=",
            QUALITY_TOLERANCE,
            params={"steps": h, "base_steps": BASELINE_STEPS},
        )
    )
    return held_out_comparison(
        cfg,
        tuple(_variant(k, spec, cfg, models) for k, spec in specs.items()),
        metrics("latency_ms", "speedup", *QUALITY_METRICS, "nfe"),
        aims,
        HeadlineSpec(f"cm{h}", quality="fd_digits", limit=_nfe_ratio, limit_kind="estimate"),
    )


def _models() -> Models:
    from reference import zoo
    from reference.harness import model_eps_fn
    from reference.harness.sampling import frozen

    from .model import load_consistency_model

    vae = frozen(zoo.load_vae())
    teacher = model_eps_fn(frozen(zoo.load_latent_teacher()))
    cm = model_eps_fn(frozen(load_consistency_model()))
    return Models(teacher, cm, lambda z: zoo.decode_latents(vae, z))


def _train_seconds(name: str) -> float:
    from reference import zoo

    return float(zoo.manifest_entry(name)["train_seconds"])


def measure(cfg: Config, staging: Path) -> compare.Outcome:
    """Sample (paired seeds), score and time every sampler with its decode, then time the
    decode apart; write the figures."""

    models = _models()
    m = compare.measure(comparison(cfg, models))
    parts = Parts.measure(cfg, models, samplers(cfg.steps), BASELINE, sizes.LATENCY_SEED)
    figures = [Figure(f"{SLUG}.png", "fdd-bars"), Figure(f"{SLUG}-samples.png", "samples")]
    fdd_bars(staging / figures[0].file, m.rows, len(cfg.seeds))
    h = cfg.headline_steps
    sample_grid(staging / figures[1].file, m.first, [BASELINE, f"cm{h}", f"dpm{h}"])
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, parts, BASELINE, BASELINE_STEPS, _nfe_ratio(m)),
        figures=figures,
        more=[parts.measured],
        ode="unclipped-latent",
        baseline_steps=BASELINE_STEPS,
        max_timestep=MAX_TIMESTEP,
        guidance_scale=1.0,
        consistency_train_seconds=_train_seconds("consistency_latent"),
        latent_teacher_train_seconds=_train_seconds("latent_teacher"),
    )


def demo(cfg: Config, out: Path) -> None:
    """The samplers against the teacher's DDIM-50 (latencies include the decode): a table of
    latency, NFE and the held-out distances, and a sample grid."""
    m = compare.measure(comparison(cfg, _models()))
    print(f"{'sampler':10s} {'ms':>8s} {'NFE':>4s} {'FDD':>7s} {'KID':>8s} {'acc':>5s}")
    for row in m.rows:
        v = row.values
        print(
            f"{row.id:10s} {v['latency_ms']:8.1f} {v['nfe']:4.0f} {v['fd_digits']:7.2f} "
            f"{v['kid_digits']:8.1f} {v['accuracy']:5.2f}"
        )
    keys = [BASELINE, f"cm{cfg.headline_steps}", f"dpm{cfg.headline_steps}"]
    path = sample_grid(out / f"{SLUG}-demo.png", m.first, keys)
    print(f"{path} (rows: {', '.join(keys)})")
