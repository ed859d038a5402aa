"""reference.scheduler_tradeoff: our DDIM and DPM-Solver++(2M) against diffusers step for step,
against the exact probability-flow ODE of Gaussian data, NFE accounting, the shared solver
settings, the options' errors, and what the quick benchmark reports."""

from __future__ import annotations

import math

import pytest
import torch

from reference import scheduler_tradeoff as sch
from reference.scheduler_tradeoff import bench

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
        ({"schedulers": ("heun",)}, "--schedulers: unknown scheduler 'heun'; choose from ddpm"),
        ({"schedulers": ("ddim", "euler")}, "--schedulers must include ddim and dpmpp2m"),
        ({"nfe_grid": (0, 10, 50)}, "--nfe-grid must be in [1, 1000], got 0"),
        ({"nfe_grid": (1, 2, 50)}, "--headline-nfe 10 is not one of --nfe-grid"),
        ({"headline_nfe": 50}, "--headline-nfe must be >= 1 and below --baseline-nfe 50"),
        ({"samples": 10}, "--samples must be >= 20 (two per class), got 10"),
        ({"ref_samples": 300}, "--ref-samples must be in [20, --samples 256], got 300"),
        ({"seeds": (0,)}, "--seeds needs at least 2 distinct non-negative seeds"),
        ({"ref_seeds": 6}, "--ref-seeds must be in [2, 5 seeds], got 6"),
        ({"repeats": 1}, "--repeats must be >= 2, got 1"),
    ],
)
def test_bad_options_give_one_clear_error(change: dict, message: str) -> None:
    import dataclasses

    with pytest.raises(ValueError) as info:
        dataclasses.replace(bench.FULL, **change).validate()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    for cfg in (bench.FULL, bench.QUICK, bench.DEMO):
        cfg.validate()


def test_command_line_rejects_a_bad_option_before_any_work(capsys) -> None:
    from reference.harness.cli import main

    with pytest.raises(SystemExit) as info:
        main("reference.scheduler_tradeoff", ["--bench", "--nfe-grid", "0,10,50"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("error: --nfe-grid must be in [1, 1000], got 0") and "\n" not in err


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


def test_runs_are_remembered_by_their_settings() -> None:
    from reference.scheduler_tradeoff.sweep import Runs

    class Zero(torch.nn.Module):  # a denoiser that predicts eps = 0
        def forward(self, x, t, class_labels=None, return_dict=False):
            return (torch.zeros_like(x),)

    runs = Runs(Zero())
    a = runs.get("ddim", 2, seed=3, n=20)
    assert runs.get("ddim", 2, seed=3, n=20) is a and a.nfe == 2
    assert not torch.equal(runs.get("ddim", 2, seed=4, n=20).samples, a.samples)
    assert runs.get("ddim", 2, seed=3, n=20, clip=False) is not a


@pytest.mark.slow
def test_quick_benchmark_pairs_seeds_and_calls_the_nfe_ratio_an_estimate(quick_result) -> None:
    result = quick_result("scheduler-tradeoff")
    cfg = result["settings"]
    h, b = cfg["headline_nfe"], cfg["baseline_nfe"]
    rows = {r["id"]: r for r in result["rows"]}
    assert rows[f"ddim-{b}"]["role"] == "baseline" and rows[f"ddim-{h}"]["role"] == "control"
    for key in (f"ddim-{b}", f"dpmpp2m-{h}", f"unipc-{h}", f"ddim-{h}", f"ddim-{h}-unclipped"):
        for metric in ("fd_digits", "kid_digits"):
            assert len(rows[key]["seeds"][metric]) == len(cfg["seeds"]), (key, metric)
    for key in (f"dpmpp2m-{h}", f"ddim-{h}", f"euler-{h}"):  # timed, with intervals
        assert "speedup" in rows[key]["intervals"]
    assert rows["real"]["role"] == "reference"
    ref = rows[f"ddpm-{cfg['ref_steps']}"]
    assert ref["role"] == "reference" and len(ref["seeds"]["fd_digits"]) == cfg["ref_seeds"]
    head = result["headline"]
    assert head["limit_kind"] == "estimate" and head["speedup_limit"] == pytest.approx(b / h)
    assert head["quality_interval"] is not None and result["anomalies"] == []
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"quality", "quality-vs-control"}
    assert all(a["interval"] is not None for a in aims.values())
    assert aims["quality-vs-control"]["against"] == f"ddim-{h}"
    assert rows[aims["quality-vs-control"]["against"]]["role"] == "control"
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert notes["ours-vs-diffusers"]["ddim_step"] <= 1e-5
    assert notes["ours-vs-diffusers"]["dpm_step"] <= 1e-5
    assert len(notes["nfe-to-match"]["reach"]) == len(cfg["schedulers"])
    assert "quality-protocol" in notes and "latency-protocol" in notes
