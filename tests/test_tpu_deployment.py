"""reference.tpu_deployment: the JAX port against diffusers, the compiled DDIM loop against the
harness sampler, sharded against unsharded, batch buckets, bad arguments and a missing JAX."""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest
import torch

from reference import tpu_deployment as tpu
from reference import zoo
from reference.harness import class_labels, make_noise, model_eps_fn, sample
from reference.tpu_deployment import JAX_MISSING, configure_host_devices
from reference.zoo.specs import TEACHER_CONFIG, build_unet

configure_host_devices(8)  # before jax is imported anywhere in this worker
jax = importlib.import_module("jax") if os.environ.get("CI") else pytest.importorskip("jax")

TINY = {
    "sample_size": 16,
    "in_channels": 1,
    "out_channels": 1,
    "block_out_channels": [16, 32],
    "layers_per_block": 1,
    "down_block_types": ["DownBlock2D", "AttnDownBlock2D"],
    "up_block_types": ["AttnUpBlock2D", "UpBlock2D"],
    "attention_head_dim": 8,
    "norm_num_groups": 4,
    "num_class_embeds": 11,
}


def _random_unet(config: dict, seed: int = 0) -> torch.nn.Module:
    """A diffusers UNet2DModel with non-trivial weights (fresh init zeroes some layers)."""
    torch.manual_seed(seed)
    model = build_unet(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model


@pytest.fixture(scope="module")
def tiny() -> tuple[torch.nn.Module, dict, dict]:
    model = _random_unet(TINY)
    return model, tpu.convert_state_dict(model.state_dict()), tpu.check_config(dict(model.config))


def _jax_sample(sampler, params, noise: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    out = sampler.compiled(*sampler.place(params, tpu.nchw_to_nhwc(noise.numpy()), labels.numpy()))
    return tpu.nhwc_to_nchw(np.asarray(out))


@pytest.mark.slow
def test_port_of_the_teacher_architecture_matches_diffusers_in_fp32_and_bf16_is_close() -> None:
    model = _random_unet(TEACHER_CONFIG)
    params = tpu.convert_state_dict(model.state_dict())
    cfg = tpu.check_config(dict(model.config))
    x = torch.randn(4, 1, 16, 16, generator=torch.Generator().manual_seed(1))
    t, y = torch.tensor([999, 500, 10, 0]), torch.tensor([0, 3, 10, 9])  # 10 = null class
    with torch.no_grad():
        ref = model(x, t, class_labels=y).sample.numpy()
    fwd = jax.jit(lambda p, x, t, y: tpu.unet_apply(p, cfg, x, t, y))
    xs, ts, ys = tpu.nchw_to_nhwc(x.numpy()), t.numpy(), y.numpy()
    out = tpu.nhwc_to_nchw(np.asarray(fwd(params, xs, ts, ys)))
    assert np.abs(out - ref).max() <= 1e-4
    bf = fwd(tpu.cast_params(params, jax.numpy.bfloat16), xs.astype(jax.numpy.bfloat16), ts, ys)
    err = np.abs(tpu.nhwc_to_nchw(np.asarray(bf, dtype=np.float32)) - ref).max()
    assert 0 < err < 0.05 * np.abs(ref).max()  # bf16 really ran, and stays close


def test_ddim_tables_and_update_reproduce_the_diffusers_scheduler() -> None:
    sched = zoo.teacher_scheduler()
    tables = tpu.ddim_tables(zoo.teacher_scheduler(), 7)
    sched.set_timesteps(7)
    assert tables.timesteps.tolist() == sched.timesteps.tolist()
    gen = torch.Generator().manual_seed(0)
    x, eps = torch.randn(3, 1, 4, 4, generator=gen), torch.randn(3, 1, 4, 4, generator=gen)
    for i, t in enumerate(sched.timesteps):
        ref = sched.step(eps, t, x).prev_sample.numpy()
        ours = tpu.ddim_update(
            x.numpy(), eps.numpy(), tables.alpha[i], tables.alpha_prev[i], tables.clip
        )
        assert np.abs(np.asarray(ours) - ref).max() <= 1e-5


@pytest.mark.slow
def test_compiled_loop_matches_the_harness_sampler_and_per_step_dispatch(tiny) -> None:
    model, params, cfg = tiny
    noise, labels = make_noise(8, seed=0), class_labels(8)
    ref = sample(
        model_eps_fn(model),
        zoo.teacher_scheduler(),
        noise,
        steps=3,
        labels=labels,
        guidance_scale=2.0,
    ).numpy()
    sampler = tpu.Sampler(cfg, tpu.ddim_tables(zoo.teacher_scheduler(), 3), guidance_scale=2.0)
    placed = sampler.place(params, tpu.nchw_to_nhwc(noise.numpy()), labels.numpy())
    loop = np.asarray(sampler.compiled(*placed))
    stepped = np.asarray(sampler.per_step(*placed))
    assert np.abs(tpu.nhwc_to_nchw(loop) - ref).max() <= 1e-4
    assert np.abs(loop - stepped).max() <= 1e-5  # same step function, same arithmetic


@pytest.mark.slow
def test_sharded_samples_equal_unsharded_ones(tiny) -> None:
    _, params, cfg = tiny
    assert jax.device_count() == 8, "XLA_FLAGS must be set before jax is imported"
    tables = tpu.ddim_tables(zoo.teacher_scheduler(), 2)
    mesh = tpu.data_mesh()
    noise, labels = make_noise(16, seed=3), class_labels(16)
    sharded_sampler = tpu.Sampler(cfg, tables, mesh=mesh)
    placed = sharded_sampler.place(params, tpu.nchw_to_nhwc(noise.numpy()), labels.numpy())
    assert len(placed[1].sharding.device_set) == 8  # the batch really is split
    sharded = np.asarray(sharded_sampler.compiled(*placed))
    plain = tpu.Sampler(cfg, tables)
    # per-device shapes equal -> the same per-device program -> the same rows
    chunks = [
        _jax_sample(plain, params, noise[i : i + 2], labels[i : i + 2]) for i in range(0, 16, 2)
    ]
    assert np.abs(tpu.nhwc_to_nchw(sharded) - np.concatenate(chunks)).max() <= 1e-5
    whole = _jax_sample(plain, params, noise, labels)  # other batch shape: float reassociation
    assert np.abs(tpu.nhwc_to_nchw(sharded) - whole).max() <= 1e-5


def test_bucket_size_and_padding() -> None:
    assert [tpu.bucket_size(n, (8, 16, 32)) for n in (1, 8, 9, 32, 33)] == [8, 8, 16, 32, 33]
    assert tpu.bucket_size(5, (4, 6, 8, 16), multiple=4) == 8
    assert tpu.bucket_size(40, (8, 16), multiple=8) == 40
    x, y = tpu.pad_batch(np.ones((3, 16, 16, 1), np.float32), np.array([1, 2, 3]), 8)
    assert x.shape == (8, 16, 16, 1) and y.tolist() == [1, 2, 3, 10, 10, 10, 10, 10]
    with pytest.raises(ValueError, match="batch size must be >= 1"):
        tpu.bucket_size(0)
    with pytest.raises(ValueError, match="smaller than the batch"):
        tpu.pad_batch(x, y, 4)


@pytest.mark.slow
def test_buckets_avoid_recompilation_and_padding_leaves_real_rows_alone(tiny) -> None:
    _, params, cfg = tiny
    tables = tpu.ddim_tables(zoo.teacher_scheduler(), 1)
    exact, bucketed = tpu.Sampler(cfg, tables), tpu.Sampler(cfg, tables)
    noise, labels = make_noise(5, seed=1), class_labels(5)
    for n in (3, 5):
        x = tpu.nchw_to_nhwc(noise[:n].numpy())
        exact.compiled(*exact.place(params, x, labels[:n].numpy()))
        padded = bucketed.compiled(
            *bucketed.place(params, *tpu.pad_batch(x, labels[:n].numpy(), 8))
        )
    assert exact.compilations() == 2 and bucketed.compilations() == 1
    rows = exact.compiled(*exact.place(params, tpu.nchw_to_nhwc(noise.numpy()), labels.numpy()))
    assert np.abs(np.asarray(padded)[:5] - np.asarray(rows)).max() <= 1e-5


def test_unsupported_config_and_bad_arguments_give_one_clear_line(monkeypatch) -> None:
    from dataclasses import replace

    from reference.tpu_deployment.bench import FULL

    with pytest.raises(ValueError, match="resnet_time_scale_shift='scale_shift' is not supported"):
        tpu.check_config({**TEACHER_CONFIG, "resnet_time_scale_shift": "scale_shift"})
    with pytest.raises(ValueError, match="down block 'CrossAttnDownBlock2D' is not supported"):
        tpu.check_config({**TEACHER_CONFIG, "down_block_types": ["CrossAttnDownBlock2D"]})
    with pytest.raises(ValueError, match=r"^--steps must be >= 1, got 0$"):
        replace(FULL, steps=0).validate()
    with pytest.raises(ValueError, match="--stream size 40 exceeds the largest of --buckets"):
        replace(FULL, stream=(3, 40)).validate()
    with pytest.raises(ValueError, match="must be a multiple of the 8 devices"):
        replace(FULL, n=12).validate()
    monkeypatch.setitem(sys.modules, "jax", None)  # what a missing [tpu] extra looks like
    with pytest.raises(ValueError) as info:
        FULL.validate()
    assert str(info.value) == JAX_MISSING


def test_payoff_covers_the_four_cases() -> None:
    from reference.tpu_deployment.measure import payoff

    kind, params = payoff(1.0, 20.0, 10.0)  # 1 s repaid by 10 ms per image
    assert kind == "payoff-after" and params["images"] == pytest.approx(100.0)
    assert payoff(-1.0, 20.0, 10.0) == ("payoff-first-image", {})
    assert payoff(1.5, 10.0, 20.0) == ("payoff-never-slower", {})
    kind, params = payoff(-0.2, 10.0, 10.3)
    assert kind == "payoff-lead-only" and round(params["images"]) == 667


def test_full_run_measures_quality_on_paired_seeds_at_the_shared_sample_size() -> None:
    from reference.harness.seeds import N_QUALITY, SEEDS
    from reference.tpu_deployment.bench import FULL

    assert FULL.n_quality == N_QUALITY and FULL.seeds == SEEDS and FULL.repeats >= 15


@pytest.mark.slow
def test_quick_benchmark_reports_paired_quality_and_the_real_reference(quick_result) -> None:
    result = quick_result("tpu-deployment")
    rows = {r["id"]: r for r in result["rows"]}
    seeds = result["settings"]["seeds"]
    for key in ("torch", "compiled"):  # the rows whose samples can differ (quick: no bf16)
        assert len(rows[key]["seeds"]["fd_digits"]) == len(seeds)
        assert {"fd_digits", "kid_digits"} <= set(rows[key]["intervals"])
    assert "fd_digits" not in rows["per-step"]["values"]  # the loop's arithmetic, see the note
    assert rows["real"]["role"] == "reference"
    assert rows["real"]["config"]["n"] == result["settings"]["n_quality"]
    head = result["headline"]
    assert head["quality_interval"] is not None
    assert head["quality_interval"][0] <= head["quality_ratio"] <= head["quality_interval"][1]
    notes = {n["id"] for n in result["notes"]}
    assert {"quality-protocol", "quality-rows"} <= notes and "fdd-at-n" not in notes
    aims = {a["id"]: a for a in result["aims"]}
    assert aims["loop-vs-step"]["against"] == "per-step" and aims["parity"]["row"] == "compiled"
