"""The clipped ODE: every sampler solves one problem, and the baseline DDIM converges."""

from __future__ import annotations

import pytest
import torch

from reference import zoo
from reference.harness import ode
from reference.harness.sampling import class_labels, make_noise, model_eps_fn, sample

N = 8


@pytest.fixture(scope="module")
def teacher() -> tuple[ode.EpsFn, torch.Tensor, torch.Tensor, torch.Tensor]:
    eps = model_eps_fn(zoo.load_teacher())
    noise, labels = make_noise(N, 0), class_labels(N)
    return eps, noise, labels, ode.solution(eps, noise, labels)


def test_the_grid_is_trailing_and_ddim_steps_along_it() -> None:
    for steps in (1, 10, 50, 400, 1000):
        ts = ode.grid(steps)
        assert ts[0] == 999 and len(ts) == steps and bool((ts[1:] < ts[:-1]).all())
    # diffusers' DDIM steps back by T // N; on a trailing grid of 400 steps that is off the grid
    scheduler = zoo.teacher_scheduler(timestep_spacing="trailing")
    scheduler.set_timesteps(400)
    t = int(scheduler.timesteps[1])
    assert t - 1000 // 400 not in set(ode.grid(400).tolist())
    with pytest.raises(ValueError, match=r"steps must be in 1\.\.1000"):
        ode.grid(0)


def test_equations_1_to_3_invert_each_other() -> None:
    g = torch.Generator().manual_seed(0)
    x0 = torch.rand(4, 1, 4, 4, generator=g) * 2 - 1
    eps = torch.randn(4, 1, 4, 4, generator=g)
    abar = torch.tensor(0.3)
    x_t = abar.sqrt() * x0 + (1 - abar).sqrt() * eps
    # float32: each quantity is O(1), so a few ulps of 1 bound the round trip
    assert torch.allclose(ode.clipped_x0(x_t, eps, abar), x0, atol=1e-6)
    assert torch.allclose(ode.consistent_eps(x_t, x0, abar), eps, atol=1e-5)
    assert torch.allclose(ode.ddim_step(x_t, x0, abar, abar), x_t, atol=1e-6)
    assert torch.equal(ode.ddim_step(x_t, x0, abar, torch.tensor(1.0)), x0)


def test_unknown_sampler_is_refused_before_any_work() -> None:
    def never(*_: torch.Tensor) -> torch.Tensor:
        raise AssertionError("the denoiser ran")

    with pytest.raises(ValueError, match="unknown sampler 'heun'; known: ddim, dpmpp2m"):
        ode.solve(never, make_noise(2, 0), sampler="heun")


def test_ddim_converges_to_the_solution_and_the_old_ddim_drifts_away(teacher) -> None:
    eps, noise, labels, sol = teacher
    rms = {
        s: float(ode.rms_to(ode.solve(eps, noise, steps=s, labels=labels), sol).mean())
        for s in (10, 20, 50)
    }
    assert rms[10] > rms[20] > rms[50]  # measured 0.052 > 0.028 > 0.010 at n=32
    old = {
        s: float(
            ode.rms_to(
                sample(eps, zoo.teacher_scheduler(), noise, steps=s, labels=labels), sol
            ).mean()
        )
        for s in (50, 200)
    }
    # diffusers' DDIM clips x̂₀ but steps with the raw ε̂: more steps take it further away
    assert old[200] > old[50] > rms[50]


def test_every_sampler_solves_the_same_ode(teacher) -> None:
    eps, noise, labels, sol = teacher
    ddim = ode.solve(eps, noise, steps=10, labels=labels)
    euler = ode.solve(eps, noise, sampler="euler", steps=10, labels=labels)
    # Euler in σ-space and DDIM are the same first-order step of one ODE; they differ only by
    # float32 rounding at σ_max = √((1-ᾱ)/ᾱ) ≈ 2e4 scale: steps · σ_max · 2⁻²³ ≈ 0.024
    assert float((ddim - euler).abs().max()) < 10 * 2.04e4 * 2**-23
    for name in ("unipc", "dpmpp2m"):
        second = ode.solve(eps, noise, sampler=name, steps=10, labels=labels)
        # second-order solvers land closer to the solution than first-order DDIM at 10 steps
        assert float(ode.rms_to(second, sol).mean()) < float(ode.rms_to(ddim, sol).mean())
