"""reference.consistency_latent_diffusion: boundary scalings, grids, solver, sampler (diffusers),
the latent teacher on the harness's ODE, and the benchmark's declared comparison."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from diffusers import LCMScheduler
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import zoo
from reference.consistency_latent_diffusion import (
    MAX_TIMESTEP,
    boundary_scalings,
    consistency_distillation_loss,
    consistency_fn,
    consistency_sample,
    ddim_solver_step,
    ema_update,
    lcm_scheduler,
    sampling_timesteps,
    skipping_timesteps,
)
from reference.consistency_latent_diffusion.bench import FULL, QUICK
from reference.consistency_latent_diffusion.latent_ode import baseline_grid, solve_latent
from reference.harness import (
    LATENT_SHAPE,
    count_nfe,
    make_noise,
    model_eps_fn,
    sample,
)
from reference.zoo.specs import SPECS


def toy_eps(z: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return 0.9 * z + 1e-4 * t.float().view(-1, 1, 1, 1) + 0.02 * labels.float().view(-1, 1, 1, 1)


@pytest.fixture(scope="module")
def net() -> torch.nn.Module:
    torch.manual_seed(0)  # an untrained network of the zoo latent teacher's architecture
    return SPECS["latent_teacher"].build_model().eval()


def acp() -> torch.Tensor:
    return zoo.teacher_scheduler().alphas_cumprod


def test_boundary_condition_is_the_identity_at_zero() -> None:
    c_skip, c_out = boundary_scalings(0)
    # exact by construction in IEEE arithmetic: s^2 / s^2 = 1 and 0 / x = 0
    assert c_skip.item() == 1.0 and c_out.item() == 0.0
    z = torch.randn((3, *LATENT_SHAPE))
    out = consistency_fn(
        toy_eps, z, torch.zeros(3, dtype=torch.long), torch.tensor([0, 5, 10]), acp()
    )
    assert torch.equal(out, z)  # exact by construction: 1 * z + 0 * x0 is z bit for bit


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=999))
def test_boundary_scalings_interpolate_skip_and_network(t: int) -> None:
    c_skip, c_out = boundary_scalings(t)
    c_skip_prev, _ = boundary_scalings(t - 1)
    assert 0 < c_skip.item() < c_skip_prev.item() <= 1 and 0 < c_out.item() <= 1
    # LCM's pair satisfies c_skip + c_out^2 = 1 at every t
    # float32: c_skip and c_out^2 carry <= 3 and 6 roundings of eps32 / 2, |sum - 1| <= 4e-7
    assert abs(c_skip.item() + c_out.item() ** 2 - 1) < 1e-6


def test_grid_and_sampling_timesteps_follow_lcm_rules() -> None:
    assert skipping_timesteps()[[0, 1, -1]].tolist() == [19, 39, MAX_TIMESTEP]
    # LCMScheduler's own selection rule on the same 49-point grid (k = 980 // 49 = 20):
    oracle = LCMScheduler(num_train_timesteps=980, original_inference_steps=49)
    for steps in (1, 2, 3, 4, 8, 49):
        oracle.set_timesteps(steps)
        assert sampling_timesteps(steps) == oracle.timesteps.tolist()
    assert sampling_timesteps(2) == [979, 499]
    with pytest.raises(ValueError, match=r"steps must be in \[1, 49\]"):
        sampling_timesteps(0)


def test_ddim_solver_step_is_diffusers_ddim_on_latents() -> None:
    ref = zoo.latent_scheduler()
    ref.set_timesteps(50)  # step 980 -> 960
    z, labels = 3 * torch.randn((2, *LATENT_SHAPE)), torch.tensor([4, 10])
    t = torch.full((2,), 980)
    expected = ref.step(toy_eps(z, t, labels), 980, z).prev_sample
    got = ddim_solver_step(toy_eps, z, t, t - 20, labels, ref.alphas_cumprod)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("steps", [1, 2, 4])
def test_sampler_equals_diffusers_lcm_scheduler(net: torch.nn.Module, steps: int) -> None:
    noise, labels = make_noise(3, 7, LATENT_SHAPE), torch.tensor([2, 9, 10])
    counter = count_nfe(model_eps_fn(net))
    ours = consistency_sample(counter, noise, labels, acp(), steps, seed=11)
    theirs = sample(
        model_eps_fn(net),
        lcm_scheduler(steps),
        noise,
        steps=steps,
        labels=labels,
        seed=11,
        clamp=False,
    )
    assert counter.nfe == steps
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_distillation_loss_trains_the_online_network_only(net: torch.nn.Module) -> None:
    online, target = SPECS["latent_teacher"].build_model(), SPECS["latent_teacher"].build_model()
    online.load_state_dict(net.state_dict())
    target.load_state_dict(net.state_dict())
    for p in target.parameters():
        p.requires_grad_(False)
    torch.manual_seed(0)
    z0, labels = torch.randn((6, *LATENT_SHAPE)), torch.tensor([0, 1, 2, 3, 4, 10])
    loss = consistency_distillation_loss(
        model_eps_fn(online), model_eps_fn(target), model_eps_fn(net), z0, labels, acp()
    )
    loss.backward()
    assert torch.isfinite(loss) and loss.item() > 0
    assert all(p.grad is None for p in net.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in online.parameters())


def test_ema_update_is_a_lerp_towards_the_online_weights() -> None:
    target, online = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    before = target.weight.detach().clone()
    ema_update(target, online, mu=0.95)
    torch.testing.assert_close(target.weight, 0.95 * before + 0.05 * online.weight.detach())


def point_mass_eps(c: torch.Tensor) -> Any:
    """The exact noise prediction of data that is the single latent ``c``: x̂₀ = c at every t."""

    def eps(z: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        abar = acp()[t.long()].view(-1, 1, 1, 1)
        return (z - abar.sqrt() * c) / (1 - abar).sqrt()

    return eps


def test_the_baseline_grid_is_the_harness_rule_capped_at_979() -> None:
    from reference.harness import ode

    grid = baseline_grid(50)
    assert len(grid) == 50 and grid[0] == MAX_TIMESTEP and grid[-1] == 19
    assert grid == sorted(set(grid), reverse=True)  # distinct and decreasing
    # the harness's own trailing rule, on 980 timesteps instead of 1000
    assert grid == ode.grid(50, MAX_TIMESTEP + 1).tolist()
    assert baseline_grid(49) == skipping_timesteps()[::-1].tolist()  # the distillation grid


def test_an_unclipped_first_step_from_999_magnifies_the_noise_error_630_fold() -> None:
    """Why the latent grid starts at 979: on the harness's trailing grid (first step 999 -> 979)
    an error of the predicted noise passes through the unclipped DDIM step multiplied by about
    √(ᾱ_979 / ᾱ_999); from 979 on, the first step does not magnify it."""
    from reference.harness import ode

    a = ode.schedule().alphas_cumprod
    z, delta = torch.randn((2, *LATENT_SHAPE), generator=torch.Generator().manual_seed(0)), 1e-3

    def step_change(t: int, s: int) -> float:
        def one_step(eps: torch.Tensor) -> torch.Tensor:
            return ode.ddim_step(z, ode.clipped_x0(z, eps, a[t], clip=False), a[t], a[s])

        return float((one_step(z + delta) - one_step(z)).abs().mean() / delta)

    gain = float((a[979] / a[999]).sqrt())
    assert 600 < gain < 700
    # float32: z and the step's terms are O(600), their difference carries ~1e-4 of rounding
    assert step_change(999, 979) == pytest.approx(gain - 1, rel=0.01)
    assert step_change(979, 959) < 2.0


def test_latent_ddim_is_the_harness_solver_without_clipping() -> None:
    from reference.harness import ode

    noise, labels = make_noise(4, 3, LATENT_SHAPE), torch.tensor([0, 1, 2, 10])
    theirs = ode.solve(toy_eps, noise, steps=10, labels=labels, clip=False)
    ours = solve_latent(toy_eps, noise, labels, ode.grid(10).tolist())
    # the same operations in the same order on the same grid: equal to float32 rounding
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sampler", ["ddim", "dpmpp2m"])
@pytest.mark.parametrize("steps", [1, 2, 4])
def test_latent_samplers_return_the_data_point_of_an_exact_denoiser(
    sampler: str, steps: int
) -> None:
    c = 2.5 * torch.randn((1, *LATENT_SHAPE), generator=torch.Generator().manual_seed(0))
    noise, labels = make_noise(3, 1, LATENT_SHAPE), torch.tensor([1, 2, 3])
    z0 = solve_latent(point_mass_eps(c), noise, labels, sampling_timesteps(steps), sampler)
    # every x̂₀ is c, so every step of the ODE lands on the line through c; the last one is c
    # itself, up to float32 rounding of ε = (z - √ᾱ c)/√(1-ᾱ) and back (√ᾱ_979 = 0.031: ~1e-5)
    torch.testing.assert_close(z0, c.expand_as(noise), rtol=1e-4, atol=1e-4)


def test_latent_solver_refuses_unknown_samplers_and_unordered_timesteps() -> None:
    z, y = make_noise(1, 0, LATENT_SHAPE), torch.tensor([0])
    with pytest.raises(ValueError, match="unknown latent sampler 'euler'"):
        solve_latent(toy_eps, z, y, [979], "euler")
    with pytest.raises(ValueError, match="distinct and decreasing"):
        solve_latent(toy_eps, z, y, [499, 979])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "0"], "--steps"),
        (["--steps", "50"], "--steps"),  # the consistency grid has 49 timesteps
        (["--steps", "1,2", "--headline-steps", "4"], "--headline-steps 4 is not one of"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),  # class-balanced samples
        (["--seeds", "3"], "--seeds"),  # one seed has no interval
        (["--warmup", "-1"], "--warmup"),
    ],
)
def test_bad_options_are_one_line_before_any_model_loads(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.consistency_latent_diffusion import bench

    monkeypatch.setattr(bench, "_models", lambda: pytest.fail("a model was loaded"))
    assert message in refused_in_one_line("reference.consistency_latent_diffusion", args)


def test_full_run_measures_the_held_out_size_on_five_paired_seeds() -> None:
    from reference.harness.scores import MAX_REAL_N

    assert FULL.n_quality == 140 <= MAX_REAL_N and len(FULL.seeds) == 5
    assert FULL.repeats >= 15 and FULL.warmup >= 1
    assert FULL.headline_steps == 4 and FULL.steps == (1, 2, 4)


def toy_models() -> Any:
    from reference.consistency_latent_diffusion.bench import Models

    return Models(toy_eps, toy_eps, lambda z: z.reshape(z.shape[0], 1, 8, 8))


def test_every_kept_step_count_has_its_control_and_its_aim() -> None:
    from reference.consistency_latent_diffusion.bench import comparison

    c = comparison(dataclasses.replace(QUICK, steps=(1, 2, 4)), toy_models())
    roles = {v.id: v.role for v in c.variants}
    assert roles == {
        "ddim50": "baseline",
        **{f"cm{n}": "technique" for n in (1, 2, 4)},
        **{f"dpm{n}": "control" for n in (1, 2, 4)},
    }
    beats = [(a.row, a.against, a.comparison, a.target) for a in c.aims if a.id == "beats-control"]
    assert beats == [(f"cm{n}", f"dpm{n}", "<", 1.0) for n in (1, 2, 4)]
    quality = next(a for a in c.aims if a.id == "quality")
    assert (quality.row, quality.against, quality.target) == ("cm4", "ddim50", 1.1)
    assert c.headline.row == "cm4" and c.headline.quality == "fd_digits"


def test_the_stochastic_sampler_is_paired_by_the_quality_seed() -> None:
    """The consistency row's re-noising follows the seed it is sampled on (pairing), and each
    row counts its network calls while sampling."""
    from reference.consistency_latent_diffusion.bench import comparison

    c = comparison(dataclasses.replace(QUICK, steps=(2,), headline_steps=2), toy_models())
    cm2, dpm2 = c.variant("cm2"), c.variant("dpm2")
    (a, nfe), (b, _), (other, _) = (cm2.sample(seed) for seed in (5, 5, 6))
    torch.testing.assert_close(a, b)
    assert not torch.allclose(a, other)
    assert nfe == {"nfe": 2.0} and dpm2.sample(5)[1] == {"nfe": 2.0}
    assert c.variant("ddim50").sample(5)[1] == {"nfe": 50.0}


@pytest.mark.slow
def test_quick_benchmark_judges_the_model_at_the_same_steps_with_a_counted_limit(
    quick_result,
) -> None:
    result = quick_result("consistency-latent-diffusion")
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    assert rows["real"]["config"]["n"] == result["settings"]["n_quality"]
    for key in ("ddim50", "cm1", "cm4", "dpm1", "dpm4"):
        assert len(rows[key]["seeds"]["fd_digits"]) == len(result["settings"]["seeds"])
        assert {"fd_digits", "kid_digits", "accuracy"} <= set(rows[key]["intervals"])
        # the baseline's speedup is 1 by definition, so only the others carry an interval
        assert ("speedup" in rows[key]["intervals"]) == (key != "ddim50")
    beats = [a for a in result["aims"] if a["id"] == "beats-control"]
    assert [(a["row"], a["against"]) for a in beats] == [("cm1", "dpm1"), ("cm4", "dpm4")]
    assert {a["id"] for a in result["aims"]} == {"beats-control", "quality"}
    assert all(a["interval"] is not None for a in result["aims"])
    head = result["headline"]
    # the limit is the counted NFE ratio, not a figure from the run's medians
    nfe = rows["ddim50"]["values"]["nfe"] / rows["cm4"]["values"]["nfe"]
    assert head["row"] == "cm4" and head["limit_kind"] == "estimate"
    assert head["speedup_limit"] == nfe == 12.5
    assert head["quality_metric"] == "fd_digits" and head["quality_interval"] is not None
    # the decoder stated apart: its own timing rounds, the denoise rows without quality
    assert rows["decode"]["rounds"]["against"] == "decode"
    assert rows["cm4-denoise"]["rounds"]["against"] == "ddim50-denoise"
    assert "fd_digits" not in rows["cm4-denoise"]["values"]
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "limits", "decoder-cost", "denoise-speedup", "latent-grid"} <= set(
        notes
    )
    assert notes["decoder-cost"]["decode_mflops"] > 0 and notes["decoder-cost"]["unet_mflops"] > 0
    assert notes["decoder-cost"]["decode_ms"] == rows["decode"]["values"]["latency_ms"]
    assert notes["denoise-speedup"]["speedup"] == rows["cm4-denoise"]["values"]["speedup"]
    assert notes["latent-grid"]["gain"] > 600  # √(ᾱ_979 / ᾱ_999) on the zoo's schedule
