"""The converged solution, computed once per content and shared by every benchmark that needs it.

Idea
====
The fidelity of a training-free approximation is measured against the converged clipped-ODE
solution of the same noise (`reference.harness.ode.solution`: DPM-Solver++(2M) at 200 steps).
At 140 images per seed and five seeds that is 1,000 denoiser batches of the zoo teacher, about
six minutes of the 2-core CPU, and several benchmarks ask for exactly the same tensors (the same
teacher, noise seeds, labels and solver). `solution` computes each one once and keeps it under a
**content key**: a hash of everything the tensor depends on, so a changed input is a different
key and never a stale hit.

Math
====
    key = sha256(ode.py ‖ sampling.py ‖ weights ‖ noise ‖ labels ‖ guidance ‖ clip ‖ steps
                 ‖ torch version)                                                        (1)
    weights = sha256 over the model's parameters and buffers, in name order, of each
              (name, dtype, shape, bytes)                                                (2)

A hit returns the tensor the same computation wrote; it is bitwise what a recomputation on the
same machine and torch build gives (the CPU solver is deterministic), which a test checks.

Where
=====
``$REFERENCE_SOLUTION_CACHE`` when set, else ``~/.cache/diffusion-reference/solutions``; one
``<key>.pt`` file per tensor (about 140 KB at 140 images), written to a temporary name and then
renamed, so a reader never sees half a file. Deleting the folder is always safe.

Pitfalls
========
* The key covers the two source files the solution runs through (`reference.harness.ode` and
  `reference.harness.sampling`); a change elsewhere in how a model computes ε (a hook left on the
  model) is not seen: pass the untouched model.
* Machines differ in BLAS kernels: a cache is per machine; never copy one to another.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
from pathlib import Path
from typing import Any

import torch

from . import ode, sampling

CACHE_ENV = "REFERENCE_SOLUTION_CACHE"
DEFAULT_CACHE = Path("~/.cache/diffusion-reference/solutions")


def cache_dir() -> Path:
    """The folder of cached solutions (`CACHE_ENV`, else `DEFAULT_CACHE`)."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def _tensor_hash(h: Any, name: str, t: torch.Tensor) -> None:
    h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
    flat = t.detach().cpu().reshape(-1).contiguous()  # a 0-d tensor has no byte view
    h.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")


def weights_digest(model: torch.nn.Module) -> str:
    """(2): a hash of every parameter and buffer of ``model``, in name order."""
    h = hashlib.sha256()
    state = model.state_dict()
    for name in sorted(state):
        _tensor_hash(h, name, state[name])
    return h.hexdigest()


def _source(module: object) -> str:
    path = getattr(module, "__file__", None)
    return hashlib.sha256(Path(str(path)).read_bytes()).hexdigest()


def content_key(
    model: torch.nn.Module,
    noise: torch.Tensor,
    labels: torch.Tensor | None,
    guidance_scale: float,
    clip: bool,
    steps: int,
) -> str:
    """(1): the key of one solution tensor."""
    h = hashlib.sha256()
    fields = {
        "ode": _source(ode),
        "sampling": _source(sampling),
        "weights": weights_digest(model),
        "guidance_scale": float(guidance_scale),
        "clip": bool(clip),
        "steps": int(steps),
        "solver": list(ode.SOLUTION),
        "torch": torch.__version__,
    }
    h.update(json.dumps(fields, sort_keys=True).encode())
    _tensor_hash(h, "noise", noise)
    if labels is not None:
        _tensor_hash(h, "labels", labels)
    return h.hexdigest()


def _load(path: Path) -> torch.Tensor | None:
    try:
        x = torch.load(path, weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError, KeyError, pickle.UnpicklingError):
        return None
    return x if isinstance(x, torch.Tensor) else None


def _store(path: Path, x: torch.Tensor) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(x.contiguous(), tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def solution(
    model: torch.nn.Module,
    noise: torch.Tensor,
    labels: torch.Tensor | None = None,
    guidance_scale: float = 1.0,
    clip: bool = True,
    steps: int = ode.SOLUTION[1],
) -> torch.Tensor:
    """`reference.harness.ode.solution` of ``model`` from ``noise``, read from the cache when the
    same content (1) was solved before, else solved and kept. A file that cannot be read (a
    truncated write from another machine's copy, an old torch) is solved again and replaced."""
    key = content_key(model, noise, labels, guidance_scale, clip, steps)
    path = cache_dir() / f"{key}.pt"
    hit = _load(path) if path.is_file() else None
    if hit is not None and hit.shape == noise.shape:
        return hit
    x = ode.solution(
        sampling.model_eps_fn(model),
        noise,
        labels=labels,
        guidance_scale=guidance_scale,
        clip=clip,
        steps=steps,
    )
    with contextlib.suppress(OSError):  # a read-only home: the run goes on, uncached
        _store(path, x)
    return x
