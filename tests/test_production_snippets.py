"""The snippets the site and the README show run as written, on tiny from-config models.

Each technique page's "On a diffusers model" snippet (glossary.site.production) is executed
against a small pipeline stand-in that holds a tiny production model of ``reference.zoo.shapes``
and a scheduler, and whose call runs a short denoising loop the way diffusers' pipelines do (one
model call per step, ``scheduler.step`` after it). After the snippet the model and the scheduler
are the original objects again and give the original output: every snippet undoes what it did.
The README's snippet is taken from the README and run as it is.

Regional compilation is run with the ``eager`` backend (Inductor's compile time is not what this
test is about); everything else is the snippet's own text, ``run_async`` included (two ranks
under ``torchrun`` on the tiny U-Net).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from glossary.site import production

diffusers = pytest.importorskip("diffusers")

from reference import zoo  # noqa: E402
from reference.zoo import shapes  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]
REPO = Path(__file__).resolve().parent.parent
STEPS = 3

KIND = {
    "deepcache": "unet2d-condition",
    "first-block-cache": "dit",
    "step-forecasting": "unet2d-condition",
    "low-rank": "dit",
    "fusion": "unet2d-condition",
    "regional-compile": "dit",
    "structured-pruning": "unet2d-condition",
    "cfg": "dit",
    "classifier-guidance": "dit",
    "scheduler": "unet2d",
    "grid-choice": "unet2d",
    "distilled-sampler": "unet2d",
    "consistency-sampler": "unet2d",
    "async-pipeline": "unet2d-condition",
    "run-async": "unet2d-condition",
}
"""The tiny model each call's snippet runs on (one the call supports)."""


@dataclass
class TinyPipeline:
    """A pipeline stand-in: ``unet`` or ``transformer``, ``scheduler``, and a call that denoises
    one tiny batch for ``STEPS`` steps (the scheduler may pin another number), without
    gradients, as diffusers' pipelines do."""

    model: torch.nn.Module
    scheduler: Any
    calls: int = 0

    def __post_init__(self) -> None:
        self.slot = "transformer" if "Transformer" in type(self.model).__name__ else "unet"
        setattr(self, self.slot, self.model)

    def denoiser(self) -> torch.nn.Module:
        return getattr(self, self.slot)

    @torch.no_grad()  # as diffusers' pipelines sample
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        model = self.denoiser()
        inputs = shapes.example_inputs(model)
        key = "sample" if "sample" in inputs else "hidden_states"
        latents = inputs[key]
        self.scheduler.set_timesteps(STEPS)
        for t in self.scheduler.timesteps:
            step = t.reshape(1).expand(latents.shape[0])
            if key == "hidden_states":
                step = step.long()
            out = model(**{**inputs, key: latents, "timestep": step})[0]
            eps = out[:, : latents.shape[1]]
            latents = self.scheduler.step(eps, t, latents).prev_sample
        self.calls += 1
        return SimpleNamespace(images=latents)


def _pipeline(kind: str) -> TinyPipeline:
    model = shapes.tiny(kind).eval()
    scheduler = diffusers.DDIMScheduler.from_config(zoo.teacher_scheduler_config())
    return TinyPipeline(model, scheduler)


def _classifier(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """A stand-in classifier: ten logits from the mean of each channel."""
    features = x.mean(dim=(2, 3))
    return torch.cat([features, -features, features**2], dim=1)[:, :10].repeat(1, 4)[:, :10]


def _namespace(pipe: TinyPipeline, kind: str) -> dict[str, Any]:
    embeds = shapes.example_inputs(pipe.model).get("encoder_hidden_states")
    return {
        "pipe": pipe,
        "prompt": "a digit",
        "class_labels": [3],
        "classifier": _classifier,
        "student": shapes.tiny(kind, seed=1).eval(),
        "consistency_model": shapes.tiny(kind, seed=2).eval(),
        "embeds": embeds,
    }


def _output(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model(**shapes.example_inputs(model))[0]


CALLS = [(slug, call) for slug, calls in production.CALLS.items() for call in calls]


@pytest.mark.parametrize(("slug", "call"), CALLS, ids=[c.key for _, c in CALLS])
def test_the_page_snippet_runs_and_undoes_itself(slug: str, call: production.Call) -> None:
    kind = KIND[call.key]
    pipe = _pipeline(kind)
    model, scheduler = pipe.model, pipe.scheduler
    before = _output(model)
    code = production.snippet(call).replace('backend="inductor"', 'backend="eager"')
    namespace = _namespace(pipe, kind)
    exec(compile(code, f"<{slug}: {call.function}>", "exec"), namespace)
    uses_pipe = re.search(r"\bpipe\b", call.snippet) is not None
    assert pipe.calls == uses_pipe  # run_async builds its own model in every rank
    assert torch.isfinite(namespace.get("images", namespace.get("latents"))).all()
    assert pipe.denoiser() is model and pipe.scheduler is scheduler
    assert torch.equal(_output(model), before)


def readme_snippet() -> str:
    """The Python block of the README's section on applying a technique to a diffusers model."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    part = text.split("## Use a technique on your diffusers model", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)\n```", part, flags=re.S)
    assert found is not None, "the README's section has no Python block"
    return found[1]


def test_the_readme_snippet_runs_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(readme_snippet(), "<README>", "exec"), namespace)
    handle = namespace["handle"]
    assert handle.removed
    assert (handle.state["calls"], handle.state["full_calls"]) == (6, 2)
    assert torch.equal(namespace["after"], namespace["before"])


def test_the_readme_names_every_call_the_pages_show() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    part = text.split("## Use a technique on your diffusers model", 1)[1].split("\n## ", 1)[0]
    for calls in production.CALLS.values():
        for call in calls:
            assert f"`{call.function}`" in part, call.function
