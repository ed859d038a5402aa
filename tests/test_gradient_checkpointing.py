"""Gradient checkpointing: equal gradients, exact retained-memory laws, the meter, the public
apply/remove API, the benchmark's configuration checks and the intervals of its time ratios."""

from __future__ import annotations

import copy

import pytest
import torch

from reference.gradient_checkpointing import (
    POLICIES,
    ActivationMeter,
    CheckpointConfig,
    apply_gradient_checkpointing,
    chain_loss,
    chain_point,
    checkpoint_modules,
    even_segments,
    make_chain,
    peak_activation_bytes,
    prepare,
    remove_gradient_checkpointing,
    remove_module_checkpoints,
    sqrt_segments,
    staged_forward,
    unet_stages,
)
from reference.gradient_checkpointing.policies import check_stageable, unet_module_types
from reference.harness import bytes_saved_for_backward


def fresh_unet(**overrides: object) -> torch.nn.Module:
    """An untrained U-Net of the zoo teacher's configuration (weights do not matter here)."""
    from diffusers import UNet2DModel

    from reference.zoo.specs import TEACHER_CONFIG

    torch.manual_seed(0)
    return UNet2DModel(**{**TEACHER_CONFIG, **overrides}).train()


def inputs(batch: int = 4) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(batch, 1, 16, 16, generator=gen)
    t = torch.randint(0, 1000, (batch,), generator=gen)
    y = torch.randint(0, 11, (batch,), generator=gen)
    return x, t, y


def gradients(model: torch.nn.Module, forward, seed: int = 0) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    forward().square().mean().backward()
    return [p.grad.clone() for p in model.parameters()]


def max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


def test_staged_forward_without_checkpoints_is_the_diffusers_forward() -> None:
    unet = fresh_unet().eval()
    x, t, y = inputs()
    with torch.no_grad():
        expected = unet(x, t, class_labels=y).sample
        torch.testing.assert_close(staged_forward(unet, x, t, y), expected, atol=1e-5, rtol=1e-5)
    names = [name for name, _ in unet_stages(unet)]
    assert names[0] == "conv_in" and names[-1] == "head" and "mid_block" in names


@pytest.fixture(scope="module")
def plain_run() -> tuple[torch.nn.Module, tuple, list[torch.Tensor], int]:
    """The U-Net, its inputs, the plain gradients and the plain retained bytes (computed once)."""
    unet = fresh_unet()
    x, t, y = inputs(2)
    base, plain = prepare(unet, "none")
    grads = gradients(base, lambda: plain(x, t, y))
    saved = bytes_saved_for_backward(lambda: plain(x, t, y).square().mean())
    return unet, (x, t, y), grads, saved


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES[1:])
def test_every_policy_gives_the_gradients_of_plain_backprop(policy: str, plain_run) -> None:
    unet, (x, t, y), expected, saved_plain = plain_run
    model, forward = prepare(unet, policy)
    # recomputation repeats the same float32 ops (measured: 0); only the order in which the
    # ~10 branch gradients of the shared time embedding add up may change, <= 10 * eps32 * |g|
    assert max_diff(gradients(model, lambda: forward(x, t, y)), expected) <= 1e-6
    saved = bytes_saved_for_backward(lambda: forward(x, t, y).square().mean())
    assert saved < saved_plain


@pytest.mark.slow
def test_dropout_needs_the_rng_state_restored_for_exact_gradients() -> None:
    unet = fresh_unet(dropout=0.3)
    x, t, y = inputs(2)

    def forward_of(m: torch.nn.Module):
        return lambda: m(x, t, class_labels=y).sample

    expected = gradients(unet, forward_of(unet))
    kept = copy.deepcopy(unet)
    assert checkpoint_modules(kept, unet_module_types(), preserve_rng_state=True)
    assert max_diff(gradients(kept, forward_of(kept)), expected) <= 1e-6
    lost = copy.deepcopy(unet)
    checkpoint_modules(lost, unet_module_types(), preserve_rng_state=False)
    assert max_diff(gradients(lost, forward_of(lost)), expected) > 1e-3
    # the same holds for segments of stages
    n = len(unet_stages(unet))
    segs = even_segments(n, sqrt_segments(n))
    staged = gradients(unet, lambda: staged_forward(unet, x, t, y, segs))
    assert max_diff(staged, expected) <= 1e-6
    assert remove_module_checkpoints(lost) > 0
    assert not any("forward" in vars(m) for m in lost.modules())


@pytest.mark.parametrize("n", [4, 16, 25])
def test_chain_retained_memory_follows_the_exact_count(n: int) -> None:
    """Each block keeps its input and tanh output; a checkpointed segment keeps its input.

    none: 2n + 1 (the final square keeps y); per block: (n - 1) inputs + 2 + 1;
    k = sqrt(n) segments of m blocks: (k - 1) inputs + 2m + 1.
    """
    width, batch = 8, 16
    unit = width * batch * 4
    chain = make_chain(n, width)
    x = torch.randn(batch, width)
    k = sqrt_segments(n)
    expected = {1: 2 * n + 1, n: n + 2, k: (k - 1) + 2 * (n - (k - 1) * (n // k)) + 1}
    for segments, units in expected.items():
        saved, peak = chain_point(chain, x, segments)
        assert saved == units * unit
        assert peak >= saved


def test_chain_checkpointing_keeps_gradients_and_rejects_bad_segments() -> None:
    chain, x = make_chain(9, 8), torch.randn(4, 8)
    ref = gradients(chain, lambda: chain_loss(chain, x, 1))
    assert max_diff(gradients(chain, lambda: chain_loss(chain, x, 3)), ref) <= 1e-6
    with pytest.raises(ValueError, match="segments must be between 1 and 9"):
        chain_loss(chain, x, 10)
    with pytest.raises(ValueError, match="segments must be between 1 and 9"):
        even_segments(9, 0)


def test_meter_counts_live_bytes_exactly() -> None:
    a = torch.ones(256)
    with ActivationMeter([a]) as meter:
        b = a * 2  # 1 KiB
        c = b.view(16, 16)  # a view: same storage, not counted again
        d = b + 1  # 1 KiB more
        assert meter.live == 2048
        del b, c, d
        assert meter.live == 0
    assert meter.peak == 2048

    def step() -> None:
        tmp = [a * i for i in range(4)]
        del tmp

    assert peak_activation_bytes(step, [a]) == 4 * 1024


def test_unsupported_models_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="needs a diffusers UNet2DModel"):
        check_stageable(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="unknown policy 'bogus'"):
        prepare(fresh_unet(), "bogus")


@pytest.mark.parametrize("policy", POLICIES[1:])
def test_apply_keeps_the_call_signature_and_remove_undoes_it(policy: str) -> None:
    unet = fresh_unet()
    x, t, y = inputs(2)
    with torch.no_grad():
        expected = unet(x, t, class_labels=y).sample
    model = apply_gradient_checkpointing(copy.deepcopy(unet), CheckpointConfig(policy))
    with torch.no_grad():  # no recomputation without gradients: the plain forward pass
        torch.testing.assert_close(model(x, t, class_labels=y).sample, expected)
        (tupled,) = model(x, t, class_labels=y, return_dict=False)
        torch.testing.assert_close(tupled, expected)
    remove_gradient_checkpointing(model)
    assert not any("forward" in vars(m) for m in model.modules())
    assert not model.is_gradient_checkpointing


def test_checkpoint_config_rejects_unknown_policies() -> None:
    with pytest.raises(ValueError, match="unknown policy 'everything'"):
        CheckpointConfig("everything")
    with pytest.raises(ValueError, match="segments applies to the 'sqrt' policy only"):
        CheckpointConfig("stage", segments=3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("batch", 0, "--batch must be >= 1, got 0"),
        ("microbatches", 1, r"--microbatches must be between 2 and --batch \(64\), got 1"),
        ("repeats", 0, "--repeats must be >= 1, got 0"),
        ("chain_ns", (4,), "--chain-ns needs two or more distinct lengths"),
    ],
)
def test_bad_configuration_names_the_option(field: str, value: object, message: str) -> None:
    from dataclasses import replace

    from reference.gradient_checkpointing.bench import FULL

    with pytest.raises(ValueError, match=message):
        replace(FULL, **{field: value}).validate()


def test_the_full_benchmark_times_at_least_fifteen_warmed_up_rounds() -> None:
    from reference.gradient_checkpointing.bench import FULL

    assert FULL.repeats >= 15 and FULL.warmup >= 1


@pytest.mark.slow
def test_quick_benchmark_puts_intervals_on_every_time_ratio(quick_result) -> None:
    result = quick_result("gradient-checkpointing")
    rows = {r["id"]: r for r in result["rows"]}
    assert {r["role"] for r in rows.values()} == {"baseline", "reference", "technique", "control"}
    for key, row in rows.items():  # no sampling: no quality figures, no seeds
        assert "seeds" not in row and "fd_digits" not in row["values"]
        if key != "none":
            lo, hi = row["intervals"]["step_time_ratio"]
            assert lo <= row["values"]["step_time_ratio"] <= hi
    head = result["headline"]
    assert head["limit_kind"] == "estimate" and head["speedup_interval"] is not None
    # the step-time ratio is the reciprocal of the speedup, and so is its interval
    ratio = rows[head["row"]]["intervals"]["step_time_ratio"]
    assert ratio == pytest.approx(
        [1 / head["speedup_interval"][1], 1 / head["speedup_interval"][0]]
    )
    step = {a["id"]: a for a in result["aims"]}["step-time"]
    assert step["interval"] == pytest.approx(ratio)
    assert (step["row"], step["against"]) == (head["row"], "none")
    threads = {n["id"]: n["params"] for n in result["notes"]}["latency-protocol"]["threads"]
    assert threads == result["provenance"]["threads"] == 2
