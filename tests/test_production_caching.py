"""DeepCache, first-block caching and step forecasting on diffusers' production classes.

Exactness where the technique is exact (interval 1, threshold 0), the cached call against an
independent oracle, agreement with diffusers' own hooks where the same rule can be configured,
work actually skipped, reset for a new run, ``remove()`` restoring the original outputs, pipelines
and the one-line refusals.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn

from reference.accelerate_method.production import (
    ForecastConfig,
    apply_step_forecasting,
)
from reference.feature_caching.production import (
    DeepCacheConfig,
    FirstBlockCacheConfig,
    apply_deepcache,
    apply_first_block_cache,
    deep_path,
)
from reference.harness.production import UnsupportedModel
from reference.zoo.shapes import KINDS, example_inputs, kind_of, tiny

UNET_KINDS = ("unet2d", "unet2d-condition")
TRANSFORMER_KINDS = ("dit", "pixart", "sd3", "flux")
EPS32 = torch.finfo(torch.float32).eps  # 2^-23


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    # millisecond-sized tiny models: a second thread only adds contention on a shared CPU
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _no_grad() -> Iterator[None]:
    with torch.no_grad():
        yield


def _key(model: nn.Module) -> str:
    return "sample" if kind_of(model).startswith("unet") else "hidden_states"


def _trajectory(model: nn.Module, steps: int, drift: float = 0.05) -> list[dict[str, Any]]:
    """``steps`` calls along a smooth path: the input drifts to fixed noise, the timestep falls
    by an exactly representable step (16, or 1/64 for Flux's unit-interval time)."""
    base = example_inputs(model)
    key = _key(model)
    noise = torch.randn(base[key].shape, generator=torch.Generator().manual_seed(1))
    t0 = base["timestep"]
    dt = 16.0 if float(t0.reshape(-1)[0]) >= 1 else 1 / 64
    calls = []
    for s in range(steps):
        inputs = dict(base)
        inputs[key] = base[key] * (1 - drift * s) + noise * (drift * s)
        inputs["timestep"] = (t0.double() - dt * s).to(t0.dtype)
        calls.append(inputs)
    return calls


def _outputs(model: nn.Module, calls: list[dict[str, Any]]) -> list[torch.Tensor]:
    out = []
    for inputs in calls:
        result = model(**inputs)
        out.append(result[0] if isinstance(result, tuple) else result)
    return out


def _count_calls(modules: list[nn.Module]) -> tuple[list[int], Callable[[], None]]:
    """A one-element counter of forward calls over ``modules``, and a function removing it."""
    count = [0]
    hooks = [
        m.register_forward_hook(lambda *_: count.__setitem__(0, count[0] + 1)) for m in modules
    ]
    return count, lambda: [h.remove() for h in hooks]


def _plain_equal(kind: str, apply: Callable[[nn.Module], Any], steps: int = 4) -> None:
    model = tiny(kind)
    calls = _trajectory(model, steps)
    plain = _outputs(model, calls)
    with apply(model):
        ours = _outputs(model, calls)
    for a, b in zip(plain, ours, strict=True):
        assert torch.equal(a, b)


# --------------------------------------------------------------------------- exact settings


@pytest.mark.parametrize("kind", UNET_KINDS)
@pytest.mark.parametrize("branch", [1, 2])
def test_deepcache_interval_one_is_the_plain_model(kind: str, branch: int) -> None:
    _plain_equal(kind, lambda m: apply_deepcache(m, DeepCacheConfig(interval=1, branch=branch)))


@pytest.mark.parametrize("kind", KINDS)
def test_forecasting_interval_one_is_the_plain_model(kind: str) -> None:
    _plain_equal(kind, lambda m: apply_step_forecasting(m, ForecastConfig(interval=1, warmup=1)))


@pytest.mark.parametrize("kind", TRANSFORMER_KINDS)
def test_first_block_cache_threshold_zero_is_the_plain_model_on_a_moving_input(kind: str) -> None:
    # every call's input differs, so delta > 0 = threshold at every call: all blocks run
    _plain_equal(kind, lambda m: apply_first_block_cache(m, FirstBlockCacheConfig(threshold=0.0)))


# --------------------------------------------------------------------------- DeepCache


def test_deepcache_on_unet2d_equals_the_zoo_cached_step() -> None:
    from reference.feature_caching.deepcache import DeepCacheEps

    model = tiny("unet2d")
    calls = _trajectory(model, 5)
    zoo = DeepCacheEps(model, interval=2, branch=1)
    expected = [zoo(c["sample"], c["timestep"], None) for c in calls]
    with apply_deepcache(model, DeepCacheConfig(interval=2, branch=1)):
        ours = _outputs(model, calls)
    for a, b in zip(expected, ours, strict=True):
        assert torch.equal(a, b)  # the same operations on the same tensors


def _sdxl_like_unet() -> nn.Module:
    """The tiny conditional U-Net with SDXL's added conditions (pooled text, six time ids)."""
    import diffusers

    from reference.zoo.shapes import config

    torch.manual_seed(0)
    extra = {
        "addition_embed_type": "text_time",
        "addition_time_embed_dim": 4,
        "projection_class_embeddings_input_dim": 10 + 6 * 4,
    }
    return diffusers.UNet2DConditionModel(**config("unet2d-condition"), **extra).eval()


def _conditional_calls(model: nn.Module, steps: int) -> list[dict[str, Any]]:
    calls = _trajectory(model, steps)
    mask = torch.ones(1, 5)
    mask[:, -1] = 0  # the last prompt token masked out of cross-attention
    for c in calls:
        c["encoder_attention_mask"] = mask
        if model.config.addition_embed_type == "text_time":
            c["added_cond_kwargs"] = {
                "text_embeds": torch.ones(1, 10),
                "time_ids": torch.tensor([[8.0, 8.0, 0.0, 0.0, 8.0, 8.0]]),
            }
    return calls


@pytest.mark.parametrize("sdxl", [False, True])
@pytest.mark.parametrize("branch", [1, 2])
def test_deepcache_cached_call_equals_the_plain_unet_fed_the_kept_feature(
    sdxl: bool, branch: int
) -> None:
    """Oracle: the unmodified U-Net whose up block ``U_m`` has its input swapped for the feature
    kept at the full call (a forward pre-hook; the deep path runs and is discarded)."""
    model = _sdxl_like_unet() if sdxl else tiny("unet2d-condition")
    calls = _conditional_calls(model, 3)
    up = deep_path(model, branch).branch_up
    kept: dict[str, torch.Tensor] = {}

    def swap(_: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if "feature" not in kept:
            kept["feature"] = kwargs["hidden_states"]
            return None
        return args, {**kwargs, "hidden_states": kept["feature"]}

    hook = up.register_forward_pre_hook(swap, with_kwargs=True)
    expected = _outputs(model, calls)  # call 0 keeps F, calls 1 and 2 use it
    hook.remove()
    with apply_deepcache(model, DeepCacheConfig(interval=3, branch=branch)) as handle:
        ours = _outputs(model, calls)
        assert handle.state["full_calls"] == 1
    for a, b in zip(expected, ours, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("kind", UNET_KINDS)
def test_deepcache_skips_the_deep_path_on_cached_calls(kind: str) -> None:
    model = tiny(kind)
    path = deep_path(model, 1)
    deep = [*path.deep_down, *path.deep_up, path.mid]
    deep_resnets = [r for block in deep for r in block.resnets]
    shallow_resnets = list(model.down_blocks[0].resnets) + list(model.up_blocks[-1].resnets)
    deep_count, remove_deep = _count_calls(deep_resnets)
    shallow_count, remove_shallow = _count_calls(shallow_resnets)
    seen = []
    with apply_deepcache(model, DeepCacheConfig(interval=2, branch=1)) as handle:
        for inputs in _trajectory(model, 4):
            before = deep_count[0], shallow_count[0]
            model(**inputs)
            seen.append((deep_count[0] - before[0], shallow_count[0] - before[1]))
            assert handle.state["computed"] == (seen[-1][0] > 0)
    remove_deep()
    remove_shallow()
    full = len(deep_resnets)
    assert seen == [(full, len(shallow_resnets)), (0, len(shallow_resnets))] * 2


def test_deepcache_new_run_resets_itself_and_on_request() -> None:
    model = tiny("unet2d-condition")
    calls = _trajectory(model, 3)
    plain = _outputs(model, calls[:1])[0]
    with apply_deepcache(model, DeepCacheConfig(interval=3)) as handle:
        _outputs(model, calls[:2])  # full, cached
        # the timestep goes back up: a new run, so call 0 again (full), equal to the plain model
        assert torch.equal(_outputs(model, calls[:1])[0], plain)
        assert handle.state["calls"] == 1
        assert handle.state["computed"]
        _outputs(model, calls[1:2])
        assert not handle.state["computed"]
        handle.reset()
        _outputs(model, calls[1:2])  # the same timestep as before, but reset: full
        assert handle.state["computed"]


BATCH_CASES = {
    "unet2d": lambda m: apply_deepcache(m, DeepCacheConfig(interval=4)),
    "dit": lambda m: apply_first_block_cache(m, FirstBlockCacheConfig(threshold=1e9)),
    "sd3": lambda m: apply_step_forecasting(m, ForecastConfig(interval=4, warmup=1)),
}


@pytest.mark.parametrize("kind", list(BATCH_CASES))
def test_a_batch_change_makes_a_full_call(kind: str) -> None:
    model = tiny(kind)
    calls = _trajectory(model, 4)
    key = _key(model)
    wide = dict(example_inputs(model, batch=2), timestep=calls[3]["timestep"])
    wide[key] = calls[3][key].repeat(2, *[1] * (calls[3][key].dim() - 1))
    plain = _outputs(model, [wide])[0]
    with BATCH_CASES[kind](model) as handle:
        _outputs(model, calls[:3])  # call 2 reuses earlier work, and so would call 3 at batch 1
        assert not handle.state["computed"]
        assert torch.equal(_outputs(model, [wide])[0], plain)
        assert handle.state["computed"]


# --------------------------------------------------------------------------- first-block caching


def _jumping_calls(model: nn.Module) -> list[dict[str, Any]]:
    """Calls whose input barely moves (1e-4) and then jumps to fresh noise twice: both decisions
    of (2) occur at any sensible threshold. The timestep stays put (diffusers' hook ignores it)."""
    base = example_inputs(model)
    key = _key(model)
    calls = []
    for seed, repeats in ((0, 3), (1, 2), (2, 2)):
        x = torch.randn(base[key].shape, generator=torch.Generator().manual_seed(seed))
        for j in range(repeats):
            calls.append({**base, key: x * (1 + 1e-4 * j)})
    return calls


def _diffusers_fbc(model: nn.Module, calls: list[dict[str, Any]], threshold: float) -> Any:
    from diffusers.hooks import FirstBlockCacheConfig as TheirConfig
    from diffusers.hooks import apply_first_block_cache as theirs
    from diffusers.hooks.first_block_cache import _FBC_LEADER_BLOCK_HOOK

    from reference.feature_caching.dit_hooks import cache_context

    theirs(model, TheirConfig(threshold=threshold))
    hook = model.transformer_blocks[0]._diffusers_hook.hooks[_FBC_LEADER_BLOCK_HOOK]
    outs, decisions = [], []
    with cache_context(model):
        for inputs in calls:
            outs.append(model(**inputs)[0])
            decisions.append(hook.state_manager.get_state().should_compute)
    return outs, decisions


@pytest.mark.parametrize("kind", ["dit", "pixart", "flux"])
def test_first_block_cache_agrees_with_diffusers_step_for_step(kind: str) -> None:
    import copy

    model = tiny(kind)
    calls = _jumping_calls(model)
    theirs, their_decisions = _diffusers_fbc(copy.deepcopy(model), calls, 0.05)
    ours, decisions = [], []
    with apply_first_block_cache(model, FirstBlockCacheConfig(threshold=0.05)) as handle:
        for inputs in calls:
            ours.append(model(**inputs)[0])
            decisions.append(handle.state["computed"])
    assert decisions == their_decisions == [True, False, False, True, False, True, False]
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)  # the same residual arithmetic on the same tensors


def test_diffusers_first_block_cache_fails_on_sd3_and_ours_runs() -> None:
    import copy

    model = tiny("sd3")
    calls = _jumping_calls(model)
    # diffusers 0.42: SD3's last block returns no text stream (None); the hook subtracts from it
    with pytest.raises(TypeError, match="NoneType"):
        _diffusers_fbc(copy.deepcopy(model), calls, 0.05)
    plain = _outputs(model, calls)
    with apply_first_block_cache(model, FirstBlockCacheConfig(threshold=0.05)) as handle:
        ours = _outputs(model, calls)
        assert handle.state["full_calls"] == 3
    full = [0, 3, 5]  # the calls after a jump run every block: the plain model exactly
    for i in full:
        assert torch.equal(ours[i], plain[i])
    for i in set(range(len(calls))) - set(full):  # input moved by 1e-4: a close approximation
        assert (ours[i] - plain[i]).abs().max() < 1e-2 * plain[i].abs().max()


@pytest.mark.parametrize("kind", TRANSFORMER_KINDS)
def test_first_block_cache_skips_the_other_blocks(kind: str) -> None:
    model = tiny(kind)
    blocks = [*model.transformer_blocks, *getattr(model, "single_transformer_blocks", [])]
    inner = [m for block in blocks[1:] for m in block.modules() if m is not block]
    count, remove = _count_calls(inner)
    seen = []
    with apply_first_block_cache(model, FirstBlockCacheConfig(threshold=0.05)) as handle:
        for inputs in _jumping_calls(model):
            before = count[0]
            model(**inputs)
            seen.append((handle.state["computed"], count[0] - before))
    remove()
    assert [computed for computed, _ in seen] == [True, False, False, True, False, True, False]
    assert all((ran > 0) == computed for computed, ran in seen)


# --------------------------------------------------------------------------- step forecasting


def _diffusers_taylorseer(model: nn.Module, calls: list[dict[str, Any]], warmup: int) -> Any:
    from diffusers.hooks import TaylorSeerCacheConfig, apply_taylorseer_cache

    from reference.accelerate_method.diffusers_hook import taylorseer_run

    config = TaylorSeerCacheConfig(
        cache_interval=2,
        disable_cache_before_step=warmup + 1,  # the calls of (1) at interval 2
        max_order=1,
        taylor_factors_dtype=torch.float32,
        cache_identifiers=[""],  # the root module: the whole model output is forecast
    )
    apply_taylorseer_cache(model, config)
    with taylorseer_run(model):
        return _outputs(model, calls)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", ["newton", "taylorseer"])
def test_forecasting_agrees_with_diffusers_taylorseer(kind: str, method: str) -> None:
    import copy

    model = tiny(kind)
    calls = _trajectory(model, 8)
    warmup = 2
    theirs = _diffusers_taylorseer(copy.deepcopy(model), calls, warmup)
    config = ForecastConfig(interval=2, order=1, warmup=warmup, method=method)
    with apply_step_forecasting(model, config) as handle:
        ours = _outputs(model, calls)
        computed = handle.state["full_calls"]
    assert computed == 5  # calls 0, 1, 2, 4, 6
    biggest = max(ours[i].abs().max() for i in (0, 1, 2, 4, 6))
    # Both sides compute F = v_b + rho (v_b - v_a), rho <= 1, from the same full outputs; the
    # timestep steps (16 or 1/64) make every node difference a power of two, so each side makes at
    # most 3 roundings (unit roundoff EPS32 / 2) of values <= 4 max|v|: they differ by at most
    # 2 * 3 * 4 * (EPS32 / 2) * max|v| = 12 EPS32 max|v|.
    tol = 12 * EPS32 * float(biggest)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if i in (0, 1, 2, 4, 6):
            assert torch.equal(a, b)
        else:
            assert (a - b).abs().max() <= tol, i


@pytest.mark.parametrize("kind", ["unet2d-condition", "sd3"])
def test_forecast_calls_run_nothing_of_the_model(kind: str) -> None:
    model = tiny(kind)
    count, remove = _count_calls(list(model.children()))
    ran = []
    with apply_step_forecasting(model, ForecastConfig(interval=3, order=1, warmup=2)) as handle:
        for inputs in _trajectory(model, 8):
            before = count[0]
            result = model(**inputs)
            assert isinstance(result, tuple)  # the forecast comes in the caller's container
            ran.append(count[0] > before)
            assert handle.state["computed"] == ran[-1]
    remove()
    assert ran == [True, True, True, False, False, True, False, False]


def test_forecasting_is_exact_on_a_linear_trajectory_and_keeps_return_dict() -> None:
    """A model whose output is linear in the timestep is forecast exactly at order 1 (2)."""
    model = tiny("unet2d")
    calls = _trajectory(model, 5)
    slope = torch.randn(1, 3, 8, 8)

    def linear(sample: torch.Tensor, timestep: torch.Tensor, **_: Any) -> Any:
        from diffusers.models.unets.unet_2d import UNet2DOutput

        return UNet2DOutput(sample=slope * float(timestep.reshape(-1)[0]))

    model.forward = linear  # stand-in network with a known trajectory
    with apply_step_forecasting(model, ForecastConfig(interval=4, warmup=2)) as handle:
        for inputs in calls:
            out = model(inputs["sample"], inputs["timestep"])
            expected = slope * float(inputs["timestep"][0])
            # v = slope t is rounded once; the forecast adds at most 3 roundings of values up to
            # 2 max|v| (node differences are powers of two): 8 EPS32 max|v| covers both sides
            atol = 8 * EPS32 * 500 * float(slope.abs().max())
            assert torch.allclose(out.sample, expected, rtol=0, atol=atol)
        assert handle.state["full_calls"] == 3


def test_forecasting_new_run_resets_itself_and_on_request() -> None:
    model = tiny("dit")
    calls = _trajectory(model, 4)
    plain = _outputs(model, calls)
    with apply_step_forecasting(model, ForecastConfig(interval=3, warmup=1)) as handle:
        _outputs(model, calls)
        assert handle.state["full_calls"] == 2
        assert torch.equal(_outputs(model, calls[:1])[0], plain[0])  # timestep up: a new run
        assert handle.state["calls"] == 1
        _outputs(model, calls[1:3])  # calls 1 (full: (1 - 1) mod 3 = 0) and 2 (forecast)
        assert not handle.state["computed"]
        handle.reset()
        assert torch.equal(_outputs(model, calls[3:4])[0], plain[3])


# --------------------------------------------------------------------------- remove()


APPLIERS = {
    "deepcache": (UNET_KINDS, lambda m: apply_deepcache(m, DeepCacheConfig(interval=2))),
    "fbc": (TRANSFORMER_KINDS, lambda m: apply_first_block_cache(m, FirstBlockCacheConfig(0.05))),
    "forecast": (KINDS, lambda m: apply_step_forecasting(m, ForecastConfig(interval=2))),
}
CASES = [(name, kind) for name, (kinds, _) in APPLIERS.items() for kind in kinds]


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_remove_restores_the_original_outputs_and_modules(name: str, kind: str) -> None:
    model = tiny(kind)
    calls = _trajectory(model, 4)
    before = _outputs(model, calls)
    handle = APPLIERS[name][1](model)
    _outputs(model, calls)
    assert handle.remove() is model
    assert not any("forward" in vars(m) for m in model.modules())
    for a, b in zip(before, _outputs(model, calls), strict=True):
        assert torch.equal(a, b)
    APPLIERS[name][1](model).remove()  # applicable again once removed


@pytest.mark.parametrize("name", list(APPLIERS))
def test_applying_twice_is_refused(name: str) -> None:
    kind = APPLIERS[name][0][0]
    model = tiny(kind)
    with APPLIERS[name][1](model), pytest.raises(ValueError, match="already applied"):
        APPLIERS[name][1](model)


# --------------------------------------------------------------------------- pipelines


def test_deepcache_on_a_ddpm_pipeline_with_two_runs() -> None:
    from diffusers import DDPMPipeline, DDPMScheduler

    pipe = DDPMPipeline(unet=tiny("unet2d"), scheduler=DDPMScheduler(num_train_timesteps=100))
    pipe.set_progress_bar_config(disable=True)

    def run() -> Any:
        gen = torch.Generator().manual_seed(0)
        return pipe(generator=gen, num_inference_steps=4, output_type="np").images

    plain = run()
    with apply_deepcache(pipe, DeepCacheConfig(interval=1)) as handle:
        assert handle.model is pipe.unet
        assert (run() == plain).all()
    with apply_deepcache(pipe, DeepCacheConfig(interval=2)) as handle:
        first = run()
        second = run()  # the timestep goes back up: a new run, no state carried over
        assert (first == second).all()
        assert handle.state["calls"] == 4
        assert handle.state["full_calls"] == 2
    assert (run() == plain).all()


def _dit_pipeline() -> Any:
    from diffusers import AutoencoderKL, DDIMScheduler, DiTPipeline

    torch.manual_seed(0)
    vae = AutoencoderKL(
        block_out_channels=(8,), norm_num_groups=4, latent_channels=4, sample_size=8
    ).eval()
    pipe = DiTPipeline(transformer=tiny("dit"), vae=vae, scheduler=DDIMScheduler())
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.mark.parametrize(
    "apply",
    [
        lambda p: apply_first_block_cache(p, FirstBlockCacheConfig(threshold=0.5)),
        lambda p: apply_step_forecasting(p, ForecastConfig(interval=2)),
    ],
    ids=["fbc", "forecast"],
)
def test_dit_pipeline_applies_and_restores(apply: Callable[[Any], Any]) -> None:
    pipe = _dit_pipeline()

    def run() -> torch.Tensor:
        gen = torch.Generator().manual_seed(0)
        kwargs = {"guidance_scale": 1.0, "num_inference_steps": 5, "output_type": "np"}
        return torch.as_tensor(pipe(class_labels=[3], generator=gen, **kwargs).images)

    plain = run()
    with apply(pipe) as handle:
        assert handle.model is pipe.transformer
        first, second = run(), run()
        assert torch.equal(first, second)  # reset by the rising timestep of the second run
        assert handle.state["calls"] == 5
        assert handle.state["full_calls"] < 5
    assert torch.equal(run(), plain)


def test_a_pipeline_like_object_is_enough() -> None:
    unet = tiny("unet2d-condition")
    handle = apply_deepcache(types.SimpleNamespace(unet=unet), DeepCacheConfig())
    assert handle.model is unet
    handle.remove()


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("kind", TRANSFORMER_KINDS)
def test_deepcache_refuses_transformers(kind: str) -> None:
    model = tiny(kind)
    with pytest.raises(UnsupportedModel, match=r"^DeepCache does not support \w+; supported: "):
        apply_deepcache(model, DeepCacheConfig())
    assert not any("forward" in vars(m) for m in model.modules())


@pytest.mark.parametrize("kind", UNET_KINDS)
def test_first_block_cache_refuses_unets(kind: str) -> None:
    model = tiny(kind)
    match = r"^first-block caching does not support UNet2D\w*Model; supported: DiT"
    with pytest.raises(UnsupportedModel, match=match):
        apply_first_block_cache(model, FirstBlockCacheConfig(0.05))
    assert not any("forward" in vars(m) for m in model.modules())


def test_forecasting_refuses_other_modules() -> None:
    with pytest.raises(UnsupportedModel, match=r"^step forecasting does not support Linear; "):
        apply_step_forecasting(nn.Linear(2, 2), ForecastConfig())


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: DeepCacheConfig(interval=0), "interval must be an integer >= 1"),
        (lambda: DeepCacheConfig(branch=True), "branch must be an integer >= 1"),
        (lambda: FirstBlockCacheConfig(threshold=-0.1), "threshold must be a number >= 0"),
        (lambda: FirstBlockCacheConfig(threshold=float("nan")), "threshold must be a number"),
        (lambda: ForecastConfig(interval=0), "interval must be >= 1"),
        (lambda: ForecastConfig(warmup=0), "warm-up must be >= 1"),
        (lambda: ForecastConfig(method="cubic"), "method must be one of"),
    ],
)
def test_configs_refuse_bad_values_in_one_line(make: Callable[[], Any], match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        make()
    assert "\n" not in str(err.value)


def test_deepcache_refuses_a_branch_beyond_the_unet() -> None:
    model = tiny("unet2d")
    with pytest.raises(ValueError, match=r"branch must be in 1\.\.2"):
        apply_deepcache(model, DeepCacheConfig(branch=3))
    assert not any("forward" in vars(m) for m in model.modules())


def test_residuals_between_blocks_are_refused() -> None:
    unet = tiny("unet2d-condition")
    inputs = example_inputs(unet)
    with apply_deepcache(unet, DeepCacheConfig()), pytest.raises(ValueError, match="ControlNet"):
        unet(**inputs, mid_block_additional_residual=torch.zeros(1))
    sd3 = tiny("sd3")
    inputs = example_inputs(sd3)
    fbc = apply_first_block_cache(sd3, FirstBlockCacheConfig(0.05))
    with fbc, pytest.raises(ValueError, match="skip_layers is not supported"):
        sd3(**inputs, skip_layers=[1])
