"""The decoder's cost, stated apart, and the notes of the consistency benchmark.

Idea
====
A latent sampler's output is useless until the VAE decodes it, so every latency of the main
comparison includes the decode. What the decode costs, and what the samplers cost without it,
is a second comparison with its own interleaved timing rounds (`Parts`): the teacher's DDIM-50
and the headline's consistency sampler on the same latency batch without the decode (the second
paired with the first), and the decode alone (paired with itself: its row states a latency, not
a speedup). The FLOPs of one U-Net call and of one decode per sample come from torch's counter
(matrix multiplications and convolutions).

Math
====
    calls = FLOPs(decode) / FLOPs(U-Net call)                                        (1)
    denoise speedup = median T(ddim50 without decode) / median T(cm_h without decode)  (2)
    gain of the first unclipped step from t = 999 = √(ᾱ_979 / ᾱ_999)                 (3)

(1) is how many network calls one decode is worth in arithmetic; on the tiny, overhead-bound
latent networks it does not predict the time ratio, which is why the decode is timed too. (3)
is quoted by the ``latent-grid`` note (`reference.consistency_latent_diffusion.latent_ode`, (4)).

Pitfalls
========
* The denoise rows carry no quality: their samples are the main comparison's, undecoded.
* The decode is timed on the baseline's latents of the latency batch, computed once before
  timing, so every call does the same work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from reference.harness.compare import Comparison, HeadlineSpec, Measured, Variant
from reference.harness.compare import measure as measure_comparison
from reference.harness.cost import latency_note
from reference.harness.results import Note, metrics, note
from reference.harness.seeds import quality_note

from .core import MAX_TIMESTEP, sampling_timesteps

DECODE = "decode"


def _no_score(x: torch.Tensor, same_seed: Mapping[str, torch.Tensor]) -> dict[str, float]:
    return {}


@dataclass(frozen=True)
class Parts:
    """The timed parts (denoise alone, decode alone) and the FLOPs of one call of each."""

    measured: Measured
    unet_flops: float
    decode_flops: float

    @staticmethod
    def measure(cfg: Any, models: Any, specs: Mapping[str, Any], baseline: str, seed: int) -> Parts:
        """Time the ``baseline``'s and the headline's samplers of ``specs`` without the decode,
        and the decode alone, interleaved, on the latency batch of noise ``seed``; count the
        FLOPs per sample of a U-Net call and of a decode."""
        from reference.harness import LATENT_SHAPE, class_labels, make_noise

        batch = class_labels(cfg.batch_latency)
        z = make_noise(cfg.batch_latency, seed, LATENT_SHAPE)

        def denoise(key: str) -> Callable[[], torch.Tensor]:
            _, _, network, run = specs[key]
            eps = models.teacher if network == "teacher" else models.cm
            return lambda: run(eps, z, batch, seed)

        head = f"cm{cfg.headline_steps}"
        with torch.inference_mode():
            z_base = denoise(baseline)()
        variants = (
            Variant(f"{baseline}-denoise", _denoise_config(specs[baseline]), "baseline",
                    timed=denoise(baseline)),
            Variant(f"{head}-denoise", _denoise_config(specs[head]), "technique",
                    timed=denoise(head)),
            Variant(DECODE, {"method": "vae-decode"}, "reference",
                    timed=lambda: models.decode(z_base), against=DECODE),
        )  # fmt: skip
        c = Comparison(
            variants=variants,
            metrics=metrics("latency_ms", "speedup"),
            score=_no_score,
            seeds=cfg.seeds,
            aims=(),
            headline=HeadlineSpec(f"{head}-denoise"),
            repeats=cfg.repeats,
            warmup=cfg.warmup,
        )
        unet, decode = _flops(cfg.batch_latency, models)
        return Parts(measure_comparison(c), unet, decode)

    def value(self, row: str, metric: str) -> float:
        return next(r.values[metric] for r in self.measured.rows if r.id == row)

    def interval(self, row: str, metric: str) -> tuple[float, float]:
        return next(r.intervals[metric] for r in self.measured.rows if r.id == row)


def _denoise_config(spec: Any) -> dict[str, Any]:
    config = dict(spec[0])
    config["method"] = f"{config['method']}-denoise"
    return config


def _flops(b: int, models: Any) -> tuple[float, float]:
    """FLOPs per sample of one network call (the consistency model has the teacher's U-Net) and
    of one VAE decode (`reference.harness.cost.count_flops`)."""
    from reference.harness import LATENT_SHAPE, class_labels, count_flops, make_noise

    z, y = make_noise(b, 0, LATENT_SHAPE), class_labels(b)
    t = torch.full((b,), 500, dtype=torch.long)
    with torch.inference_mode():
        return count_flops(models.teacher, z, t, y) / b, count_flops(models.decode, z) / b


def _first_step_gain() -> float:
    """(3): how much the first unclipped DDIM step from t = 999 magnifies an error of ε̂."""
    from reference.harness import ode

    acp = ode.schedule().alphas_cumprod
    return float((acp[MAX_TIMESTEP] / acp[-1]).sqrt())  # (3)


def notes(cfg: Any, parts: Parts, baseline: str, base_steps: int, nfe_ratio: float) -> list[Note]:
    """The protocol, the limit, the decoder's cost, the timesteps and the latent grid."""
    h = cfg.headline_steps
    head, base = f"cm{h}-denoise", f"{baseline}-denoise"
    lo, hi = parts.interval(head, "speedup")
    return [
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        latency_note(cfg.repeats, cfg.batch_latency),
        note("limits", steps=h, base_steps=base_steps, nfe_ratio=nfe_ratio),
        note(
            "decoder-cost",
            unet_mflops=parts.unet_flops / 1e6,
            decode_mflops=parts.decode_flops / 1e6,
            calls=parts.decode_flops / parts.unet_flops,  # (1)
            decode_ms=parts.value(DECODE, "latency_ms"),
            batch=cfg.batch_latency,
        ),
        note(
            "denoise-speedup",
            steps=h,
            speedup=parts.value(head, "speedup"),  # (2), against `base`
            lo=lo,
            hi=hi,
            nfe_ratio=nfe_ratio,
            row=head,
            against=base,
        ),
        note("timesteps", timesteps=sampling_timesteps(h)),
        note("latent-grid", first=MAX_TIMESTEP, harness_first=999, gain=_first_step_gain()),
        note("guidance-free"),
    ]
