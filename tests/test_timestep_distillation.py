"""reference.timestep_distillation: the DDIM target vs diffusers, the grids, the student sampler."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from reference import zoo
from reference.harness import count_nfe, make_noise, model_eps_fn, sample
from reference.timestep_distillation import (
    TERMINAL,
    GridDDIMScheduler,
    alpha_sigma,
    ddim_update,
    distillation_loss,
    eps_to_x0,
    init_student,
    student_x_hat,
    timestep_grid,
    two_ddim_steps,
    x_target,
)
from reference.timestep_distillation.bench import FULL
from reference.zoo.specs import SPECS


def toy_eps(z: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A cheap denoiser that depends on z, t and the label."""
    return 0.7 * z + 1e-3 * t.float().view(-1, 1, 1, 1) + 0.05 * labels.float().view(-1, 1, 1, 1)


@pytest.fixture(scope="module")
def teacher() -> torch.nn.Module:
    torch.manual_seed(0)  # an untrained network of the zoo teacher's architecture
    return SPECS["teacher"].build_model().eval()


def test_grids_nest_and_start_from_diffusers_ddim() -> None:
    ref = zoo.teacher_scheduler()
    ref.set_timesteps(64)
    assert timestep_grid(64) == ref.timesteps.tolist()
    for n in (32, 16, 8, 4, 2, 1):
        assert timestep_grid(n) == timestep_grid(2 * n)[::2]
    assert timestep_grid(4) == [945, 705, 465, 225]
    with pytest.raises(ValueError, match="positive divisor of 64"):
        timestep_grid(3)


def test_terminal_timestep_is_clean_data() -> None:
    acp = zoo.teacher_scheduler().alphas_cumprod
    a, s = alpha_sigma(acp, torch.tensor([TERMINAL, 0]))
    assert a[0].item() == 1.0 and s[0].item() == 0.0  # exact: sqrt(1) and sqrt(1 - 1)
    assert s[1].item() > 0.0


@pytest.mark.parametrize("t", [945, 480, 15])
def test_two_step_target_matches_two_diffusers_ddim_steps(t: int) -> None:
    """Oracle: the teacher's two steps are two calls of ``DDIMScheduler.step`` at 64 steps."""
    ref = zoo.teacher_scheduler()
    ref.set_timesteps(64)
    gen = torch.Generator().manual_seed(t)
    z = 2 * torch.randn((3, 1, 16, 16), generator=gen)  # large enough to trigger the x0 clip
    labels = torch.tensor([1, 7, 10])
    rows = torch.full((3,), t)
    z1 = ref.step(toy_eps(z, rows, labels), t, z).prev_sample
    z2 = ref.step(toy_eps(z1, rows - 15, labels), t - 15, z1).prev_sample
    two = two_ddim_steps(toy_eps, z, rows, labels, timestep_grid(64), ref.alphas_cumprod)
    torch.testing.assert_close(two.z_mid, z1, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(two.z_next, z2, rtol=1e-5, atol=1e-5)
    assert two.t_next.tolist() == ([t - 30] * 3 if t > 15 else [TERMINAL] * 3)


@pytest.mark.parametrize("t, t_next", [(945, 705), (465, 225), (225, TERMINAL)])
def test_target_makes_one_student_step_land_on_the_teacher(t: int, t_next: int) -> None:
    """``x~`` is the x-prediction for which one DDIM step from ``z_t`` reaches ``z_t''``."""
    acp = zoo.teacher_scheduler().alphas_cumprod
    gen = torch.Generator().manual_seed(1)
    z_t, z_next = torch.randn((2, 2, 1, 16, 16), generator=gen)
    rows, rows_next = torch.full((2,), t), torch.full((2,), t_next)
    x_tilde = x_target(z_t, z_next, rows, rows_next, acp)
    a_t, s_t = alpha_sigma(acp, rows)
    a_n, s_n = alpha_sigma(acp, rows_next)
    eps_tilde = (z_t - a_t * x_tilde) / s_t
    landed = ddim_update(x_tilde, eps_tilde, a_n, s_n, clip=None)
    torch.testing.assert_close(landed, z_next, rtol=1e-4, atol=1e-4)


def test_student_x_hat_is_the_x_of_the_clipped_step() -> None:
    acp = zoo.teacher_scheduler().alphas_cumprod
    gen = torch.Generator().manual_seed(2)
    z, eps = torch.randn((2, 2, 1, 16, 16), generator=gen)
    t, t_next = torch.full((2,), 705), torch.full((2,), 465)
    a_t, s_t = alpha_sigma(acp, t)
    a_n, s_n = alpha_sigma(acp, t_next)
    raw = eps_to_x0(z, eps, a_t, s_t)
    x_eff = student_x_hat(z, eps, t, t_next, acp, clip=1.0)
    inside = raw.abs() <= 1
    assert inside.any() and (~inside).any()
    torch.testing.assert_close(x_eff[inside], raw[inside], rtol=1e-4, atol=1e-4)
    # an unclipped step with x_eff lands where the clipped step with raw x_hat lands
    clipped_step = ddim_update(raw, eps, a_n, s_n, clip=1.0)
    eps_eff = (z - a_t * x_eff) / s_t
    torch.testing.assert_close(
        ddim_update(x_eff, eps_eff, a_n, s_n, clip=None), clipped_step, rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("steps", [8, 4, 2, 1])
def test_student_sampler_calls_the_model_exactly_n_times(steps: int) -> None:
    counter = count_nfe(toy_eps)
    out = sample(
        counter, GridDDIMScheduler(zoo.teacher_scheduler_config()), make_noise(3, 0), steps=steps
    )
    assert counter.nfe == steps and out.shape == (3, 1, 16, 16)


@pytest.mark.slow
def test_untrained_student_at_64_steps_is_the_teachers_ddim64(teacher: torch.nn.Module) -> None:
    noise, labels = make_noise(2, 5), torch.tensor([3, 10])
    expected = sample(
        model_eps_fn(teacher), zoo.teacher_scheduler(), noise, steps=64, labels=labels
    )
    student = init_student(teacher).eval()
    counter = count_nfe(model_eps_fn(student))
    got = sample(
        counter, GridDDIMScheduler(zoo.teacher_scheduler_config()), noise, steps=64, labels=labels
    )
    assert counter.nfe == 64
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_loss_trains_the_student_only(teacher: torch.nn.Module) -> None:
    student = init_student(teacher)
    acp = zoo.teacher_scheduler().alphas_cumprod
    torch.manual_seed(0)
    x0 = torch.rand((4, 1, 16, 16)) * 2 - 1
    loss = distillation_loss(
        student, model_eps_fn(teacher), x0, torch.tensor([0, 1, 2, 10]), 4, acp
    )
    loss.backward()
    assert loss.item() > 0 and torch.isfinite(loss)
    assert all(p.grad is None for p in teacher.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in student.parameters())


def test_eps_to_x0_inverts_the_forward_process() -> None:
    acp = zoo.teacher_scheduler().alphas_cumprod
    x0, eps = torch.randn((2, 2, 1, 16, 16))
    a, s = alpha_sigma(acp, torch.tensor([100, 900]))
    torch.testing.assert_close(eps_to_x0(a * x0 + s * eps, eps, a, s), x0, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"steps": (3,)}, "--steps must be distilled student steps"),
        ({"n": 2}, "--n must be >= 10, got 2"),
        ({"repeats": 0}, "--repeats must be >= 1, got 0"),
        ({"steps": (8, 2)}, "--headline-steps 4 is not one of --steps"),
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
    with pytest.raises(ValueError, match="--seeds"):
        dataclasses.replace(FULL, seeds=(3,)).validate()


@pytest.mark.slow
def test_quick_benchmark_judges_students_against_the_teacher_at_the_same_steps(
    quick_result,
) -> None:
    result = quick_result("timestep-distillation")
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    assert rows["real"]["config"]["n"] == result["settings"]["n"]
    seeds = result["settings"]["seeds"]
    for key in ("teacher64", "student4", "teacher4", "diffusers"):
        assert len(rows[key]["seeds"]["fd_digits"]) == len(seeds)
        timed = {"speedup"} if key != "teacher64" else set()
        assert {"fd_digits", "kid_digits", *timed} <= set(rows[key]["intervals"])
    # aims: the student against the teacher at the same steps and at 64 steps; no speed aim
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"beats-control", "quality"}
    assert aims["beats-control"]["comparison"] == "<" and aims["beats-control"]["target"] == 1.0
    assert (aims["beats-control"]["row"], aims["beats-control"]["against"]) == (
        "student4",
        "teacher4",
    )
    assert aims["quality"]["against"] == "teacher64"
    for a in aims.values():
        assert a["interval"] is not None and a["interval"][0] <= a["measured"] <= a["interval"][1]
    student, teacher = (rows[k]["seeds"]["fd_digits"] for k in ("student4", "teacher4"))
    logs = [math.log(a / b) for a, b in zip(student, teacher, strict=True)]
    geo = math.exp(sum(logs) / len(logs))  # the geometric mean of the per-seed ratios
    assert aims["beats-control"]["measured"] == pytest.approx(geo, rel=1e-9)
    # the limit is the counted NFE ratio, an estimate; the speed facts are a note
    head = result["headline"]
    assert head["row"] == "student4" and head["limit_kind"] == "estimate"
    assert (
        head["speedup_limit"]
        == rows["teacher64"]["values"]["nfe"] / rows["student4"]["values"]["nfe"]
    )
    assert head["quality_interval"] is not None
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "latency-protocol", "same-architecture"} <= set(notes)
    assert "fdd-at-n" not in notes
    same = notes["same-architecture"]
    assert same["same_lo"] <= same["same_hi"] and same["nfe_ratio"] == head["speedup_limit"]
