"""reference.scheduler_tradeoff: our DDIM and DPM-Solver++(2M) against diffusers step for step,
against the exact probability-flow ODE of Gaussian data, NFE accounting, the shared solver
settings, the options' errors, and what the quick benchmark reports."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from reference import scheduler_tradeoff as sch
from reference.scheduler_tradeoff import bench, rows

MU, S2 = 0.3, 0.25  # data x0 ~ N(MU, S2) per pixel: the exact denoiser is known


def gaussian_eps_fn(abar: torch.Tensor):
    """E[eps | x_t] for x0 ~ N(MU, S2): sqrt(1 - a) (x - sqrt(a) MU) / (a S2 + 1 - a)."""

    def eps_fn(x: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        a = abar[t.long()].view(-1, 1, 1, 1).to(x.dtype)
        return (1 - a).sqrt() * (x - a.sqrt() * MU) / (a * S2 + 1 - a)

    return eps_fn


def _abar() -> torch.Tensor:
    return sch.make_scheduler("ddim").alphas_cumprod.to(torch.float64)


@pytest.mark.parametrize("n", [1, 7, 15, 50, 1000])
def test_trailing_timesteps_equal_diffusers(n: int) -> None:
    ours = sch.trailing_timesteps(n)
    assert ours[0] == 999 and len(ours) == n and bool((ours[:-1] > ours[1:]).all())
    for name in ("ddim", "dpmpp2m", "unipc", "ddpm"):
        theirs = sch.make_scheduler(name)
        theirs.set_timesteps(n)
        assert torch.equal(ours, theirs.timesteps.to(torch.int64)), name


@pytest.mark.parametrize("name", ["ddim", "dpmpp2m"])
@pytest.mark.parametrize("clip", [False, True])
def test_minimal_schedulers_equal_diffusers_step_for_step(name: str, clip: bool) -> None:
    noise = torch.randn(6, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    eps_fn = gaussian_eps_fn(_abar())
    for n in (1, 2, 4, 10, 50):  # N dividing 1000: see the module's pitfalls
        ours, theirs = sch.make_minimal(name, clip=clip), sch.make_scheduler(name, clip=clip)
        assert sch.max_step_difference(ours, theirs, eps_fn, noise, n) <= 1e-5, n


def test_minimal_schedulers_equal_diffusers_on_a_unet() -> None:
    from reference.harness import model_eps_fn
    from reference.zoo import SPECS

    torch.manual_seed(0)
    unet = SPECS["teacher"].build_model().eval()
    noise = torch.randn(3, 1, 16, 16, generator=torch.Generator().manual_seed(1))
    eps_fn = model_eps_fn(unet)
    for name in ("ddim", "dpmpp2m"):
        diff = sch.max_step_difference(
            sch.make_minimal(name), sch.make_scheduler(name), eps_fn, noise, 5
        )
        assert diff <= 1e-5, name


def _exact_x0(noise: torch.Tensor, abar_t: float) -> torch.Tensor:
    # The probability-flow ODE of Gaussian data is linear:
    # x0 = MU + s (x_T - a MU) / sqrt(a^2 s^2 + 1 - a^2), with a = sqrt(abar_T)
    a = math.sqrt(abar_t)
    return MU + math.sqrt(S2) * (noise - a * MU) / math.sqrt(abar_t * S2 + 1 - abar_t)


def _ode_error(name: str, n: int, noise: torch.Tensor) -> float:
    abar = _abar()
    scheduler = sch.make_minimal(name, clip=False)
    scheduler.set_timesteps(n)
    x = noise.double()
    eps_fn = gaussian_eps_fn(abar)
    for t in scheduler.timesteps:
        x = scheduler.step(eps_fn(x, t.expand(len(x)), t.expand(len(x))), t, x).prev_sample
    return float((x - _exact_x0(noise.double(), float(abar[999]))).abs().max())


def test_solvers_converge_to_the_exact_ode_solution_and_dpmpp_converges_faster() -> None:
    noise = torch.randn(64, 1, 4, 4, generator=torch.Generator().manual_seed(2))
    ddim = [_ode_error("ddim", n, noise) for n in (10, 20, 40)]
    dpm = [_ode_error("dpmpp2m", n, noise) for n in (10, 20, 40)]
    assert ddim[0] > ddim[1] > ddim[2] and dpm[0] > dpm[1] > dpm[2]
    assert all(d < e for d, e in zip(dpm, ddim, strict=True))
    # DDIM is first order: halving the step size halves the error.
    assert 1.7 < ddim[1] / ddim[2] < 2.3
    # DPM-Solver++(2M) is far more accurate at equal NFE (its first and last steps are first
    # order, so the asymptotic rate is not a clean 4x per halving on 1000 discrete timesteps).
    assert dpm[1] < ddim[1] / 10


@pytest.mark.parametrize("name", list(sch.SCHEDULERS))
def test_every_scheduler_calls_the_model_once_per_step(name: str) -> None:
    from reference.harness import count_nfe, sample

    eps = count_nfe(gaussian_eps_fn(_abar()))
    noise = torch.randn(2, 1, 16, 16, generator=torch.Generator().manual_seed(3))
    for n in (1, 3, 10):
        eps.nfe = 0
        x = sample(eps, sch.make_scheduler(name), noise, steps=n)
        assert eps.nfe == n * sch.model_calls_per_step(name) and torch.isfinite(x).all()


def test_minimal_scheduler_rejects_a_wrong_timestep() -> None:
    s = sch.make_minimal("ddim")
    s.set_timesteps(4)
    x = torch.zeros(1, 1, 2, 2)
    with pytest.raises(ValueError, match="expected timestep 999"):
        s.step(x, torch.tensor(500), x)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schedulers": ("ddim", "euler")}, "--schedulers must include ddim and dpmpp2m"),
        ({"nfe_grid": (1, 2, 50)}, "--headline-nfe 10 is not one of --nfe-grid"),
        ({"headline_nfe": 50}, "--headline-nfe must be below --baseline-nfe 50, got 50"),
        ({"n_quality": 25}, "--n-quality must be a multiple of 10 (classes), got 25"),
        ({"ref_seeds": 6}, "--ref-seeds must be at most the 5 seeds, got 6"),
        ({"ref_steps": 10}, "--ref-steps must be above --headline-nfe 10, got 10"),
    ],
)
def test_bad_options_give_one_clear_error(change: dict, message: str) -> None:
    import dataclasses

    with pytest.raises(ValueError) as info:
        dataclasses.replace(bench.FULL, **change).validate()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    for cfg in (bench.FULL, bench.QUICK, bench.DEMO):
        cfg.validate()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nfe-grid", "0,10,50"], "--nfe-grid"),
        (["--schedulers", "ddim,heun"], "unknown value 'heun'"),
        (["--n-quality", "150"], "--n-quality"),
        (["--seeds", "0,99999999999999999999"], "--seeds"),
        (["--headline-nfe", "50"], "--headline-nfe must be below --baseline-nfe 50"),
    ],
)
def test_command_line_rejects_a_bad_option_before_any_work(
    args: list[str], message: str, refused_in_one_line, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "measure", lambda cfg, staging: pytest.fail("the benchmark started"))
    assert message in refused_in_one_line("reference.scheduler_tradeoff", args)


@pytest.mark.parametrize("name", list(sch.SCHEDULERS))
def test_solver_settings_are_what_make_scheduler_builds(name: str) -> None:
    from reference.harness.schedulers import make_scheduler as make_harness_scheduler

    cls, cfg = sch.solver_settings(name)
    scheduler = sch.make_scheduler(name)
    assert type(scheduler).__name__ == cls and cfg["timestep_spacing"] == "trailing"
    for key, value in cfg.items():
        assert scheduler.config[key] == value, key
    harness = make_harness_scheduler(name)
    assert type(harness) is type(scheduler) and dict(harness.config) == dict(scheduler.config)
    _, unclipped = sch.solver_settings(name, clip=False)
    assert not unclipped.get("clip_sample", False) and not unclipped.get("thresholding", False)
    if name in ("dpmpp2m", "unipc"):  # x0 thresholding at 1.0 and the last step to sigma = 0
        assert cfg["thresholding"] and cfg["sample_max_value"] == 1.0
        assert cfg["final_sigmas_type"] == "zero"


class Zero(torch.nn.Module):
    """A denoiser that predicts ε = 0: x̂₀ = x_t / √ᾱ, clipped to [-1, 1] wherever it is large."""

    def forward(self, x, t, class_labels=None, return_dict=False):
        return (torch.zeros_like(x),)


class Half(torch.nn.Module):
    """A denoiser that predicts ε = x_t / 2."""

    def forward(self, x, t, class_labels=None, return_dict=False):
        return (0.5 * x,)


def test_the_rows_declare_one_baseline_the_solvers_their_control_and_the_references() -> None:
    cfg = bench.FULL
    specs = {s.id: s for s in rows.specs(cfg)}
    assert next(iter(specs)) == "ddim-50" and specs["ddim-50"].role == "baseline"
    assert {k for k, s in specs.items() if s.role == "technique"} == {"dpmpp2m-10", "unipc-10"}
    assert [k for k, s in specs.items() if s.role == "control"] == ["ddim-10"]
    assert {k: s.mode for k, s in specs.items() if s.role == "reference"} == {
        "euler-10": "ode",
        "ddim-10-unclipped": "unclipped",
        "ddim-50-diffusers": "diffusers",
        "ddim-10-diffusers": "diffusers",
    }
    # every timed row runs on the clipped ODE; the references that show what differs are not timed
    assert all(s.mode == "ode" for s in specs.values() if s.timed)
    ancestral = {s.id: s for s in rows.ancestral_specs(cfg)}
    assert list(ancestral) == ["ddim-50-ref", "ddpm-10", "ddpm-1000"]
    assert ancestral["ddim-50-ref"].role == "baseline" and ancestral["ddim-50-ref"].mode == "ode"
    assert all(s.mode == "ancestral" for k, s in ancestral.items() if k.startswith("ddpm"))
    fewer = {s.id for s in rows.specs(dataclasses.replace(cfg, schedulers=("ddim", "dpmpp2m")))}
    assert "unipc-10" not in fewer and "euler-10" not in fewer and "ddim-10" in fewer


def test_the_aims_judge_fidelity_against_the_control_and_quality_against_the_baseline() -> None:
    from reference.harness.compare import FIDELITY

    aims = [(a.id, a.row, a.against, a.metric, a.target) for a in rows.aims(bench.FULL)]
    assert aims == [
        ("beats-control-dpmpp2m", "dpmpp2m-10", "ddim-10", FIDELITY, 1.0),
        ("beats-control-unipc", "unipc-10", "ddim-10", FIDELITY, 1.0),
        ("fidelity", "dpmpp2m-10", "ddim-50", FIDELITY, 1.0),
        ("quality", "dpmpp2m-10", "ddim-50", "fd_digits", 1.1),
    ]


@pytest.mark.parametrize("mode", ["ode", "unclipped", "diffusers", "ancestral"])
def test_every_row_counts_its_network_calls_and_is_a_function_of_its_seed(mode: str) -> None:
    cfg = dataclasses.replace(bench.QUICK, n_quality=20, batch_latency=2)
    name = "ddpm" if mode == "ancestral" else "ddim"
    spec = rows.Spec("row", name, 3, mode, "reference", True, name)  # type: ignore[arg-type]
    v = rows.variant(cfg, spec, Zero())
    (a, counted), (b, _), (other, _) = v.sample(5), v.sample(5), v.sample(6)
    assert counted == {"nfe": 3.0} and a.shape == (20, 1, 16, 16)
    torch.testing.assert_close(a, b)
    assert not torch.allclose(a, other)
    assert v.timed is not None and v.timed().shape == (2, 1, 16, 16)


def test_the_ode_rows_are_the_harness_solver_and_diffusers_ddim_is_not() -> None:
    from reference.harness import class_labels, make_noise, model_eps_fn, ode

    eps, noise, labels = model_eps_fn(Zero()), make_noise(20, 0), class_labels(20)
    for name in ("ddim", "dpmpp2m", "unipc", "euler"):
        ours = sch.runner(name, "ode")(eps, noise, labels, 4, 0)
        torch.testing.assert_close(
            ours, ode.solve(eps, noise, sampler=name, steps=4, labels=labels)
        )
    # ε = x_t / 2 makes x̂₀ about x_t / (2√ᾱ), clipped wherever ᾱ is small: diffusers' DDIM keeps
    # the raw ε in its step (eq. (3) of the samplers module), the clipped ODE the consistent one,
    # and the two drift further apart the more steps they take
    eps = model_eps_fn(Half())
    gaps = [
        float((sch.runner("ddim", "diffusers")(eps, noise, labels, k, 0)
               - sch.runner("ddim", "ode")(eps, noise, labels, k, 0)).abs().mean())
        for k in (4, 10, 50)
    ]  # fmt: skip
    assert 0.05 < gaps[0] < gaps[1] < gaps[2]
    with pytest.raises(ValueError, match="not an ODE sampler"):
        sch.runner("ddpm", "ode")


def test_the_sweep_has_a_fidelity_for_the_ode_samplers_only() -> None:
    from reference.harness import class_labels, make_noise, model_eps_fn, ode
    from reference.scheduler_tradeoff.sweep import curves, nfe_to_match, sweep

    eps, noise, labels = model_eps_fn(Zero()), make_noise(20, 0), class_labels(20)
    solution = ode.solve(eps, noise, sampler="dpmpp2m", steps=20, labels=labels)

    def score(x: torch.Tensor, same: object) -> dict[str, float]:
        return {"fd_digits": float(x.abs().mean())}

    points = sweep(eps, ("ddpm", "ddim"), (1, 2), noise, labels, 0, score, solution)
    assert [(p.scheduler, p.nfe) for p in points] == [
        ("ddpm", 1),
        ("ddpm", 2),
        ("ddim", 1),
        ("ddim", 2),
    ]
    assert [p.rms_to_solution is None for p in points] == [True, True, False, False]
    rms = curves(points, ("ddpm", "ddim"), "rms_to_solution")
    assert rms[0] == [None, None] and all(v >= 0 for v in rms[1])
    assert (
        nfe_to_match(points, "ddim", math.inf) == 1 and nfe_to_match(points, "ddim", -1.0) is None
    )


@pytest.mark.slow
def test_quick_benchmark_judges_fidelity_with_a_counted_limit(quick_result) -> None:
    from reference.harness.compare import FIDELITY

    result = quick_result("scheduler-tradeoff")
    cfg = result["settings"]
    h, b = cfg["headline_nfe"], cfg["baseline_nfe"]
    rows = {r["id"]: r for r in result["rows"]}
    assert rows[f"ddim-{b}"]["role"] == "baseline" and rows[f"ddim-{h}"]["role"] == "control"
    ode_rows = (f"ddim-{b}", f"dpmpp2m-{h}", f"unipc-{h}", f"ddim-{h}", f"euler-{h}")
    for key in (*ode_rows, f"ddim-{h}-unclipped", f"ddim-{b}-diffusers", f"ddim-{h}-diffusers"):
        for metric in ("fd_digits", "kid_digits", FIDELITY):
            assert len(rows[key]["seeds"][metric]) == len(cfg["seeds"]), (key, metric)
    for key in ode_rows[1:]:  # timed against the baseline, in the same rounds
        assert "speedup" in rows[key]["intervals"] and rows[key]["rounds"]["against"] == f"ddim-{b}"
    for key in (f"ddpm-{h}", f"ddpm-{cfg['ref_steps']}"):  # stochastic: no fidelity
        assert FIDELITY not in rows[key]["values"]
        assert len(rows[key]["seeds"]["fd_digits"]) == cfg["ref_seeds"]
    assert rows["real"]["role"] == "reference" and rows["real"]["config"]["n"] == cfg["n_quality"]
    head = result["headline"]
    assert head["row"] == f"dpmpp2m-{h}" and head["quality_metric"] == FIDELITY
    assert head["limit_kind"] == "estimate" and head["speedup_limit"] == pytest.approx(b / h)
    assert {a["id"] for a in result["aims"]} == {
        "beats-control-dpmpp2m",
        "beats-control-unipc",
        "fidelity",
        "quality",
    }
    assert all(a["interval"] is not None for a in result["aims"])
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert notes["ours-vs-diffusers"]["ddim_step"] <= 1e-5
    assert notes["ours-vs-diffusers"]["dpm_step"] <= 1e-5
    assert len(notes["nfe-to-match"]["reach"]) == len(cfg["schedulers"])
    drift = notes["diffusers-drift"]
    assert drift["ode_b"] == pytest.approx(rows[f"ddim-{b}"]["values"][FIDELITY])
    assert {"quality-protocol", "held-out-reference", "ddpm-reference", "latency-protocol"} <= set(
        notes
    )
    sweep = cfg["sweep_rms_to_solution"]
    assert len(sweep) == len(cfg["schedulers"]) and all(
        len(c) == len(cfg["nfe_grid"]) for c in sweep
    )
    assert all(v is None for v in sweep[cfg["schedulers"].index("ddpm")])
