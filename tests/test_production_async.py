"""reference.async_pipeline on diffusers' UNet2DConditionModel: the stages compose to the plain
forward exactly, the FLOP split is optimal, the schedule in one process is exact where it should
be and one step stale where AsyncDiff says, two ranks under torchrun compute that very schedule,
and every other production class is refused in one line."""

from __future__ import annotations

import itertools
import types
from collections.abc import Iterator

import pytest
import torch

from reference.async_pipeline import production as ap
from reference.async_pipeline.production_launch import run_async
from reference.async_pipeline.stages import balanced_split
from reference.harness.cost import count_flops
from reference.harness.production import UnsupportedModel
from reference.zoo import shapes

pytestmark = pytest.mark.xdist_group("async_pipeline")

STEPS = 4


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Bit-for-bit comparisons need the same kernels at the same thread count everywhere: the
    ranks of torchrun run one thread each (``AsyncPipelineConfig.threads``), so does this test."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def unet() -> torch.nn.Module:
    return shapes.tiny("unet2d-condition")


def _inputs(unet: torch.nn.Module, side: int = 8) -> dict:
    inputs = shapes.example_inputs(unet, batch=2, timestep=700.0)
    g = torch.Generator().manual_seed(1)
    inputs["sample"] = torch.randn(2, unet.config.in_channels, side, side, generator=g)
    return inputs


def _staged(unet: torch.nn.Module, split: ap.StageSplit, inputs: dict) -> torch.Tensor:
    kwargs = {k: v for k, v in inputs.items() if k != "return_dict"}
    sample, t = kwargs.pop("sample"), kwargs.pop("timestep")
    cond = ap.conditioning(sample, kwargs.pop("encoder_hidden_states"), **kwargs)
    state = sample
    for lo, hi in split.bounds:
        state = ap.run_units(unet, state, t, cond, lo, hi)
    return state.h


@pytest.mark.parametrize("side", [8, 7])  # 7: not a multiple of 2**num_upsamplers, upsample_size
def test_every_split_into_two_and_three_stages_is_the_plain_forward_exactly(unet, side) -> None:
    inputs = _inputs(unet, side)
    inputs["encoder_attention_mask"] = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    n = len(ap.unit_names(unet))
    with torch.no_grad():
        ref = unet(**inputs)[0]
        for stages in (1, 2, 3):
            for cuts in itertools.combinations(range(1, n), stages - 1):
                split = ap.split_stages(unet, stages, cuts)
                # the same modules on the same tensors in the same order: equal bits
                assert torch.equal(_staged(unet, split, inputs), ref), cuts


def test_flop_split_minimises_the_costliest_stage_and_the_units_add_up(unet) -> None:
    inputs = _inputs(unet)
    kwargs = {k: v for k, v in inputs.items() if k != "return_dict"}
    sample, t = kwargs.pop("sample"), kwargs.pop("timestep")
    cond = ap.conditioning(sample, kwargs.pop("encoder_hidden_states"))
    flops = ap.unit_flops(unet, sample, t, cond)
    with torch.no_grad():
        whole = count_flops(unet, **inputs)
        context = count_flops(ap.stage_context, unet, sample, t, cond)
    assert sum(flops.values()) + context == whole  # units + the context once = the forward
    costs = list(flops.values())
    for stages in (2, 3):
        cuts = ap.balanced_stages(costs, stages)
        worst = {
            c: max(sum(costs[a:b]) for a, b in itertools.pairwise((0, *c, len(costs))))
            for c in itertools.combinations(range(1, len(costs)), stages - 1)
        }
        assert worst[cuts] == min(worst.values())  # (3) by exhaustive search
    assert ap.balanced_stages(costs, 2) == (balanced_split(flops),)  # the package's K = 2 rule
    split = ap.split_stages(unet, 2, inputs=inputs)
    assert split.flops == tuple(sum(costs[a:b]) for a, b in split.bounds)
    timed = ap.split_stages(unet, 3, inputs=inputs, balance="time")  # (3) on measured times
    assert timed.unit_flops == tuple(costs) and len(timed.unit_times_ms) == len(costs)
    assert tuple(hi for _, hi in timed.bounds[:-1]) == ap.balanced_stages(timed.unit_times_ms, 3)


def test_sync_mode_and_warm_up_are_exact_and_remove_restores_the_model(unet) -> None:
    inputs = _inputs(unet)
    noise, ehs = inputs["sample"], inputs["encoder_hidden_states"]
    plain = ap.trajectory(unet, noise, ehs, STEPS)
    with torch.no_grad():
        before = unet(**inputs)[0]
    forward = unet.forward
    for config in (
        ap.AsyncPipelineConfig(stages=3, mode="sync"),
        ap.AsyncPipelineConfig(stages=2, warmup=STEPS),  # warm-up covers every step
        ap.AsyncPipelineConfig(stages=1, warmup=0),  # one stage: (2) is (1)
    ):
        with ap.apply_async_pipeline(types.SimpleNamespace(unet=unet), config) as applied:
            assert applied.model is unet and "forward" in vars(unet)
            got = ap.trajectory(unet, noise, ehs, STEPS)
        assert all(torch.equal(a, b) for a, b in zip(got, plain, strict=True)), config
        assert "forward" not in vars(unet) and unet.forward == forward
    with torch.no_grad():
        assert torch.equal(unet(**inputs)[0], before)


def test_async_step_uses_the_previous_steps_hand_off(unet) -> None:
    inputs = _inputs(unet)
    noise, ehs = inputs["sample"], inputs["encoder_hidden_states"]
    plain = ap.trajectory(unet, noise, ehs, STEPS)
    config = ap.AsyncPipelineConfig(stages=2, warmup=1)
    with ap.apply_async_pipeline(unet, config) as applied:
        got = ap.trajectory(unet, noise, ehs, STEPS)
        again = ap.trajectory(unet, noise, ehs, STEPS)  # t rises: a new trajectory, step 0 again
        (lo, b), (_, n) = applied.state["split"].bounds
    assert all(torch.equal(a, c) for a, c in zip(got, again, strict=True))
    assert torch.equal(got[0], plain[0])  # warm-up: (1)
    # (2) at step 1 by hand: stage 2 decodes stage 1's hand-off of x_0 with t_1's embedding
    scheduler = ap.ddim_scheduler(STEPS)
    t0, t1 = scheduler.timesteps[:2]
    cond = ap.conditioning(noise, ehs)
    with torch.no_grad():
        stale = ap.run_units(unet, noise * scheduler.init_noise_sigma, t0, cond, lo, b)
        eps = ap.run_units(unet, stale, t1, cond, b, n).h
    assert torch.equal(got[1], scheduler.step(eps, t1, got[0]).prev_sample)
    assert (got[1] - plain[1]).abs().max() > 0  # and that is not the synchronous step


@pytest.mark.slow
def test_two_ranks_under_torchrun_compute_the_asynchronous_schedule(unet) -> None:
    warmup = 2
    config = ap.AsyncPipelineConfig(stages=2, warmup=warmup, threads=1)
    run = run_async("unet2d-condition", config, steps=STEPS, world_size=2, batch=2)
    plain = ap.trajectory(unet, run.noise, run.encoder_hidden_states, STEPS)
    with ap.apply_async_pipeline(unet, config) as applied:
        schedule = ap.trajectory(unet, run.noise, run.encoder_hidden_states, STEPS)
        assert run.stages == [applied.state["split"].names(k) for k in range(2)]
    # gloo moves the bytes unchanged and each rank runs the same kernels at one thread as this
    # process, so the ranks reproduce the schedule bit for bit: the warm-up steps are the
    # synchronous sampler's, the later ones (2)'s, which the synchronous sampler is not
    for i in range(STEPS):
        assert torch.equal(run.trajectory[i], schedule[i]), i
        assert torch.equal(run.trajectory[i], plain[i]) == (i < warmup), i
    assert torch.equal(run.latents, schedule[-1])
    ehs = run.encoder_hidden_states
    inputs = {"sample": run.noise, "timestep": torch.tensor(500.0), "encoder_hidden_states": ehs}
    assert run.stage_flops == list(ap.split_stages(unet, 2, inputs=inputs).flops)
    assert len(run.compute_s) == len(run.wall_s) == 2 and min(run.compute_s) > 0
    assert all(c <= w for c, w in zip(run.compute_s, run.wall_s, strict=True))


@pytest.mark.parametrize("kind", [k for k in shapes.KINDS if k != "unet2d-condition"])
def test_other_production_classes_are_refused_in_one_line(kind) -> None:
    model = shapes.tiny(kind)
    name = shapes.CLASS_OF[kind]
    line = f"does not support {name}; supported: UNet2DConditionModel"
    with pytest.raises(UnsupportedModel, match=line) as info:
        ap.apply_async_pipeline(model, ap.AsyncPipelineConfig())
    assert "\n" not in str(info.value) and "down/mid/up blocks" in str(info.value)  # says why
    assert "forward" not in vars(model)  # refused before anything changed
    with pytest.raises(UnsupportedModel, match=line):  # before torchrun is started
        run_async(kind, ap.AsyncPipelineConfig(), steps=2, world_size=2)


def test_bad_arguments_and_unsplit_inputs_give_one_line(unet) -> None:
    for kwargs, message in (
        ({"stages": 0}, "stages and threads must be >= 1"),
        ({"mode": "stream"}, "unknown mode 'stream'; known: sync, async"),
        ({"balance": "params"}, "unknown balance 'params'; known: flops, time"),
        ({"stages": 3, "split": (4, 2)}, "split needs 2 increasing unit boundaries"),
    ):
        with pytest.raises(ValueError, match=message):
            ap.AsyncPipelineConfig(**kwargs)
    with pytest.raises(ValueError, match=r"8 stages need 1\.\.7 units"):
        ap.apply_async_pipeline(unet, ap.AsyncPipelineConfig(stages=8))
    with pytest.raises(ValueError, match="world_size 3 != stages 2"):
        run_async("unet2d-condition", ap.AsyncPipelineConfig(), steps=2, world_size=3)
    with pytest.raises(ValueError, match=r"importable by name in every rank, got .*<lambda>"):
        run_async(lambda: unet, ap.AsyncPipelineConfig(), steps=2, world_size=2)
    inputs = _inputs(unet)
    inputs["mid_block_additional_residual"] = torch.zeros(1)
    refused = pytest.raises(ValueError, match="does not split mid_block_additional_residual")
    with ap.apply_async_pipeline(unet, ap.AsyncPipelineConfig()), refused:
        unet(**inputs)
    assert "forward" not in vars(unet)
