"""reference.consistency_latent_diffusion: boundary scalings, grids, solver, sampler (diffusers)."""

from __future__ import annotations

import dataclasses

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
from reference.consistency_latent_diffusion.bench import FULL
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


@pytest.mark.parametrize(
    "change, message",
    [
        ({"cm_steps": (0,)}, r"--cm-steps must be in \[1, 49\]"),
        ({"control_steps": (50,)}, r"--control-steps must be in \[1, 49\]"),
        ({"n": 3}, "--n must be >= 10, got 3"),
        ({"warmup": -1}, "--warmup must be >= 0, got -1"),
        ({"cm_steps": (1, 4)}, "--headline-steps 2 is not one of --cm-steps"),
    ],
)
def test_bad_options_fail_with_one_line_naming_the_option(change: dict, message: str) -> None:
    cfg = dataclasses.replace(FULL, **change)
    with pytest.raises(ValueError, match=message) as exc:
        cfg.validate()
    assert "\n" not in str(exc.value)


def test_full_run_measures_paired_seeds_at_the_shared_sample_size() -> None:
    from reference.harness.seeds import N_QUALITY, SEEDS

    assert FULL.n == N_QUALITY and FULL.seeds == SEEDS
    assert FULL.repeats >= 15 and FULL.warmup >= 1


def test_the_stochastic_sampler_is_paired_by_the_quality_seed() -> None:
    """The consistency row's re-noising follows the seed it is sampled on (pairing)."""
    from reference.consistency_latent_diffusion.bench import make_runs

    runs = make_runs(dataclasses.replace(FULL, cm_steps=(2,), control_steps=(2,)), toy_eps, toy_eps)
    noise, labels = make_noise(3, 0, (4, 4, 4)), torch.tensor([1, 2, 3])
    same = [runs(noise, labels, seed, lambda k, f: f)["cm2"]() for seed in (5, 5, 6)]
    torch.testing.assert_close(same[0], same[1])
    assert not torch.allclose(same[0], same[2])


@pytest.mark.slow
def test_quick_benchmark_judges_the_model_at_the_same_steps_with_a_counted_limit(
    quick_result,
) -> None:
    result = quick_result("consistency-latent-diffusion")
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    assert rows["real"]["config"]["n"] == result["settings"]["n"]
    for key in ("ddim50", "cm2", "dpm2"):
        assert len(rows[key]["seeds"]["fd_digits"]) == len(result["settings"]["seeds"])
        assert {"fd_digits", "kid_digits"} <= set(rows[key]["intervals"])
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"beats-control", "quality"}
    assert aims["beats-control"]["target"] == 1.0 and aims["beats-control"]["comparison"] == "<"
    assert (aims["beats-control"]["row"], aims["beats-control"]["against"]) == ("cm2", "dpm2")
    assert all(a["interval"] is not None for a in aims.values())
    head = result["headline"]
    # the limit is the counted NFE ratio, not a figure from the run's medians
    nfe = rows["ddim50"]["values"]["nfe"] / rows["cm2"]["values"]["nfe"]
    assert head["limit_kind"] == "estimate" and head["speedup_limit"] == nfe == 25.0
    assert head["quality_interval"] is not None
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "limits", "decoder-cost", "denoise-speedup"} <= set(notes)
    assert notes["decoder-cost"]["decode_mflops"] > 0 and notes["decoder-cost"]["unet_mflops"] > 0
