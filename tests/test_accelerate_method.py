"""reference.accelerate_method: interval 1 is the plain sampler, exactness of the polynomial
forecast, TaylorSeer's formula and diffusers' hook, network-call accounting, apply_step_forecasting,
the rows on the clipped ODE, the declared aims, the options' errors and the quick result."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from reference import accelerate_method as sf
from reference.accelerate_method import bench


def _poly(coeffs: list[float], t: float, shape=(2, 3)) -> torch.Tensor:
    base = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape) / 7.0
    return sum(c * (t**i) * (base + i) for i, c in enumerate(coeffs))


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_newton_forecast_is_exact_on_polynomials_of_degree_at_most_order(order: int) -> None:
    coeffs = [0.5, -1.25, 0.75, 0.3][: order + 1]
    nodes = [980.0, 960.0, 920.0, 900.0][: order + 1]  # uneven spacing on purpose
    values = [_poly(coeffs, t) for t in nodes]
    for at in (890.0, 860.0, 700.0):
        # float64 cubic extrapolation: Lagrange weights sum to <= ~1e3, so |err| <= 1e3 * eps64
        # * |p| ~ 2e-13 relative (measured 7e-14); rtol 1e-9 leaves room for any order of ops
        assert torch.allclose(sf.newton_forecast(nodes, values, at), _poly(coeffs, at), rtol=1e-9)


def test_taylorseer_formula_equals_newton_to_first_order_and_is_not_exact_beyond() -> None:
    nodes = [40.0, 38.0, 36.0]
    lin = [_poly([1.0, 0.5], t) for t in nodes]
    quad = [_poly([1.0, 0.5, 0.25], t) for t in nodes]
    for at in (35.0, 34.0):
        assert torch.allclose(sf.taylorseer_forecast(nodes[1:], lin[1:], at), _poly([1, 0.5], at))
        assert torch.allclose(sf.newton_forecast(nodes, quad, at), _poly([1, 0.5, 0.25], at))
        assert not torch.allclose(
            sf.taylorseer_forecast(nodes, quad, at), _poly([1, 0.5, 0.25], at)
        )


def test_taylorseer_formula_matches_diffusers_state() -> None:
    from diffusers.hooks.taylorseer_cache import TaylorSeerState

    state = TaylorSeerState(taylor_factors_dtype=torch.float64, max_order=2)
    steps = [0, 2, 4]
    values = [torch.randn(3, 4, dtype=torch.float64) for _ in steps]
    for s, v in zip(steps, values, strict=True):
        state.current_step = s
        state.update((v,))
    state.current_step = 5
    ours = sf.taylorseer_forecast([float(s) for s in steps], values, 5.0)
    # the same float64 backward differences in another order: ~10 eps64 * |F| ~ 1e-14 apart
    assert torch.allclose(state.predict()[0], ours, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    ("n", "k", "w"), [(50, 2, 2), (50, 3, 1), (20, 4, 3), (7, 1, 1), (3, 5, 4)]
)
def test_compute_mask_counts_and_limit(n: int, k: int, w: int) -> None:
    mask = sf.compute_mask(n, k, w)
    assert sum(mask) == sf.full_computations(n, k, w)
    assert sf.full_computations(n, k, w) == (n if n <= w else w + math.ceil((n - w) / k))
    assert sf.speedup_limit(n, k, w) == pytest.approx(n / sum(mask))
    assert all(mask[: min(w, n)])


def _counting_eps(calls: list[float]):
    def eps_fn(x: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        calls.append(float(t[0]))
        return torch.sin(x + float(t[0]) / 100.0)

    return eps_fn


@pytest.mark.parametrize("method", sf.METHODS)
def test_interval_one_equals_no_forecasting_exactly(method: str) -> None:
    from reference import zoo
    from reference.harness import sample

    noise = torch.randn(3, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    calls: list[float] = []
    plain = sample(_counting_eps(calls), zoo.teacher_scheduler(), noise, steps=9)
    fc = sf.StepForecaster(_counting_eps([]), 1, order=2, warmup=1, method=method)
    forecast = sample(fc, zoo.teacher_scheduler(), noise, steps=9)
    # exact by construction: at interval 1 every step returns eps_fn's own output unchanged
    assert torch.equal(forecast, plain)
    assert fc.full_calls == 9 == len(calls)


def test_forecaster_calls_the_network_on_the_mask_only() -> None:
    from reference import zoo
    from reference.harness import sample

    calls: list[float] = []
    fc = sf.StepForecaster(_counting_eps(calls), 3, order=2, warmup=2)
    sample(fc, zoo.teacher_scheduler(), torch.zeros(2, 1, 4, 4), steps=20)
    mask = sf.compute_mask(20, 3, 2)
    assert fc.full_calls == len(calls) == sum(mask) == sf.full_computations(20, 3, 2)


@pytest.mark.slow
def test_diffusers_taylorseer_hook_computes_on_our_schedule() -> None:
    from reference import zoo
    from reference.harness import model_eps_fn, sample

    torch.manual_seed(0)
    dit = zoo.SPECS["dit"].build_model().eval()
    hooked = sf.diffusers_taylorseer(dit, interval=2, order=1, warmup=2)
    ran: list[int] = []
    last = hooked.transformer_blocks[-1]
    original = last._diffusers_hook.hooks["taylorseer_cache"].fn_ref.original_forward

    def spy(*args, **kwargs):
        ran.append(1)
        return original(*args, **kwargs)

    last._diffusers_hook.hooks["taylorseer_cache"].fn_ref.original_forward = spy
    noise = torch.randn(2, 1, 16, 16, generator=torch.Generator().manual_seed(1))
    for _ in range(2):  # state is reset between runs
        ran.clear()
        with sf.taylorseer_run(hooked):
            x = sample(model_eps_fn(hooked), zoo.teacher_scheduler(), noise, steps=10)
        assert len(ran) == sf.full_computations(10, 2, 2) and torch.isfinite(x).all()


def test_apply_step_forecasting_builds_a_fresh_forecaster_from_its_config() -> None:
    calls: list[float] = []
    config = sf.StepForecastConfig(interval=3, order=2, warmup=2, method="taylorseer")
    fc = sf.apply_step_forecasting(_counting_eps(calls), config)
    assert (fc.interval, fc.order, fc.warmup, fc.method) == (3, 2, 2, "taylorseer")
    reuse = sf.apply_step_forecasting(
        _counting_eps([]), sf.StepForecastConfig(2, 3, method="reuse")
    )
    assert reuse.order == 0 and reuse is not sf.apply_step_forecasting(_counting_eps([]), config)


def test_every_row_solves_the_clipped_ode() -> None:
    """The baseline and the same-NFE control are ``ode.solve``; a forecast at interval 1 is the
    baseline exactly (every step runs the network) and counts every evaluation; at k = 2 it
    runs the network on the schedule's steps only."""
    from reference import zoo
    from reference.accelerate_method.samplers import ddim, forecast
    from reference.harness import class_labels, model_eps_fn, ode

    torch.manual_seed(0)
    unet = zoo.SPECS["teacher"].build_model().eval()
    noise = torch.randn(3, 1, 16, 16, generator=torch.Generator().manual_seed(4))
    y = class_labels(3)
    base, nfe = ddim(unet, 50)(noise, y)
    assert nfe == 50
    torch.testing.assert_close(base, ode.solve(model_eps_fn(unet), noise, steps=50, labels=y))
    same, n_same = ddim(unet, 26)(noise, y)
    assert n_same == 26
    torch.testing.assert_close(same, ode.solve(model_eps_fn(unet), noise, steps=26, labels=y))
    one, n_one = forecast(unet, sf.StepForecastConfig(1, 2, 2, "newton"))(noise, y)
    assert n_one == 50 and torch.equal(one, base)
    two, n_two = forecast(unet, sf.StepForecastConfig(2, 2, 2, "newton"))(noise, y)
    assert n_two == sf.full_computations(50, 2, 2) == 26 and not torch.equal(two, base)
    assert two.abs().max() <= 1.0  # the clipped ODE's end point


def test_the_declared_rows_aims_and_headline() -> None:
    from reference import zoo
    from reference.accelerate_method.samplers import dit_variants, unet_variants

    cfg = bench.FULL
    unet = zoo.SPECS["teacher"].build_model().eval()
    ids = [v.id for v in unet_variants(cfg, unet)]
    assert ids == ["ddim50", "newton", "reuse", "ddim-same", "newton1", "taylor",
                   "newton-k3", "ddim-k3", "newton-k4", "ddim-k4"]  # fmt: skip
    timed = {v.id for v in unet_variants(cfg, unet) if v.timed}
    assert timed == {"ddim50", "newton", "reuse", "ddim-same"}
    dit = [(v.id, v.role) for v in dit_variants(cfg, zoo.SPECS["dit"].build_model().eval())]
    assert dit == [("dit-ddim50", "baseline"), ("dit-newton", "technique"),
                   ("dit-newton1", "technique"), ("dit-ddim-same", "control"),
                   ("dit-diffusers", "technique")]  # fmt: skip
    aims = bench.aims(cfg)
    assert [(a.id, a.row, a.against) for a in aims] == [
        ("beats-same-nfe", "newton", "ddim-same"),
        ("fidelity", "newton", "ddim50"),
        ("quality", "newton", "ddim50"),
        ("speedup", "newton", "ddim50"),
    ]
    assert [a.metric for a in aims[:3]] == ["rms_to_solution", "rms_to_solution", "fd_digits"]
    assert aims[3].params["limit"] == pytest.approx(50 / 26)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--interval", "0"], "--interval"),
        (["--interval", "5"], "--interval 5 is not one of --intervals"),
        (["--order", "-1"], "--order"),
        (["--forecast-warmup", "0"], "--forecast-warmup"),
        (["--intervals", "2,0"], "--intervals"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),
        (["--seeds", "3,3"], "--seeds"),
        (["--repeats", "1"], "--repeats"),
    ],
)
def test_bad_options_are_one_line_before_any_model_loads(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "_measured", lambda cfg: pytest.fail("the benchmark started"))
    assert message in refused_in_one_line("reference.accelerate_method", args)
    with pytest.raises(ValueError, match="unknown method 'cubic'"):
        sf.StepForecaster(lambda x, t, y: x, 2, method="cubic")


def test_full_run_measures_the_held_out_sample_size_on_five_paired_seeds() -> None:
    from reference.harness.scores import MAX_REAL_N

    full = bench.FULL
    assert full.n_quality == 140 <= MAX_REAL_N and full.seeds == (0, 1, 2, 3, 4)
    assert full.repeats >= 15 and full.solution_steps == 200 and bench.BASELINE == "ddim50"
    for cfg in (bench.FULL, bench.QUICK, bench.DEMO):
        cfg.validate()


@pytest.mark.slow
def test_quick_benchmark_pairs_seeds_and_bounds_the_speedup_by_the_counted_work(
    quick_result,
) -> None:
    from reference.harness.integrity import check_result

    result = quick_result("accelerate-method")
    assert check_result(result, "accelerate-method") == []
    cfg = result["settings"]
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    for key in ("ddim50", "newton", "reuse", "ddim-same", "dit-ddim50", "dit-diffusers"):
        for metric in ("rms_to_solution", "fd_digits", "kid_digits"):
            assert len(rows[key]["seeds"][metric]) == len(cfg["seeds"]), (key, metric)
    for key in ("newton", "reuse", "ddim-same", "dit-newton", "dit-diffusers"):
        assert "speedup" in rows[key]["intervals"]
    assert rows["dit-newton"]["rounds"]["against"] == "dit-ddim50"  # the DiT's own baseline
    nfe = rows["newton"]["values"]["nfe"]
    assert nfe == sf.full_computations(
        cfg["baseline_steps"], cfg["interval"], cfg["forecast_warmup"]
    )
    head = result["headline"]
    assert head["row"] == "newton" and head["limit_kind"] == "bound"
    assert head["quality_metric"] == "rms_to_solution"
    assert head["speedup_limit"] == pytest.approx(rows["ddim50"]["values"]["nfe"] / nfe)
    flagged = [a for a in result["anomalies"] if a["id"] == "speedup-above-limit"]
    assert bool(flagged) == (head["speedup"] > head["speedup_limit"])
    aims = {a["id"]: a for a in result["aims"]}
    assert list(aims) == ["beats-same-nfe", "fidelity", "quality", "speedup"]
    assert all(a["interval"] is not None for a in aims.values())
    assert rows["real"]["role"] == "reference"
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "held-out-reference", "latency-protocol", "same-nfe-control",
            "dit-hook"} <= set(notes)  # fmt: skip
    assert notes["same-nfe-control"]["lo"] <= notes["same-nfe-control"]["ratio"]
