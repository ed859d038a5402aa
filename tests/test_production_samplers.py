"""Samplers as diffusers schedulers: the scheduler swap (reference.scheduler_tradeoff.production),
the grid search's choice (reference.grid_search.production) and the few-step samplers of the
distilled and consistency students (reference.timestep_distillation.production,
reference.consistency_latent_diffusion.production), on tiny from-config models and pipelines.

Exactness: a scheduler swapped into a pipeline and the package's own sampling loop run the same
float32 operations in the same order on the same inputs, so the comparisons ask for equality.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import diffusers
import pytest
import torch
from torch import nn

from reference import zoo
from reference.consistency_latent_diffusion import consistency_sample
from reference.consistency_latent_diffusion.production import (
    ConsistencySamplerConfig,
    ConsistencyScheduler,
    apply_consistency_sampler,
)
from reference.grid_search.production import RESULT_PATH, apply_grid_choice, grid_choice
from reference.harness import make_noise, model_eps_fn, sample
from reference.harness.integrity import seal
from reference.harness.production import UnsupportedModel
from reference.harness.schedulers import SCHEDULERS, make_scheduler
from reference.scheduler_tradeoff.production import SchedulerConfig, apply_scheduler
from reference.scheduler_tradeoff.schedulers import solver_settings
from reference.timestep_distillation import GridDDIMScheduler
from reference.timestep_distillation.production import (
    DistilledDDIMScheduler,
    DistilledSamplerConfig,
    apply_distilled_sampler,
)
from reference.zoo import shapes

LABELS = [1, 5]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _vae() -> nn.Module:
    torch.manual_seed(0)
    return diffusers.AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",),
        block_out_channels=(8,),
        latent_channels=4,
        norm_num_groups=4,
        layers_per_block=1,
    ).eval()


def _dit_pipe(scheduler: Any = None) -> Any:
    """A DiTPipeline from tiny components on the zoo's schedule (called with guidance 1)."""
    sched = scheduler or diffusers.DDIMScheduler.from_config(zoo.teacher_scheduler_config())
    pipe = diffusers.DiTPipeline(shapes.tiny("dit"), _vae(), sched)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _ddpm_pipe(unet: nn.Module | None = None) -> Any:
    pipe = diffusers.DDPMPipeline(
        unet or shapes.tiny("unet2d"), diffusers.DDPMScheduler(**zoo.teacher_scheduler_config())
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _calls(module: nn.Module) -> list[int]:
    calls: list[int] = []
    module.register_forward_pre_hook(lambda m, a: calls.append(1))
    return calls


def _run_dit(pipe: Any, steps: int = 50) -> torch.Tensor:
    g = torch.Generator().manual_seed(4)
    out = pipe(LABELS, guidance_scale=1.0, generator=g, num_inference_steps=steps, output_type="pt")
    return out.images


def _dit_eps(dit: nn.Module) -> Any:
    """The eps half of DiT's learned-variance output, as DiTPipeline hands it to the scheduler."""
    return lambda x, t, y: dit(x, t, class_labels=y).sample[:, : dit.config.in_channels]


def _decode(pipe: Any, latents: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        images = pipe.vae.decode(1 / pipe.vae.config.scaling_factor * latents).sample
    return (images / 2 + 0.5).clamp(0, 1)


# --------------------------------------------------------------------------- the scheduler swap


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_swap_builds_the_packages_scheduler_and_remove_puts_the_old_one_back(name: str) -> None:
    pipe = _dit_pipe()
    old = pipe.scheduler
    handle = apply_scheduler(pipe, SchedulerConfig(name))
    ours, theirs = pipe.scheduler, make_scheduler(name)  # the zoo's clipping schedule: clip kept
    assert type(ours) is type(theirs) and type(ours).__name__ == SCHEDULERS[name][0]
    _, settings = solver_settings(name)
    assert {k: ours.config[k] for k in settings} == {k: theirs.config[k] for k in settings}
    assert torch.equal(ours.alphas_cumprod, theirs.alphas_cumprod)
    handle.remove()
    assert pipe.scheduler is old


def test_swapped_pipeline_samples_what_the_packages_loop_samples() -> None:
    pipe = _dit_pipe()
    calls = _calls(pipe.transformer)
    with apply_scheduler(pipe, SchedulerConfig("dpmpp2m", steps=4)):
        images = _run_dit(pipe, steps=50)  # steps pinned: 4, whatever the call asks
    assert len(calls) == 4
    noise = torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        latents = sample(
            _dit_eps(pipe.transformer),
            make_scheduler("dpmpp2m"),
            noise,
            steps=4,
            labels=torch.tensor(LABELS),
            clamp=False,
        )
    assert torch.equal(images, _decode(pipe, latents))


def test_latent_pipelines_get_no_clipping() -> None:
    latent = diffusers.DDIMScheduler.from_config(zoo.latent_scheduler().config)
    pipe = _dit_pipe(latent)
    with apply_scheduler(pipe, SchedulerConfig("unipc")):
        assert pipe.scheduler.config.thresholding is False
    with apply_scheduler(pipe, SchedulerConfig("ddim")):
        assert pipe.scheduler.config.clip_sample is False


def test_unknown_scheduler_flow_matching_and_bare_models_are_refused_in_one_line() -> None:
    pipe = _dit_pipe()
    old = pipe.scheduler
    known = ", ".join(SCHEDULERS)
    with pytest.raises(ValueError, match=rf"^unknown scheduler 'heun'; choose from {known}$"):
        apply_scheduler(pipe, SchedulerConfig("heun"))
    with pytest.raises(ValueError, match="steps must be >= 1"):
        apply_scheduler(pipe, SchedulerConfig("ddim", steps=0))
    assert pipe.scheduler is old
    flow = _dit_pipe(diffusers.FlowMatchEulerDiscreteScheduler())
    message = r"does not support FlowMatchEulerDiscreteScheduler \(a flow-matching schedule\)"
    with pytest.raises(UnsupportedModel, match=message):
        apply_scheduler(flow, SchedulerConfig())
    with pytest.raises(UnsupportedModel, match="needs a pipeline with a scheduler; got UNet2D"):
        apply_scheduler(shapes.tiny("unet2d"), SchedulerConfig())


# --------------------------------------------------------------------------- the grid's choice


def test_grid_choice_is_the_committed_chosen_row_as_a_pinned_scheduler() -> None:
    rows = json.loads(RESULT_PATH.read_text(encoding="utf-8"))["rows"]
    chosen = next(r for r in rows if r["id"] == "chosen")["config"]
    pipe = _dit_pipe()
    old = pipe.scheduler
    with apply_grid_choice(pipe) as handle:
        assert type(pipe.scheduler).__name__ == SCHEDULERS[chosen["method"]][0]
        pipe.scheduler.set_timesteps(50)
        assert len(pipe.scheduler.timesteps) == chosen["steps"]
        assert handle.state["guidance_scale"] == chosen["guidance"]
        _run_dit(pipe)
    assert pipe.scheduler is old


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_grid_choice_refuses_a_missing_or_invalid_result_in_one_line(tmp_path: Path) -> None:
    pipe = _dit_pipe()
    old = pipe.scheduler
    data = json.loads(RESULT_PATH.read_text(encoding="utf-8"))
    unknown = json.loads(json.dumps(data))
    next(r for r in unknown["rows"] if r["id"] == "chosen")["config"]["method"] = "heun"
    # resealed, so that the edit passes the digest and reaches the choice's own checks
    sealed = seal(unknown)
    cases = [
        (tmp_path / "absent.json", FileNotFoundError, "no grid-search result"),
        (_bad(tmp_path, "truncated.json", "{"), ValueError, "cannot read result"),
        (_bad(tmp_path, "edited.json", json.dumps(unknown)), ValueError, "digest"),
        (
            _bad(tmp_path, "unknown.json", json.dumps(sealed)),
            ValueError,
            "heun",  # named by the result check (no catalog word for it) or by the choice's own
        ),
    ]
    for path, error, message in cases:
        with pytest.raises(error, match=message) as info:
            apply_grid_choice(pipe, path)
        assert "\n" not in str(info.value) and str(path) in str(info.value)
        assert pipe.scheduler is old
    assert grid_choice()["sampler"] in SCHEDULERS


# --------------------------------------------------------------------------- distilled students


def _class_unet(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return diffusers.UNet2DModel(**shapes.config("unet2d"), num_class_embeds=11).eval()


def _pipeline_loop(
    model: nn.Module, scheduler: Any, noise: torch.Tensor, steps: int, **step_kw: Any
) -> torch.Tensor:
    """The loop every diffusers pipeline runs, written out."""
    labels = torch.tensor([1, 10])
    scheduler.set_timesteps(steps)
    x = noise * scheduler.init_noise_sigma
    with torch.no_grad():
        for t in scheduler.timesteps:
            x_in = scheduler.scale_model_input(x, t)
            eps = model(x_in, t, class_labels=labels).sample
            x = scheduler.step(eps, t, x, **step_kw).prev_sample
    return x


@pytest.mark.parametrize("steps", [8, 4, 2])
def test_distilled_scheduler_reproduces_the_packages_sampler_exactly(steps: int) -> None:
    unet, noise = _class_unet(), make_noise(2, 0, (3, 8, 8))
    ours = DistilledDDIMScheduler.from_config(zoo.teacher_scheduler().config)
    got = _pipeline_loop(unet, ours, noise, steps)
    theirs = sample(
        model_eps_fn(unet),
        GridDDIMScheduler(zoo.teacher_scheduler_config()),
        noise,
        steps=steps,
        labels=torch.tensor([1, 10]),
        clamp=False,
    )
    assert torch.equal(got, theirs)  # each step is the package's step: the same operations


def test_distilled_scheduler_is_a_diffusers_scheduler(tmp_path: Path) -> None:
    sched = DistilledDDIMScheduler.from_config(zoo.teacher_scheduler().config)
    sched.save_pretrained(tmp_path)
    again = DistilledDDIMScheduler.from_pretrained(tmp_path)
    again.set_timesteps(4)
    assert again.timesteps.tolist() == [945, 705, 465, 225]
    assert again.config.beta_schedule == "squaredcos_cap_v2" and len(again) == 1000
    x, eps = torch.randn(1, 3, 8, 8), torch.randn(1, 3, 8, 8)
    prev, x0 = again.step(eps, 945, x, return_dict=False)
    out = again.step(eps, 945, x)
    assert torch.equal(prev, out.prev_sample) and torch.equal(x0, out.pred_original_sample)
    with pytest.raises(ValueError, match="deterministic"):
        again.step(eps, 945, x, eta=0.5)
    with pytest.raises(ValueError, match="reads eps"):
        DistilledDDIMScheduler(prediction_type="v_prediction")


def test_ddpm_pipeline_samples_with_the_student_and_its_scheduler() -> None:
    pipe = _ddpm_pipe()
    teacher, old = pipe.unet, pipe.scheduler
    torch.manual_seed(3)
    student = shapes.build("unet2d", seed=3)
    calls, teacher_calls = _calls(student), _calls(teacher)
    with apply_distilled_sampler(pipe, DistilledSamplerConfig(steps=4, student=student)):
        assert pipe.unet is student
        out = pipe(batch_size=2, generator=torch.Generator().manual_seed(6), output_type="pt")
    assert len(calls) == 4 and not teacher_calls
    assert pipe.unet is teacher and pipe.scheduler is old
    noise = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(6))
    sched = GridDDIMScheduler(zoo.teacher_scheduler_config())
    eps_fn = lambda x, t, y: student(x, t).sample  # noqa: E731 (an unconditional network)
    x = sample(eps_fn, sched, noise, steps=4, clamp=False)
    assert torch.equal(out.images, (x / 2 + 0.5).clamp(0, 1))


def test_distilled_sampler_refuses_bad_steps_and_a_student_of_another_class() -> None:
    pipe = _ddpm_pipe()
    old = pipe.scheduler
    with pytest.raises(ValueError, match="positive divisor of 64, got 5"):
        apply_distilled_sampler(pipe, DistilledSamplerConfig(steps=5))
    dit = shapes.tiny("dit")
    with pytest.raises(UnsupportedModel, match="does not support DiTTransformer2DModel"):
        apply_distilled_sampler(pipe, DistilledSamplerConfig(student=dit))
    assert pipe.scheduler is old and type(pipe.unet).__name__ == "UNet2DModel"


# --------------------------------------------------------------------------- consistency model


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_consistency_scheduler_reproduces_the_packages_sampler_exactly(steps: int) -> None:
    unet, noise = _class_unet(), make_noise(2, 0, (3, 8, 8))
    ours = ConsistencyScheduler.from_config(zoo.latent_scheduler().config)
    got = _pipeline_loop(unet, ours, noise, steps, generator=torch.Generator().manual_seed(11))
    acp = zoo.teacher_scheduler().alphas_cumprod
    theirs = consistency_sample(
        model_eps_fn(unet), noise, torch.tensor([1, 10]), acp, steps, seed=11
    )
    # the same LCM arithmetic and the same re-noising draws from equally seeded generators
    assert torch.equal(got, theirs)


def test_consistency_scheduler_uncapped_is_diffusers_lcm_timesteps() -> None:
    ours = ConsistencyScheduler(max_timestep=999)
    lcm = diffusers.LCMScheduler(original_inference_steps=50)
    for steps in (1, 2, 4, 8):
        ours.set_timesteps(steps)
        lcm.set_timesteps(steps)
        assert torch.equal(ours.timesteps, lcm.timesteps)


def test_dit_pipeline_samples_with_the_consistency_scheduler() -> None:
    pipe = _dit_pipe(diffusers.DDIMScheduler.from_config(zoo.latent_scheduler().config))
    old, calls = pipe.scheduler, _calls(pipe.transformer)
    with apply_consistency_sampler(pipe, ConsistencySamplerConfig(steps=2)) as handle:
        assert isinstance(pipe.scheduler, ConsistencyScheduler)
        torch.manual_seed(0)  # DiTPipeline gives step no generator: the re-noising uses torch's
        images = _run_dit(pipe, steps=250)
        assert pipe.scheduler.timesteps.tolist() == [979, 499]
    assert handle.removed and pipe.scheduler is old
    assert len(calls) == 2 and images.shape == (2, 3, 8, 8) and torch.isfinite(images).all()
    with pytest.raises(ValueError, match=r"steps must be in \[1, 49\], got 0"):
        apply_consistency_sampler(pipe, ConsistencySamplerConfig(steps=0))
    assert pipe.scheduler is old
