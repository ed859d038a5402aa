"""reference.accelerate_method: interval 1 is the plain sampler, exactness of the polynomial
forecast, TaylorSeer's formula and diffusers' hook, network-call accounting, apply_step_forecasting,
the options' errors."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"interval": 0}, "--interval must be >= 1, got 0"),
        ({"order": -1}, "--order must be >= 0, got -1"),
        ({"warmup": 0}, "--warmup must be >= 1"),
        ({"intervals": (2, 0)}, "--intervals must be >= 1"),
        ({"steps": 1}, "--steps must be >= 2, got 1"),
        ({"samples": 10}, "--samples must be >= 20"),
        ({"seeds": (3, 3)}, "--seeds needs at least 2 distinct non-negative seeds"),
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
        main("reference.accelerate_method", ["--bench", "--interval", "0"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("error: --interval must be >= 1, got 0") and "\n" not in err
    with pytest.raises(ValueError, match="unknown method 'cubic'"):
        sf.StepForecaster(lambda x, t, y: x, 2, method="cubic")


@pytest.mark.slow
def test_quick_benchmark_pairs_seeds_and_bounds_the_speedup_by_the_counted_work(
    quick_result,
) -> None:
    result = quick_result("accelerate-method")
    cfg = result["settings"]
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "technique", "control", "reference"}
    for key in ("base", "newton", "reuse", "ddim-same", "dit-base", "dit-diffusers"):
        for metric in ("fd_digits", "kid_digits"):
            assert len(rows[key]["seeds"][metric]) == len(cfg["seeds"]), (key, metric)
    for key in ("newton", "reuse", "ddim-same"):  # the control is timed, with an interval
        assert "speedup" in rows[key]["intervals"]
    nfe = rows["newton"]["values"]["nfe"]
    assert nfe == sf.full_computations(cfg["steps"], cfg["interval"], cfg["warmup"])
    head = result["headline"]
    assert head["limit_kind"] == "bound"
    assert head["speedup_limit"] == pytest.approx(rows["base"]["values"]["nfe"] / nfe)
    assert head["quality_interval"] is not None
    flagged = [a for a in result["anomalies"] if a["id"] == "speedup-above-limit"]
    assert bool(flagged) == (head["speedup"] > head["speedup_limit"])
    aims = {a["id"]: a for a in result["aims"]}
    assert set(aims) == {"beats-same-nfe", "quality", "speedup"}
    assert all(a["interval"] is not None for a in aims.values())
    assert (aims["beats-same-nfe"]["row"], aims["beats-same-nfe"]["against"]) == (
        "newton",
        "ddim-same",
    )
    assert rows["real"]["role"] == "reference"
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "latency-protocol", "same-nfe-control"} <= set(notes)
    assert notes["same-nfe-control"]["lo"] <= notes["same-nfe-control"]["ratio"]
