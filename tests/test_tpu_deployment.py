"""reference.tpu_deployment: the JAX port against diffusers, the JAX clipped DDIM against the
harness's (`reference.harness.ode`), sharded against unsharded, batch buckets, the declared
comparison and its aims, bad arguments and a missing JAX."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import numpy as np
import pytest
import torch

from reference import tpu_deployment as tpu
from reference import zoo
from reference.harness import class_labels, make_noise, model_eps_fn, ode
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


def test_ddim_tables_and_update_are_the_clipped_ode_step_of_the_harness() -> None:
    acp = ode.schedule().alphas_cumprod
    tables = tpu.ddim_tables(ode.schedule(), 7)
    ts = ode.grid(7)
    assert tables.timesteps.tolist() == ts.tolist() and tables.clip == 1.0
    assert tables.alpha.tolist() == acp[ts].tolist()
    assert tables.alpha_prev.tolist() == [*acp[ts[1:]].tolist(), 1.0]  # the last step: a_s = 1
    gen = torch.Generator().manual_seed(0)
    x, eps = torch.randn(3, 1, 4, 4, generator=gen), torch.randn(3, 1, 4, 4, generator=gen)
    update = jax.jit(tpu.ddim_update, static_argnums=4)  # one program, not one per operation
    for i, t in enumerate(ts):
        a, a_s = acp[t], torch.tensor(float(tables.alpha_prev[i]))
        ref = ode.ddim_step(x, ode.clipped_x0(x, eps, a), a, a_s).numpy()
        ours = update(x.numpy(), eps.numpy(), tables.alpha[i], tables.alpha_prev[i], 1.0)
        # (1)-(3) in the same float32 order in both frameworks: values of order 1, so a few
        # units in the last place (6e-8 each); 1e-6 leaves room for a fused multiply-add
        assert np.abs(np.asarray(ours) - ref).max() <= 1e-6


@pytest.mark.slow
def test_jax_clipped_ddim_matches_the_harness_ode_solve_and_per_step_dispatch(tiny) -> None:
    model, params, cfg = tiny
    noise, labels = make_noise(8, seed=0), class_labels(8)
    eps = model_eps_fn(model)
    ref = ode.solve(eps, noise, steps=3, labels=labels, guidance_scale=2.0).numpy()
    sampler = tpu.Sampler(cfg, tpu.ddim_tables(ode.schedule(), 3), guidance_scale=2.0)
    placed = sampler.place(params, tpu.nchw_to_nhwc(noise.numpy()), labels.numpy())
    loop = tpu.nhwc_to_nchw(np.asarray(sampler.compiled(*placed)))
    stepped = tpu.nhwc_to_nchw(np.asarray(sampler.per_step(*placed)))
    # float32 in two frameworks: the U-Nets agree to about 1e-6 (convolutions and attention
    # sum in other orders), and (1)-(3) carry that on; where x0 is not clipped at t = 999,
    # (1) magnifies it by 1/sqrt(a_t) = 2e4 and (3) shrinks it by sqrt(a_s). Measured: 3e-6
    # here (3 steps, guidance 2), 3.5e-5 for the zoo teacher at 50 steps; 2e-5 leaves 6x for
    # another XLA or BLAS build, far below what another rule changes here (a 4-step grid moves
    # these samples by 0.43, diffusers' DDIM step, which keeps the raw noise, by 1.85)
    assert np.abs(loop - ref).max() <= 2e-5
    assert np.abs(loop - ref).max() > 0  # two programs really ran
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


def test_unsupported_config_and_a_missing_jax_give_one_clear_line(monkeypatch) -> None:
    from dataclasses import replace

    from reference.tpu_deployment.bench import FULL

    with pytest.raises(ValueError, match="resnet_time_scale_shift='scale_shift' is not supported"):
        tpu.check_config({**TEACHER_CONFIG, "resnet_time_scale_shift": "scale_shift"})
    with pytest.raises(ValueError, match="down block 'CrossAttnDownBlock2D' is not supported"):
        tpu.check_config({**TEACHER_CONFIG, "down_block_types": ["CrossAttnDownBlock2D"]})
    with pytest.raises(ValueError, match="--stream size 40 exceeds the largest of --buckets"):
        replace(FULL, stream=(3, 40)).validate()
    with pytest.raises(ValueError, match="must be a multiple of the 8 devices"):
        replace(FULL, batch_latency=12).validate()
    monkeypatch.setitem(sys.modules, "jax", None)  # what a missing [tpu] extra looks like
    with pytest.raises(ValueError) as info:
        FULL.validate()
    assert str(info.value) == JAX_MISSING


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "0"], "--steps"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),  # class-balanced samples
        (["--seeds", "0"], "--seeds"),
        (["--batch-latency", "12"], "multiple of the 8 devices"),  # the sharded row splits it
        (["--stream", "3,40"], "exceeds the largest of --buckets"),
        (["--guidance-scale", "nan"], "--guidance-scale"),
    ],
)
def test_bad_options_are_one_line_before_any_program_is_built(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    ways = importlib.import_module("reference.tpu_deployment.measure")  # the module, not the name
    monkeypatch.setattr(ways, "measure", lambda *a, **k: pytest.fail("a program was built"))
    assert message in refused_in_one_line("reference.tpu_deployment", args)


def test_payoff_covers_the_four_cases() -> None:
    from reference.tpu_deployment.measure import payoff

    kind, params = payoff(1.0, 20.0, 10.0)  # 1 s repaid by 10 ms per image
    assert kind == "payoff-after" and params["images"] == pytest.approx(100.0)
    assert payoff(-1.0, 20.0, 10.0) == ("payoff-first-image", {})
    assert payoff(1.5, 10.0, 20.0) == ("payoff-never-slower", {})
    kind, params = payoff(-0.2, 10.0, 10.3)
    assert kind == "payoff-lead-only" and round(params["images"]) == 667


def test_full_run_is_the_one_baseline_at_the_shared_sample_size() -> None:
    from reference.harness.scores import MAX_REAL_N
    from reference.tpu_deployment.bench import FULL

    assert FULL.steps == 50 and FULL.solution_steps == ode.SOLUTION[1]  # DDIM-50, the solution
    assert FULL.n_quality == 140 <= MAX_REAL_N and len(FULL.seeds) >= 5 and FULL.repeats >= 15


def _fake_ways(full_rows: bool):
    """Stand-ins for the programs (no JAX): torch's samples, the loop 2e-6 and bfloat16 3e-3
    away from them, the solution 0.01 RMS away; every timed program does nothing."""
    from reference.tpu_deployment.measure import Ways

    def base(seed: int) -> torch.Tensor:
        return make_noise(20, seed).clamp(-1, 1)

    shift = {"torch": 0.0, "compiled": 2e-6, "bf16": 3e-3}
    sampled = ("torch", "compiled", "bf16") if full_rows else ("torch", "compiled")
    timed = ("torch", "compiled", "per-step", *(("sharded", "bf16") if full_rows else ()))
    return Ways(
        n=8,
        steps=2,
        timed={k: (lambda: None) for k in timed},
        sample={k: (lambda seed, d=shift[k]: base(seed) + d) for k in sampled},
        solution=lambda seed: base(seed) + 0.01 * make_noise(20, seed + 100),
        first_s={k: 1.0 for k in timed},
        max_abs={k: 0.0 for k in timed},
        devices=8 if full_rows else 1,
    )


@pytest.mark.parametrize("full_rows", [False, True])
def test_the_declared_comparison_judges_fidelity_parity_and_bf16(full_rows: bool) -> None:
    from dataclasses import replace

    from reference.tpu_deployment.bench import QUICK, comparison, judged

    cfg = replace(QUICK, full_rows=full_rows)
    ways = _fake_ways(full_rows)
    m = judged(comparison(cfg, ways), ways)
    rows = {r.id: r for r in m.rows}
    assert rows["torch"].role == "baseline" and rows["per-step"].role == "control"
    for key in ("torch", "compiled", *(("bf16",) if full_rows else ())):
        seeds = rows[key].seeds
        assert {"rms_to_solution", "fd_digits", "kid_digits", "max_abs_vs_torch"} <= set(seeds)
        assert len(seeds["rms_to_solution"]) == len(cfg.seeds)
    for key in ("per-step", *(("sharded",) if full_rows else ())):  # timed only
        assert rows[key].seeds == {} and rows[key].values["max_abs_vs_torch"] == 0.0
    # the stand-in shift of 2e-6, up to float32 rounding of pixels of size 1 (1.2e-7)
    assert rows["compiled"].values["max_abs_vs_torch"] == pytest.approx(2e-6, abs=2e-7)
    for row in rows.values():  # the first call less the median round; ms per image
        assert row.values["ms_per_image"] == row.values["latency_ms"] / 8
        expected = 0.0 if row.id == "torch" else 1.0 - row.values["latency_ms"] / 1000
        assert row.values["compile_s"] == pytest.approx(expected, abs=1e-12)
    aims = {a.id: a for a in m.aims}
    assert m.aims[0].id == "parity" and aims["parity"].state == "met"
    assert (aims["parity"].row, aims["parity"].against) == ("compiled", "torch")
    assert aims["parity"].interval == rows["compiled"].intervals["max_abs_vs_torch"]
    assert (aims["loop-vs-step"].row, aims["loop-vs-step"].against) == ("compiled", "per-step")
    assert ("bf16-quality" in aims) == full_rows
    if full_rows:  # sqrt(0.01^2 + 0.003^2) / 0.01 = 1.044, per seed up to the noise's own RMS
        assert aims["bf16-quality"].measured == pytest.approx(1.044, abs=0.01)
        assert aims["bf16-quality"].state == "met"
    head = m.headline
    assert head.row == "compiled" and head.quality_metric == "rms_to_solution"
    assert head.quality_ratio == pytest.approx(1.0, abs=1e-3)  # 2e-6 against 0.01


def test_the_largest_deviation_keeps_its_interval_at_or_above_zero() -> None:
    """Two seeds 1e-6 and 9e-6 from torch: mean 5e-6, but the t interval (t = 12.7 at one
    degree of freedom) reaches -4.6e-5; the declared range clips it at 0, and the result
    records the range the integrity check clips with."""
    from dataclasses import replace

    from reference.harness.compare import outcome
    from reference.tpu_deployment.bench import QUICK, comparison, judged

    ways = _fake_ways(False)
    base = ways.sample["torch"]
    ways = replace(
        ways,
        sample={**ways.sample, "compiled": lambda seed: base(seed) + (1e-6 if seed == 0 else 9e-6)},
    )
    c = comparison(replace(QUICK, full_rows=False), ways)
    assert c.range_of("max_abs_vs_torch") == (0.0, None)
    m = judged(c, ways)
    compiled = next(r for r in m.rows if r.id == "compiled")
    lo, hi = compiled.intervals["max_abs_vs_torch"]
    # float32 pixels of size 1 round the shifts by up to 1.2e-7: the mean is 5e-6 within that
    assert lo == 0.0 and hi > compiled.values["max_abs_vs_torch"] == pytest.approx(5e-6, abs=2e-7)
    assert m.aims[0].interval == (lo, hi)  # parity is judged on the clipped interval
    body = outcome(m, settings={}, notes=(), figures=()).body
    assert body["metrics"]["max_abs_vs_torch"]["range"] == [0.0, None]


def test_demo_prints_every_row_and_writes_a_grid_of_the_sampled_rows(
    tmp_path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.tpu_deployment.bench import DEMO, demo

    ways = importlib.import_module("reference.tpu_deployment.measure")
    monkeypatch.setattr(ways, "measure", lambda *a, **k: _fake_ways(DEMO.full_rows))
    demo(DEMO, tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[1:4]] == ["torch", "compiled", "per-step"]
    assert (tmp_path / "tpu-deployment-demo.png").is_file()
    assert out[-1].endswith("(rows: torch, compiled)")
