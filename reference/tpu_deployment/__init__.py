"""TPU deployment: the zoo U-Net and its whole DDIM loop as one XLA program, in JAX.

The idea
========
A TPU does not execute Python or PyTorch operators: it executes **XLA programs** compiled ahead
of time for fixed input shapes. Deploying a diffusion model on TPUs therefore means three things:

1. **Express the model in an XLA front end.** Here the diffusers ``UNet2DModel`` of the zoo teacher
   is re-written in plain ``jax.numpy`` / ``jax.lax``
   ([`reference.tpu_deployment.unet`][reference.tpu_deployment.unet]): convolution, GroupNorm, SiLU,
   residual blocks with time + class embedding, self-attention, strided-conv downsampling, nearest
   upsampling and the skip concatenations, with parameters converted from the committed safetensors
   (no retraining). Parity with torch is tested to a float32 tolerance.
2. **Compile the whole sampler, not just one step.** ``jax.jit`` of a function that runs the
   ``N`` DDIM steps in ``lax.fori_loop`` gives *one* program: the host dispatches once per batch
   and the device never waits for Python between steps. The alternative - ``jit`` of one step,
   called ``N`` times from Python - pays a host round trip per step, which on a TPU (fast
   device, slow host link) is the bottleneck for small models.
3. **Keep shapes static and shard the batch.** XLA compiles one program per input shape, so
   requests are padded to a few batch *buckets*; the batch axis is split over the chips with a
   ``jax.sharding.Mesh`` and ``NamedSharding(mesh, P("data"))`` (parameters replicated,
   ``P()``), the single-program multiple-data (SPMD) model of GSPMD (Xu et al. 2021,
   arXiv:2105.04663). DDIM rows are independent, so no collective runs inside the loop.

The math of the sampler is deterministic DDIM (Song et al. 2020, arXiv:2010.02502):
``x0 = (x_t - sqrt(1 - a_t) eps) / sqrt(a_t)`` (clipped to [-1, 1] like the zoo scheduler) and
``x_prev = sqrt(a_prev) x0 + sqrt(1 - a_prev) eps``, with ``a = alpha_bar`` read from the
diffusers ``DDIMScheduler`` so that both stacks take identical steps; classifier-free guidance
(Ho & Salimans 2022, arXiv:2207.12598) evaluates ``[cond; uncond]`` rows in one call.

What runs here, and what does not
=================================
This machine has no TPU. The same program runs on JAX's CPU backend with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``, which splits the CPU into 8 logical
devices so that the sharded code path (the one a TPU v4-8 would run) is exercised and tested.
**Every figure in the benchmark is a CPU figure**: 8 host "devices" share the same 2 cores, so
sharding shows its overhead here, not a speedup. Published TPU figures, quoted as such: a TPU v4
chip peaks at 275 TFLOP/s in bfloat16 with 32 GiB of HBM at about 1.2 TB/s (Jouppi et al. 2023,
"TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware Support
for Embeddings", ISCA 2023, arXiv:2304.01433).

Pitfalls
========
* **float32 is not float32 on a TPU by default**: matmuls and convolutions default to one
  bfloat16 pass; this port passes ``precision=HIGHEST`` in float32 mode (parity needs it).
* ``XLA_FLAGS`` must be set before ``import jax``; ``bench.py`` does it when it is imported
  ([`configure_host_devices`][reference.tpu_deployment.configure_host_devices]), and the tests call
  it before importing jax.
* A new batch size, step count or guidance scale is a new program: compile time (seconds) is
  paid again. Bucket the batch; make step count and guidance part of the deployment config.
* Per-device batch must divide evenly: buckets are multiples of the mesh size.
* bfloat16 has an 8-bit mantissa: keep GroupNorm statistics, softmax and the sampler state in
  float32 (done here); the bf16 error is measured, not assumed (the largest pixel deviation,
  and the FDD against the float32 loop over paired noise seeds).
* Layout: NHWC is used internally (TPU convolutions tile channels on the 128-lane axis); the
  torch model is NCHW, and kernels are converted ``OIHW -> HWIO`` once at load time.

In production
=============
diffusers ships Flax pipelines (``FlaxStableDiffusionPipeline`` with ``jax.pmap`` /
``jax.jit``), ``jax.experimental.compilation_cache`` persists compiled programs across
restarts, and PyTorch/XLA (``torch_xla``) lowers PyTorch models to the same XLA compiler.

Package
=======
* [`reference.tpu_deployment.unet`][reference.tpu_deployment.unet] - the zoo U-Net in ``jax.numpy``
  / ``jax.lax``, weight conversion from the torch state dict;
* [`reference.tpu_deployment.sampler`][reference.tpu_deployment.sampler] - DDIM tables read from
  diffusers, the whole-loop and per-step programs (`Sampler`), the device mesh, batch buckets and
  padding;
* [`reference.tpu_deployment.measure`][reference.tpu_deployment.measure] - the five ways of running
  the loop, timed together, the request stream, and the samplers whose quality is measured on paired
  noise seeds;
* [`reference.tpu_deployment.bench`][reference.tpu_deployment.bench] - the benchmark and the demo.

Use ``python -m reference.tpu_deployment`` (``--help``); JAX is the optional ``[tpu]`` extra.
Without it the command line stops with one line naming the extra; ``import
reference.tpu_deployment`` works without JAX, and only its JAX names need it.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

JAX_MISSING = (
    "reference.tpu_deployment needs JAX (the optional [tpu] extra): "
    "pip install 'diffusion-efficiency-glossary[tpu]'"
)
HOST_DEVICES = 8
"""Logical CPU devices requested when JAX has not been imported yet (a TPU v4-8 has 4 chips,
8 TensorCores; JAX on v4 shows 4 devices, one per chip, in megacore mode)."""

_EXPORTS: dict[str, str] = {
    "check_config": "unet",
    "convert_state_dict": "unet",
    "cast_params": "unet",
    "unet_apply": "unet",
    "nchw_to_nhwc": "unet",
    "nhwc_to_nchw": "unet",
    "DDIMTables": "sampler",
    "Sampler": "sampler",
    "bucket_size": "sampler",
    "data_mesh": "sampler",
    "ddim_tables": "sampler",
    "ddim_update": "sampler",
    "pad_batch": "sampler",
    "load_teacher_params": "measure",
}
__all__ = sorted([*_EXPORTS, "JAX_MISSING", "configure_host_devices", "require_jax"])


def configure_host_devices(n: int = HOST_DEVICES) -> None:
    """Ask XLA for ``n`` logical CPU devices; only effective before ``jax`` is imported."""
    if "jax" in sys.modules:
        return
    flag = f"--xla_force_host_platform_device_count={n}"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()


def require_jax() -> Any:
    """Import and return ``jax``, or raise ``ImportError`` with a one-line install hint."""
    try:
        return importlib.import_module("jax")
    except ImportError:
        raise ImportError(JAX_MISSING) from None


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reference.tpu_deployment' has no attribute {name!r}")
    if module != "bench":
        configure_host_devices()
        require_jax()
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
