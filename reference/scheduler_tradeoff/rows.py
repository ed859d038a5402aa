"""The rows and aims the benchmark declares (`reference.scheduler_tradeoff.bench` says why).

A `Spec` names a row: the sampler, its NFE, how it samples
(`reference.scheduler_tradeoff.samplers`), its role and whether it is timed; `variant` turns it
into the harness's `reference.harness.compare.Variant`, counting the network evaluations of each
seed (``nfe``). The aims are (1)-(3) of the bench module; `nfe_ratio` its limit (4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from reference.harness import sizes
from reference.harness.compare import FIDELITY, Measured, QualityAim, Variant

from .config import CONTROL_AIM, FIDELITY_AIM, QUALITY_TOLERANCE, TECHNIQUES, Config
from .samplers import Mode, runner


@dataclass(frozen=True)
class Spec:
    """One row: ``nfe`` evaluations of sampler ``name`` run as ``mode`` says."""

    id: str
    name: str
    nfe: int
    mode: Mode
    role: str
    timed: bool
    method: str


def specs(cfg: Config) -> list[Spec]:
    """The rows of the main comparison, baseline first (only the schedulers ``cfg`` names)."""
    h, b, on = cfg.headline_nfe, cfg.baseline_nfe, set(cfg.schedulers)
    out = [Spec(f"ddim-{b}", "ddim", b, "ode", "baseline", True, "ddim")]
    out += [Spec(f"{s}-{h}", s, h, "ode", "technique", True, s) for s in TECHNIQUES if s in on]
    out.append(Spec(f"ddim-{h}", "ddim", h, "ode", "control", True, "ddim"))
    if "euler" in on:
        out.append(Spec(f"euler-{h}", "euler", h, "ode", "reference", True, "euler"))
    out.append(
        Spec(f"ddim-{h}-unclipped", "ddim", h, "unclipped", "reference", False, "ddim-unclipped")
    )
    out += [
        Spec(f"ddim-{k}-diffusers", "ddim", k, "diffusers", "reference", False, "ddim-diffusers")
        for k in (b, h)
    ]
    return out


def ancestral_specs(cfg: Config) -> list[Spec]:
    """DDPM at the headline NFE and at ``ref_steps``, with the baseline on the same seeds."""
    b, h = cfg.baseline_nfe, cfg.headline_nfe
    return [
        Spec(f"ddim-{b}-ref", "ddim", b, "ode", "baseline", False, "ddim-ref"),
        Spec(f"ddpm-{h}", "ddpm", h, "ancestral", "reference", False, "ddpm"),
        Spec(
            f"ddpm-{cfg.ref_steps}",
            "ddpm",
            cfg.ref_steps,
            "ancestral",
            "reference",
            False,
            "ddpm-reference",
        ),
    ]


def variant(cfg: Config, spec: Spec, model: torch.nn.Module) -> Variant:
    """One row: its samples on a seed's noise (network evaluations counted, ``nfe``) and, if
    timed, one run on the latency batch."""
    from reference.harness import class_labels, count_nfe, make_noise, model_eps_fn

    run, eps = runner(spec.name, spec.mode), model_eps_fn(model)

    def sample(seed: int) -> tuple[torch.Tensor, dict[str, float]]:
        counter = count_nfe(eps)
        x = run(
            counter, make_noise(cfg.n_quality, seed), class_labels(cfg.n_quality), spec.nfe, seed
        )
        return x, {"nfe": float(counter.nfe)}

    noise, labels = sizes.latency_inputs(cfg.batch_latency)
    config: dict[str, Any] = {"method": spec.method, "nfe": spec.nfe}
    if spec.method == "ddpm-reference":
        config |= {"samples": cfg.n_quality, "seeds": cfg.ref_seeds}
    return Variant(
        spec.id,
        config,
        spec.role,  # type: ignore[arg-type]
        sample=sample,  # type: ignore[arg-type]
        timed=(lambda: run(eps, noise, labels, spec.nfe, sizes.LATENCY_SEED))
        if spec.timed
        else None,
    )


def aims(cfg: Config) -> tuple[QualityAim, ...]:
    """(1) for each solver against DDIM at its NFE, (2) and (3) for the headline."""
    h, b = cfg.headline_nfe, cfg.baseline_nfe
    beats = tuple(
        QualityAim(
            f"beats-control-{s}",  # one message per solver (a parameter cannot be a name)
            f"{s}-{h}",
            f"ddim-{h}",
            FIDELITY,
            "<",
            CONTROL_AIM,
            params={"nfe": h},
        )
        for s in TECHNIQUES
        if s in cfg.schedulers
    )
    params = {"nfe": h, "baseline_nfe": b}
    head = f"dpmpp2m-{h}"
    return (
        *beats,
        QualityAim("fidelity", head, f"ddim-{b}", FIDELITY, "<=", FIDELITY_AIM, params=params),
        QualityAim(
            "quality", head, f"ddim-{b}", "fd_digits", "<=", QUALITY_TOLERANCE, params=params
        ),
    )


def nfe_ratio(m: Measured) -> float:
    """(4): the counted network evaluations of the baseline over the headline's."""
    base, head = m.comparison.baseline, m.comparison.headline.row
    return m.table.summary(base, "nfe").value / m.table.summary(head, "nfe").value
