"""reference.timestep_distillation: the DDIM target vs diffusers, the grids, the student sampler,
the benchmark's samplers (the teacher on the clipped ODE) and its declared comparison."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

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


class ToyNet(torch.nn.Module):
    """A network with the zoo's call signature and a cheap epsilon (`toy_eps`), no weights."""

    def forward(self, x, t, class_labels=None, return_dict=True):  # type: ignore[no-untyped-def]
        return (toy_eps(x, t, class_labels),)


def test_teacher_on_the_trailing_grid_is_the_harness_ddim() -> None:
    """Oracle: on the harness's trailing grid, `teacher_on_grid` is `ode.solve`'s DDIM."""
    from reference.harness import ode
    from reference.timestep_distillation.samplers import teacher_on_grid

    noise, labels = make_noise(4, 3), torch.tensor([0, 3, 7, 10])
    for steps in (1, 4, 50):
        ours = teacher_on_grid(toy_eps, noise, ode.grid(steps).tolist(), labels)
        theirs = ode.solve(toy_eps, noise, steps=steps, labels=labels)
        # the same float32 operations in the same order: equal up to rounding, far below the
        # 1e-3 distances the benchmark's samplers differ by
        torch.testing.assert_close(ours, theirs, rtol=0.0, atol=1e-6)


def test_the_students_sampler_is_the_clipped_ode_where_nothing_is_clipped() -> None:
    """(4) of `samplers` equals (3) when x̂₀ stays inside [-1, 1], and differs when it is clipped
    (the raw ε against the ε consistent with the clipped x̂₀)."""
    from reference.timestep_distillation.samplers import nested_ddim, student_sample

    acp = zoo.teacher_scheduler().alphas_cumprod
    target = 0.5 * torch.tanh(torch.linspace(-2, 2, 256)).view(1, 1, 16, 16)

    def exact(z: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        abar = acp[t.long()].view(-1, 1, 1, 1)  # the ε whose x̂₀ is ``target`` exactly
        return (z - abar.sqrt() * target) / (1 - abar).sqrt()

    noise, labels = make_noise(3, 1), torch.tensor([1, 2, 3])
    for steps in (8, 4, 2):
        student = student_sample(exact, noise, labels, steps)
        ode_step = nested_ddim(exact, noise, labels, steps)
        # x̂₀ = target in every step, so both land on it; float32 rounding of the divisions by
        # √ᾱ (≥ 0.084) stays below 1e-4
        torch.testing.assert_close(student, ode_step, rtol=0.0, atol=1e-4)
        torch.testing.assert_close(student, target.expand_as(student), rtol=0.0, atol=1e-4)
    clipped = student_sample(toy_eps, noise, labels, 4), nested_ddim(toy_eps, noise, labels, 4)
    assert (clipped[0] - clipped[1]).abs().max() > 0.1


@pytest.fixture(scope="module")
def bench() -> Any:
    from reference.timestep_distillation import bench

    return bench


def test_every_row_counts_its_network_evaluations_on_its_own_grid(bench: Any) -> None:
    cfg = dataclasses.replace(bench.QUICK, steps=(8, 4, 2), n_quality=20)
    net = ToyNet()
    rows = bench.variants(cfg, net, {n: net for n in cfg.steps})
    ids = [v.id for v in rows]
    assert ids == [
        "ddim50",
        *(f"{kind}{n}" for n in (8, 4, 2) for kind in ("student", "teacher", "ddim")),
        "teacher64",
    ]
    roles = {v.id: v.role for v in rows}
    assert roles["ddim50"] == "baseline" and roles["teacher64"] == "reference"
    assert {roles[f"student{n}"] for n in (8, 4, 2)} == {"technique"}
    assert {roles[f"{kind}{n}"] for n in (8, 4, 2) for kind in ("teacher", "ddim")} == {"control"}
    timed = {v.id for v in rows if v.timed is not None}
    assert timed == {"ddim50"} | {
        f"{kind}{n}" for n in (8, 4, 2) for kind in ("student", "teacher", "ddim")
    }
    for v in rows:
        x, counted = v.sample(0)
        assert counted == {"nfe": float(v.config["steps"])} and x.shape == (20, 1, 16, 16)
        assert x.abs().max() <= 1.0
    # paired and deterministic: a seed's noise is all the randomness of a row
    student = rows[ids.index("student4")]
    assert torch.equal(student.sample(0)[0], student.sample(0)[0])
    assert not torch.equal(student.sample(0)[0], student.sample(1)[0])


def test_the_claims_are_judged_on_paired_ratios(bench: Any) -> None:
    from reference.harness.compare import judge
    from reference.harness.seeds import SeedTable

    cfg = dataclasses.replace(bench.FULL, steps=(4, 2))
    q = SeedTable((0, 1, 2))
    # per seed: both students beat both their controls; the 4-step one is within 10% of the
    # baseline on every seed, the spread of its ratio keeps the interval below 1.1
    for base, s4, t4, d4, s2, t2, d2 in [(9.0, 9.5, 16.0, 10.5, 12.0, 30.0, 14.0),
                                         (9.4, 9.9, 17.0, 11.0, 13.0, 33.0, 15.0),
                                         (8.8, 9.2, 15.5, 10.0, 12.4, 31.0, 14.5)]:  # fmt: skip
        for key, fd in (("ddim50", base), ("student4", s4), ("teacher4", t4), ("ddim4", d4),
                        ("student2", s2), ("teacher2", t2), ("ddim2", d2)):  # fmt: skip
            q.add(key, {"fd_digits": fd})
    judged = [judge(a, q, None, {}) for a in bench.aims(cfg)]
    assert [(a.id, a.row, a.against, a.params) for a in judged] == [
        ("beats-control", "student4", "teacher4", {"steps": 4}),
        ("beats-control", "student2", "teacher2", {"steps": 2}),
        ("beats-trailing", "student4", "ddim4", {"steps": 4}),
        ("beats-trailing", "student2", "ddim2", {"steps": 2}),
        ("quality", "student4", "ddim50", {"steps": 4, "base_steps": 50}),
    ]
    assert [a.state for a in judged] == ["met"] * 5
    ratio = math.exp(sum(math.log(s / b) for s, b in [(9.5, 9.0), (9.9, 9.4), (9.2, 8.8)]) / 3)
    assert judged[4].measured == pytest.approx(ratio, rel=1e-12)  # (3) of compare, exact math


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "3"], "--steps must be distilled student steps"),
        (["--steps", "8,2"], "--headline-steps 4 is not one of --steps"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),  # class-balanced samples
        (["--seeds", "0"], "--seeds"),
        (["--repeats", "0"], "--repeats"),
    ],
)
def test_bad_options_are_one_line_before_any_model_loads(
    args: list[str],
    message: str,
    refused_in_one_line: Any,
    monkeypatch: pytest.MonkeyPatch,
    bench: Any,
) -> None:
    monkeypatch.setattr(bench, "_measured", lambda cfg: pytest.fail("the benchmark started"))
    assert message in refused_in_one_line("reference.timestep_distillation", args)


def test_full_run_measures_the_held_out_sample_size_on_five_paired_seeds(bench: Any) -> None:
    from reference.harness.scores import MAX_REAL_N

    full = bench.FULL
    assert full.n_quality == 140 <= MAX_REAL_N and full.seeds == (0, 1, 2, 3, 4)
    assert full.repeats >= 15 and full.warmup >= 1
    assert full.steps == (8, 4, 2) and full.headline_steps == 4
    assert bench.BASELINE == "ddim50" and bench.RUNS["ddim"].__name__ == "trailing_ddim"


@pytest.mark.slow
def test_quick_result_judges_students_against_the_teacher_at_the_same_steps(
    quick_result: Any,
) -> None:
    from reference.harness.integrity import check_result

    result = quick_result("timestep-distillation")
    assert check_result(result, "timestep-distillation") == []
    rows = {r["id"]: r for r in result["rows"]}
    assert [r["id"] for r in result["rows"]] == [
        "ddim50", "student4", "teacher4", "ddim4", "teacher64", "real"
    ]  # fmt: skip
    assert rows["real"]["config"]["n"] == result["settings"]["n_quality"]
    seeds = result["settings"]["seeds"]
    for key in ("ddim50", "student4", "teacher4", "ddim4", "teacher64"):
        assert len(rows[key]["seeds"]["fd_digits"]) == len(seeds)
        assert rows[key]["values"]["nfe"] == rows[key]["config"]["steps"]  # counted
    for key in ("student4", "teacher4", "ddim4"):
        assert {"speedup", "fd_digits", "kid_digits"} <= set(rows[key]["intervals"])
    assert "latency_ms" not in rows["teacher64"]["values"]  # sampled, not timed
    aims = {a["id"]: a for a in result["aims"]}
    assert (aims["beats-control"]["row"], aims["beats-control"]["against"]) == (
        "student4",
        "teacher4",
    )
    assert (aims["beats-trailing"]["row"], aims["beats-trailing"]["against"]) == (
        "student4",
        "ddim4",
    )
    assert aims["quality"]["against"] == "ddim50" and aims["quality"]["target"] == 1.1
    student, teacher = (rows[k]["seeds"]["fd_digits"] for k in ("student4", "teacher4"))
    logs = [math.log(a / b) for a, b in zip(student, teacher, strict=True)]
    # the geometric mean of the per-seed ratios, (3) of compare; float64 throughout
    assert aims["beats-control"]["measured"] == pytest.approx(
        math.exp(sum(logs) / len(logs)), rel=1e-9
    )
    head = result["headline"]
    assert head["row"] == "student4" and head["limit_kind"] == "estimate"
    assert head["speedup_limit"] == 50 / 4  # (3) of the bench: counted NFE ratio
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "held-out-reference", "latency-protocol", "samplers"} <= set(notes)
    same = notes["same-architecture"]
    assert same["same_lo"] <= same["same_hi"] and same["nfe_ratio"] == head["speedup_limit"]
    assert notes["samplers"]["start"] == 945 and notes["samplers"]["trailing_start"] == 999
