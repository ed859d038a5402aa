"""The notes of the benchmark's result: what each row's numbers mean, in the catalogs' words.

Each note is an id of the package's catalogs (``note.<id>``) with the numbers it quotes; the
words are in es, ru and en under ``locale/``. ``diffusers-drift`` quotes diffusers' DDIM (raw ε
in the step) against DDIM on the clipped ODE at the same NFE, as the ratio of their distances to
the solution over the paired seeds,

    drift_k = rms(ddim_k^diffusers) / rms(ddim_k^ode),   k ∈ {baseline NFE, headline NFE}    (1)

``ddpm-reference`` the FDD of DDPM at its training steps over the baseline on the same seeds.
``ours-vs-diffusers`` the largest difference of one step of the minimal solvers written from
the papers (`reference.scheduler_tradeoff.solvers`) against diffusers' classes given the same
inputs (float64, so that it measures the update and not float32 rounding at t = 999).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from reference.harness.compare import FIDELITY
from reference.harness.cost import latency_note
from reference.harness.results import note

from .rows import nfe_ratio
from .sweep import Point, nfe_to_match

if TYPE_CHECKING:
    from reference.harness.compare import Measured

    from .config import Config


def notes(
    cfg: Config,
    m: Measured,
    more: Sequence[Measured],
    points: list[Point],
    model: torch.nn.Module,
    target: float,
) -> list[Any]:
    """The result's notes, in the order the page shows them."""
    from reference.harness import quality_note

    h, b = cfg.headline_nfe, cfg.baseline_nfe
    out = [
        quality_note(cfg.n_quality, cfg.seeds),
        note("held-out-reference"),
        note("samplers", baseline_nfe=b, nfe=h),
        shared_settings(h),
        drift(m, b, h),
    ]
    if more:
        out.append(ddpm_reference(cfg, more[0]))
    reach = [nfe_to_match(points, s, target) for s in cfg.schedulers]
    out += [
        note(
            "nfe-to-match",
            baseline_nfe=b,
            target=target,
            grid=list(cfg.nfe_grid),
            seed=cfg.seeds[0],
            schedulers=list(cfg.schedulers),
            reach=reach,
        ),
        note("latency", baseline_nfe=b, headline_nfe=h, limit=nfe_ratio(m), n=cfg.n_quality),
        latency_note(cfg.repeats, cfg.batch_latency),
        ours_vs_diffusers(cfg, model),
    ]
    return out


def shared_settings(nfe: int) -> Any:
    """Euler's first σ on the zoo's schedule, and what an ε error of 1e-3 becomes in x̂₀ there."""
    from reference.harness import ode

    abar_last = float(ode.schedule().alphas_cumprod[-1])
    sigma_max = math.sqrt((1.0 - abar_last) / abar_last)  # Euler's first σ, at t = 999
    return note("shared-settings", nfe=nfe, sigma_max=sigma_max, x0_error=1e-3 * sigma_max)


def drift(m: Measured, b: int, h: int) -> Any:
    """(1) at the baseline and the headline NFE, with both distances."""
    t = m.table

    def rms(row: str) -> float:
        return t.summary(row, FIDELITY).value

    ode_b, dif_b = rms(f"ddim-{b}"), rms(f"ddim-{b}-diffusers")
    ode_h, dif_h = rms(f"ddim-{h}"), rms(f"ddim-{h}-diffusers")
    return note(
        "diffusers-drift",
        baseline_nfe=b,
        nfe=h,
        ode_b=ode_b,
        diffusers_b=dif_b,
        ode_h=ode_h,
        diffusers_h=dif_h,
        fd_ode_b=t.summary(f"ddim-{b}", "fd_digits").value,
        fd_diffusers_b=t.summary(f"ddim-{b}-diffusers", "fd_digits").value,
        drift_b=dif_b / ode_b,  # (1)
        drift_h=dif_h / ode_h,  # (1)
    )


def ddpm_reference(cfg: Config, ref: Measured) -> Any:
    """DDPM at ``ref_steps`` over the baseline on the same seeds (paired FDD ratio)."""
    base = ref.comparison.baseline
    r = ref.table.ratio(f"ddpm-{cfg.ref_steps}", base, "fd_digits")
    return note(
        "ddpm-reference",
        ref_steps=cfg.ref_steps,
        ref_seeds=cfg.ref_seeds,
        baseline_nfe=cfg.baseline_nfe,
        ratio=r.value,
        lo=r.interval[0],
        hi=r.interval[1],
        n=cfg.n_quality,
    )


def ours_vs_diffusers(cfg: Config, model: torch.nn.Module) -> Any:
    """The minimal solvers against diffusers' classes: one step, and whole sampling loops."""
    from reference.harness import class_labels, make_noise, model_eps_fn, sample

    from .schedulers import make_scheduler
    from .solvers import make_minimal, max_step_difference

    eps, n = model_eps_fn(model), cfg.n_quality
    noise, labels = make_noise(n, cfg.seeds[0]), class_labels(n)
    step_noise = make_noise(cfg.batch_latency, cfg.seeds[0] + 1)
    found: dict[str, float] = {}
    with torch.inference_mode():
        for key, name, nfe in (
            ("ddim", "ddim", cfg.baseline_nfe),
            ("dpm", "dpmpp2m", cfg.headline_nfe),
        ):
            ours = sample(eps, make_minimal(name), noise, steps=nfe, labels=labels)
            theirs = sample(eps, make_scheduler(name), noise, steps=nfe, labels=labels)
            found[f"{key}_sample"] = float((ours - theirs).abs().max())
            found[f"{key}_step"] = max_step_difference(
                make_minimal(name), make_scheduler(name), eps, step_noise, nfe
            )
    return note("ours-vs-diffusers", **found)
