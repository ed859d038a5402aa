"""Guidance wrappers on diffusers' production classes: classifier-free guidance (1) and classifier
guidance (2) of reference.classifier_guidance.production, on tiny from-config models in float64.

Tolerances: the models run in float64 so that identities which hold in exact arithmetic hold to
rounding. One forward pass of these tiny models sums at most a few hundred products of O(1)
values; float64 rounding (eps = 1.1e-16) then leaves ~1e-13 per output, and (1) multiplies a
difference by w <= 7.5: 1e-10 bounds every difference we compare with margin. Where the wrapped
and the reference computations run the same operations on the same batch, we ask for equality.
"""

from __future__ import annotations

from typing import Any

import diffusers
import pytest
import torch
from torch import nn

from reference.classifier_guidance import finite_difference_grad
from reference.classifier_guidance.production import (
    CFGConfig,
    ClassifierGuidanceConfig,
    apply_cfg,
    apply_classifier_guidance,
    null_class,
)
from reference.harness.production import UnsupportedModel
from reference.zoo import shapes

pytestmark = pytest.mark.usefixtures("one_torch_thread")


ATOL = 1e-10  # float64 rounding of a tiny forward pass, times w (see the module docstring)
N = 2


def _class_unet() -> nn.Module:
    """A tiny class-conditional UNet2DModel laid out like the zoo's (11 labels, 10 = null)."""
    torch.manual_seed(0)
    return diffusers.UNet2DModel(**shapes.config("unet2d"), num_class_embeds=11).eval()


def _model(kind: str) -> nn.Module:
    model = _class_unet() if kind == "unet2d-class" else shapes.tiny(kind)
    return model.double()


def _inputs(model: nn.Module, seed: int = 0) -> dict[str, Any]:
    inputs = shapes.example_inputs(model, batch=N, seed=seed)
    for k, v in inputs.items():
        if torch.is_tensor(v) and v.is_floating_point():
            inputs[k] = v.double()
    if type(model).__name__ == "UNet2DModel" or "class_labels" in inputs:
        inputs["class_labels"] = torch.tensor([3, 7])
    return inputs


def _uncond(kind: str, model: nn.Module) -> dict[str, Any] | None:
    g = torch.Generator().manual_seed(9)
    cfg = model.config
    if kind == "unet2d-condition":
        return {"encoder_hidden_states": torch.randn(1, 5, cfg.cross_attention_dim, generator=g)}
    if kind == "pixart":
        return {"encoder_hidden_states": torch.randn(1, 5, cfg.caption_channels, generator=g)}
    if kind == "sd3":
        return {
            "encoder_hidden_states": torch.randn(1, 5, cfg.joint_attention_dim, generator=g),
            "pooled_projections": torch.randn(1, cfg.pooled_projection_dim, generator=g),
        }
    return None


def _unconditional_call(inputs: dict[str, Any], uncond: dict[str, Any] | None, null: Any):
    out = dict(inputs)
    for k, v in (uncond or {"class_labels": torch.full((N,), null)}).items():
        out[k] = v.double().expand(N, *v.shape[1:]) if v.is_floating_point() else v
    return out


def _eps(model: nn.Module, inputs: dict[str, Any]) -> torch.Tensor:
    with torch.no_grad():
        return model(**inputs)[0]


CFG_KINDS = ("unet2d-class", "unet2d-condition", "dit", "pixart", "sd3")


@pytest.mark.parametrize("kind", CFG_KINDS)
def test_cfg_is_eq1_of_the_two_branches_in_one_call(kind: str) -> None:
    model = _model(kind)
    inputs, uncond = _inputs(model), _uncond(kind, model)
    null = None if uncond else null_class(model)
    before = _eps(model, inputs)
    eps_c = before
    eps_u = _eps(model, _unconditional_call(inputs, uncond, null))
    rows: list[int] = []  # rows entering the first layer, once per network evaluation
    first = getattr(model, "conv_in", None) or model.pos_embed
    first.register_forward_pre_hook(lambda m, a: rows.append(a[0].shape[0]))
    channels = inputs.get("sample", inputs.get("hidden_states")).shape[1]
    for w in (1.0, 0.0, 7.5):
        with apply_cfg(model, CFGConfig(guidance_scale=w), uncond=uncond):
            got = _eps(model, inputs)
        k = channels if got.shape[1] == 2 * channels else got.shape[1]
        # (1) from two separate calls; the batched call may sum in another order (ATOL)
        expected = eps_u[:, :k] + w * (eps_c[:, :k] - eps_u[:, :k])
        torch.testing.assert_close(got[:, :k], expected, rtol=0, atol=ATOL)
        if w == 1.0:  # the conditional output, up to the rounding of eps_u + (eps_c - eps_u)
            torch.testing.assert_close(got, eps_c, rtol=0, atol=ATOL)
        if w == 0.0:  # the unconditional output on the eps channels
            torch.testing.assert_close(got[:, :k], eps_u[:, :k], rtol=0, atol=ATOL)
        # a learned variance stays the conditional rows' (as DiTPipeline keeps it)
        torch.testing.assert_close(got[:, k:], eps_c[:, k:], rtol=0, atol=ATOL)
    assert rows == [2 * N] * 3  # one batched evaluation of 2N rows per guided call
    assert "forward" not in vars(model)
    assert torch.equal(_eps(model, inputs), before)  # remove restored the original forward


def test_cfg_keeps_the_output_type_and_accepts_positional_inputs() -> None:
    model = _model("unet2d-class")
    x, t = torch.randn(N, 3, 8, 8, dtype=torch.float64), torch.tensor(500)
    y = torch.tensor([1, 2])
    handle = apply_cfg(model, CFGConfig(3.0))
    out = model(x, t, y)  # positional, return_dict=True
    assert type(out).__name__ == "UNet2DOutput"
    assert torch.equal(out.sample, model(x, t, class_labels=y, return_dict=False)[0])
    handle.remove()
    assert handle.removed and "forward" not in vars(model)


def test_cfg_agrees_with_dit_pipelines_own_guidance() -> None:
    """DiTPipeline guides with its own batched CFG (null label 1000, eps channels only); our
    wrapper inside its transformer with the pipeline's guidance off samples the same images."""
    torch.manual_seed(0)
    dit = diffusers.DiTTransformer2DModel(
        **{**shapes.config("dit"), "num_embeds_ada_norm": 1000}
    ).eval()
    vae = diffusers.AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",),
        block_out_channels=(8,),
        latent_channels=4,
        norm_num_groups=4,
        layers_per_block=1,
    ).eval()
    pipe = diffusers.DiTPipeline(dit, vae, diffusers.DDIMScheduler())
    pipe.set_progress_bar_config(disable=True)

    def run(scale: float) -> torch.Tensor:
        g = torch.Generator().manual_seed(4)
        out = pipe(
            [1, 5], guidance_scale=scale, generator=g, num_inference_steps=3, output_type="pt"
        )
        return out.images

    theirs = run(4.0)
    plain = run(1.0)
    with apply_cfg(pipe, CFGConfig(4.0)):
        ours = run(1.0)
    # the same formula (1) on the same batched rows (conditional first) in the same order
    assert torch.equal(ours, theirs)
    assert (ours - plain).abs().max() > 1e-3
    assert torch.equal(run(1.0), plain)


def test_cfg_refuses_flux_with_its_reason_and_unconditional_unets() -> None:
    flux = shapes.tiny("flux")
    with pytest.raises(
        UnsupportedModel,
        match=r"^classifier-free guidance does not support "
        r"FluxTransformer2DModel \(Flux-dev is guidance-distilled.*supported: ",
    ):
        apply_cfg(flux, CFGConfig())
    assert "forward" not in vars(flux)
    unet = shapes.tiny("unet2d")
    with pytest.raises(UnsupportedModel, match="unconditional UNet2DModel"):
        apply_cfg(unet, CFGConfig())
    assert "forward" not in vars(unet)


def test_cfg_of_a_text_model_needs_the_null_prompt() -> None:
    sd3 = shapes.tiny("sd3")
    with pytest.raises(ValueError, match=r"needs uncond=.*encoder_hidden_states"):
        apply_cfg(sd3, CFGConfig())
    with pytest.raises(ValueError, match="lacks pooled_projections"):
        apply_cfg(sd3, CFGConfig(), uncond={"encoder_hidden_states": torch.zeros(1, 5, 12)})
    assert "forward" not in vars(sd3)


# --------------------------------------------------------------------------- classifier guidance


class TinyClassifier(nn.Module):
    """A noise-aware classifier in float64: logits of ``tanh(conv(x)) * (1 + t / 1000)``."""

    def __init__(self, channels: int, side: int) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.conv = nn.Conv2d(channels, 4, 3, padding=1)
        self.head = nn.Linear(4 * side * side, 10)
        self.double()

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.conv(x)) * (1 + t.to(x.dtype).view(-1, 1, 1, 1) / 1000)
        return self.head(h.flatten(1))


def _cg_setup(kind: str) -> tuple[nn.Module, TinyClassifier, dict[str, Any], Any]:
    model = _model(kind)
    inputs = _inputs(model, seed=2)
    inputs["timestep"] = torch.tensor([100, 700])
    x = inputs.get("sample", inputs.get("hidden_states"))
    clf = TinyClassifier(x.shape[1], x.shape[-1])
    return model, clf, inputs, diffusers.DDPMScheduler()


@pytest.mark.parametrize("kind", ["unet2d", "unet2d-class", "dit"])
def test_classifier_guidance_is_eq2_with_a_finite_difference_gradient(kind: str) -> None:
    model, clf, inputs, sched = _cg_setup(kind)
    x, y, t = (
        inputs.get("sample", inputs.get("hidden_states")),
        torch.tensor([3, 7]),
        inputs["timestep"],
    )
    plain = dict(inputs)
    if kind == "unet2d":
        plain.pop("class_labels")
    else:
        plain["class_labels"] = torch.full((N,), null_class(model))  # the denoiser's null label
    eps = _eps(model, plain)
    scale = 2.0
    with apply_classifier_guidance(model, ClassifierGuidanceConfig(scale, clf, scheduler=sched)):
        guided = _eps(model, {**inputs, "class_labels": y})
        zero = ClassifierGuidanceConfig(0.0, clf, alphas_cumprod=sched.alphas_cumprod)
    with apply_classifier_guidance(model, zero):
        unguided = _eps(model, {**inputs, "class_labels": y})
    assert torch.equal(unguided, eps)  # scale 0: eps - 0 * sigma * grad subtracts an exact zero
    k = x.shape[1]
    sigma = (1 - sched.alphas_cumprod.double()[t]).sqrt().view(-1, 1, 1, 1)
    recovered = (eps[:, :k] - guided[:, :k]) / (scale * sigma)  # (2) solved for the gradient
    numeric = finite_difference_grad(clf, x, t, y)
    # float64 central differences with h = 1e-6: rounding eps64 |f| / h ~ 1e-10, truncation
    # h^2 |f'''| ~ 1e-12; recovering the gradient from eps - eps_hat costs eps64 |eps| / (s sigma)
    torch.testing.assert_close(recovered, numeric, rtol=1e-6, atol=1e-8)
    assert numeric.abs().max() > 1e-3
    assert torch.equal(guided[:, k:], eps[:, k:])  # DiT's variance channels are not guided
    assert "forward" not in vars(model) and torch.equal(_eps(model, plain), eps)


def test_classifier_guidance_from_a_pipeline_and_for_a_conditional_denoiser() -> None:
    model, clf, inputs, sched = _cg_setup("dit")
    pipe = diffusers.DiTPipeline(model, None, sched)
    null = null_class(model)
    y = torch.tensor([3, null])  # a row asking for the null class is left unguided
    conditional = ClassifierGuidanceConfig(5.0, clf, conditional=True)
    with apply_classifier_guidance(pipe, conditional) as handle:  # abar from pipe.scheduler
        got = _eps(model, {**inputs, "class_labels": y})
    assert handle.removed
    eps = _eps(model, {**inputs, "class_labels": y})  # the denoiser saw the target labels
    assert torch.equal(got[1], eps[1])
    assert (got[0, :4] - eps[0, :4]).abs().max() > 1e-6


@pytest.mark.parametrize("kind", ["unet2d-condition", "pixart", "sd3", "flux"])
def test_classifier_guidance_refuses_text_models_with_the_reason(kind: str) -> None:
    model = shapes.tiny(kind)
    cfg = ClassifierGuidanceConfig(1.0, TinyClassifier(4, 8), alphas_cumprod=torch.ones(1000))
    cls = shapes.CLASS_OF[kind]
    with pytest.raises(
        UnsupportedModel,
        match=rf"^classifier guidance does not support {cls} "
        r"\(text-conditioned: no class label.*\); supported: UNet2DModel, ",
    ):
        apply_classifier_guidance(model, cfg)
    assert "forward" not in vars(model)


def test_classifier_guidance_needs_the_schedule_and_the_target_labels() -> None:
    model, clf, inputs, _ = _cg_setup("unet2d")
    with pytest.raises(ValueError, match="needs the schedule: pass alphas_cumprod="):
        apply_classifier_guidance(model, ClassifierGuidanceConfig(1.0, clf))
    cfg = ClassifierGuidanceConfig(1.0, clf, alphas_cumprod=torch.linspace(0.99, 0.01, 1000))
    message = "pass the target classes as class_labels"
    with apply_classifier_guidance(model, cfg), pytest.raises(ValueError, match=message):
        model(inputs["sample"], inputs["timestep"])


def test_classifier_guidance_in_a_ddpm_pipeline_with_configured_labels() -> None:
    """DDPMPipeline calls ``unet(x, t)``: the targets come from the config."""
    pipe = diffusers.DDPMPipeline(shapes.tiny("unet2d"), diffusers.DDPMScheduler())
    pipe.set_progress_bar_config(disable=True)
    clf = TinyClassifier(3, 8).float()

    def run() -> torch.Tensor:
        g = torch.Generator().manual_seed(8)
        return pipe(batch_size=2, generator=g, num_inference_steps=3, output_type="pt").images

    plain = run()
    for scale in (0.0, 50.0):
        cfg = ClassifierGuidanceConfig(scale, clf, labels=torch.tensor([3, 7]))
        with apply_classifier_guidance(pipe, cfg):  # abar from pipe.scheduler
            guided = run()
        if scale == 0.0:
            assert torch.equal(guided, plain)  # an exact zero is subtracted at every step
        else:
            assert (guided - plain).abs().max() > 1e-3
    assert torch.equal(run(), plain)
