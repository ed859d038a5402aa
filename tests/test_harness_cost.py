"""Cost measurements: exact saved-activation bytes, FLOPs, parameters, interleaved latency."""

from __future__ import annotations

import pytest
import torch

from reference.harness.cost import (
    bytes_saved_for_backward,
    compare_latency,
    count_flops,
    count_parameters,
    parameter_bytes,
    peak_rss_bytes,
)


def test_saved_bytes_exact_on_a_known_graph() -> None:
    # tanh(relu(x @ W)).sum() with x [4, 3] requiring grad and a parameter W [3, 5]:
    # mm saves x (for dW) and W (for dx), relu saves its output [4, 5], tanh its output [4, 5];
    # sum saves only sizes. Parameters are excluded unless asked for. float32 = 4 bytes.
    x = torch.randn(4, 3, requires_grad=True)
    w = torch.nn.Parameter(torch.randn(3, 5))

    def fn() -> torch.Tensor:
        return torch.tanh(torch.relu(x @ w)).sum()

    expected = (4 * 3 + 4 * 5 + 4 * 5) * 4
    assert bytes_saved_for_backward(fn) == expected
    assert bytes_saved_for_backward(fn, include_parameters=True) == expected + 3 * 5 * 4


def test_saved_bytes_skip_views_of_parameters() -> None:
    # F.linear saves the transposed weight (a view of the parameter) and the input.
    layer = torch.nn.Linear(3, 5, bias=False)
    x = torch.randn(4, 3, requires_grad=True)
    assert bytes_saved_for_backward(lambda: layer(x).sum()) == 4 * 3 * 4


def test_saved_bytes_counts_a_shared_tensor_once() -> None:
    x = torch.randn(8, 8, requires_grad=True)

    def fn() -> torch.Tensor:
        h = x * 2.0  # saves nothing for a constant factor
        return (h * h).sum()  # mul saves both operands, the same tensor h

    assert bytes_saved_for_backward(fn) == 8 * 8 * 4


def test_flops_of_a_linear_layer_match_2_b_in_out() -> None:
    layer = torch.nn.Linear(32, 16)
    x = torch.randn(10, 32)
    assert count_flops(layer, x) == 2 * 10 * 32 * 16


def test_parameter_counts_and_bytes() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    assert count_parameters(model) == 4 * 3 + 3 + 3 + 3
    model[0].weight.requires_grad_(False)
    assert count_parameters(model, trainable_only=True) == 3 + 3 + 3
    # parameters + running_mean + running_var (float32) + num_batches_tracked (int64)
    assert parameter_bytes(model) == (21 + 6) * 4 + 8
    assert peak_rss_bytes() > 0


def test_compare_latency_reports_medians_spread_and_ratios() -> None:
    calls: list[str] = []

    def make(name: str, work: int):
        def fn() -> None:
            calls.append(name)
            sum(range(work))

        return fn

    funcs = {"base": make("base", 20_000), "fast": make("fast", 200)}
    res = compare_latency(funcs, repeats=7, warmup=2, threads=1)
    assert calls.count("base") == calls.count("fast") == 9
    # interleaved: after warm-up no function runs twice before the other ran
    timed = calls[4:]
    assert all(timed[i] != timed[i + 1] or i % 2 == 1 for i in range(len(timed) - 1))
    for name in funcs:
        s = res.stats[name]
        assert len(s.samples_ms) == 7
        assert s.q1_ms <= s.median_ms <= s.q3_ms
        assert s.iqr_ms == pytest.approx(s.q3_ms - s.q1_ms)
    assert res.speedup["base"] == pytest.approx(1.0)
    assert res.speedup["fast"] == pytest.approx(res.median_ms("base") / res.median_ms("fast"))
    assert res.threads == 1 and res.baseline == "base"


def test_compare_latency_rejects_an_unknown_baseline() -> None:
    with pytest.raises(ValueError, match="baseline"):
        compare_latency({"a": lambda: None}, baseline="b")


def test_speedup_between_two_alternatives_and_its_interval() -> None:
    from reference.harness.cost import LatencyComparison, _stats

    # Synthetic rounds (no timing): "wide" takes 3x "sparse" in every round, "base" 2x.
    sparse = [1.0, 1.1, 0.9, 1.05, 0.95]
    stats = {
        "base": _stats([2 * x for x in sparse]),
        "wide": _stats([3 * x for x in sparse]),
        "sparse": _stats(sparse),
    }
    cmp = LatencyComparison("base", stats, {}, threads=1, repeats=5, warmup=0)
    assert cmp.speedup_over("sparse", "wide") == pytest.approx(3.0)
    assert cmp.speedup_interval("sparse", against="wide") == pytest.approx((3.0, 3.0))
    assert cmp.speedup_interval("sparse") == pytest.approx((2.0, 2.0))
