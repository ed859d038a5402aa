"""DDIM on the clipped ODE as one XLA program, batch buckets and data parallelism over a mesh.

* [`ddim_tables`][reference.tpu_deployment.sampler.ddim_tables] reads the cumulative alphas from
  the diffusers scheduler of the zoo and the timesteps from the harness's trailing grid
  (`reference.harness.ode.grid`), so the JAX loop takes exactly the steps of the torch baseline
  (`reference.harness.ode.solve` with ``sampler="ddim"``), the last one to ``alpha_bar = 1``.
* [`ddim_update`][reference.tpu_deployment.sampler.ddim_update] is one step of that baseline,
  equations (1)-(3) of `reference.harness.ode` (Song et al. 2021, arXiv:2010.02502, eq. 12 with
  sigma = 0, applied to the clipped denoiser)::

      x0  = clip((x_t - sqrt(1 - a_t) eps) / sqrt(a_t), -1, 1)                   (1)
      eps~ = (x_t - sqrt(a_t) x0) / sqrt(1 - a_t)                                 (2)
      x_s = sqrt(a_s) x0 + sqrt(1 - a_s) eps~                                     (3)

  (2) re-derives the noise from the clipped x0, so every sampler of the project solves one ODE;
  keeping the raw ``eps`` in (3), as diffusers' DDIM with ``clip_sample`` does, solves another.
* [`Sampler`][reference.tpu_deployment.sampler.Sampler] builds two programs from the same step
  function: ``compiled`` (the whole loop inside ``jax.jit`` with ``lax.fori_loop``: one dispatch per
  batch) and ``per_step`` (``jax.jit`` of one step, called ``steps`` times from Python: one dispatch
  per step, the way an eager framework drives a model).
* [`bucket_size`][reference.tpu_deployment.sampler.bucket_size] pads a request to a fixed set of
  batch shapes: XLA compiles one program per input shape, so without buckets every new batch size
  pays a full compilation.
* With a `jax.sharding.Mesh`, noise and labels are sharded over the mesh's ``"data"``
  axis (``NamedSharding(mesh, P("data"))``) and the parameters replicated (``P()``); XLA's SPMD
  partitioner turns the one global program into per-device programs. Rows of a batch are
  independent, so data parallelism needs no communication inside the loop.

Pitfall: at t = 999, ``a_t`` is 2.4e-9, so (1) multiplies a float32 rounding difference of
``eps`` by about 2e4 before the clip; the pixels it does not clip carry that difference on, scaled
down by ``sqrt(a_s)`` in (3). Two frameworks therefore agree to a few 1e-5 at 50 steps (3.5e-5
measured for the zoo teacher, where ``sqrt(a_s)`` is 0.03), not to 1e-7, and less with fewer
steps (about 1e-3 at 2 steps, where the next grid point is t = 499).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .unet import Params, unet_apply

NULL_CLASS = 10
DEFAULT_BUCKETS = (8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class DDIMTables:
    """Per-step constants of deterministic DDIM on the clipped ODE: ``t_i``, ``a_t =
    alpha_bar(t_i)``, ``a_s`` of the next grid point (1 after the last step) and the clip range
    of (1) (0 = no clipping, a latent model)."""

    timesteps: np.ndarray
    alpha: np.ndarray
    alpha_prev: np.ndarray
    clip: float


def ddim_tables(scheduler: Any, steps: int, clip: float = 1.0) -> DDIMTables:
    """Constants of ``steps`` DDIM steps on the trailing grid of `reference.harness.ode`, with
    the cumulative alphas of ``scheduler`` (a diffusers scheduler of the zoo's schedule)."""
    from reference.harness.ode import grid

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    acp = scheduler.alphas_cumprod.numpy().astype(np.float32)
    ts = grid(steps, len(acp)).numpy().astype(np.int32)
    alpha_prev = np.append(acp[ts[1:]], np.float32(1.0)).astype(np.float32)  # last step: a_s = 1
    return DDIMTables(ts, acp[ts], alpha_prev, float(clip))


def ddim_update(
    x: jax.Array, eps: jax.Array, alpha: jax.Array, alpha_prev: jax.Array, clip: float
) -> jax.Array:
    """One DDIM step t -> s on the clipped ODE, equations (1)-(3) (``clip = 0``: no clipping)."""
    x0 = (x - jnp.sqrt(1.0 - alpha) * eps) / jnp.sqrt(alpha)  # (1) before the clip
    if clip > 0:
        x0 = jnp.clip(x0, -clip, clip)  # (1)
    eps_tilde = (x - jnp.sqrt(alpha) * x0) / jnp.sqrt(1.0 - alpha)  # (2)
    return jnp.sqrt(alpha_prev) * x0 + jnp.sqrt(1.0 - alpha_prev) * eps_tilde  # (3)


def guided_eps(
    params: Params,
    cfg: Mapping[str, Any],
    x: jax.Array,
    t: jax.Array,
    labels: jax.Array,
    guidance_scale: float,
) -> jax.Array:
    """Classifier-free guided epsilon in float32 (one batched call on ``[cond; uncond]`` rows)."""
    n = x.shape[0]
    tb = jnp.full((n,), t, dtype=jnp.int32)
    if guidance_scale == 1.0:
        return unet_apply(params, cfg, x, tb, labels).astype(jnp.float32)
    null = jnp.full_like(labels, NULL_CLASS)
    eps = unet_apply(
        params,
        cfg,
        jnp.concatenate([x, x]),
        jnp.concatenate([tb, tb]),
        jnp.concatenate([labels, null]),
    ).astype(jnp.float32)
    cond, uncond = eps[:n], eps[n:]
    return uncond + guidance_scale * (cond - uncond)  # Ho & Salimans 2022, Eq. (6), s = 1 + w


@dataclass
class Sampler:
    """DDIM sampler of a ported U-Net: ``compiled(params, noise, labels)`` runs the whole loop as
    one program; ``per_step(...)`` drives a jitted single step from Python.

    ``noise`` is NHWC float32; the sampler state stays float32 whatever the parameter dtype
    (``compute_dtype``), as in mixed-precision training.
    """

    cfg: Mapping[str, Any]
    tables: DDIMTables
    guidance_scale: float = 1.0
    compute_dtype: Any = jnp.float32
    mesh: Mesh | None = None
    _compiled: Callable[..., jax.Array] = field(init=False, repr=False)
    _step: Callable[..., jax.Array] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        ts = jnp.asarray(self.tables.timesteps)
        alpha = jnp.asarray(self.tables.alpha)
        alpha_prev = jnp.asarray(self.tables.alpha_prev)
        clip, cfg, scale, dtype = (
            self.tables.clip,
            self.cfg,
            self.guidance_scale,
            self.compute_dtype,
        )

        def step(params: Params, x: jax.Array, labels: jax.Array, i: jax.Array) -> jax.Array:
            eps = guided_eps(params, cfg, x.astype(dtype), ts[i], labels, scale)
            return ddim_update(x, eps, alpha[i], alpha_prev[i], clip)

        def loop(params: Params, noise: jax.Array, labels: jax.Array) -> jax.Array:
            x = lax.fori_loop(
                0, len(self.tables.timesteps), lambda i, x: step(params, x, labels, i), noise
            )
            return jnp.clip(x, -1.0, 1.0)

        kwargs: dict[str, Any] = {}
        if self.mesh is not None:
            batch = NamedSharding(self.mesh, PartitionSpec("data"))
            replicated = NamedSharding(self.mesh, PartitionSpec())
            kwargs = {"in_shardings": (replicated, batch, batch), "out_shardings": batch}
        self._compiled = jax.jit(loop, **kwargs)
        self._step = jax.jit(step)

    @property
    def steps(self) -> int:
        return len(self.tables.timesteps)

    def place(self, params: Params, noise: Any, labels: Any) -> tuple[Params, jax.Array, jax.Array]:
        """Put inputs on the device(s): params replicated, batch sharded when a mesh is set."""
        if self.mesh is None:
            return params, jnp.asarray(noise, jnp.float32), jnp.asarray(labels, jnp.int32)
        batch = NamedSharding(self.mesh, PartitionSpec("data"))
        replicated = NamedSharding(self.mesh, PartitionSpec())
        return (
            jax.device_put(params, replicated),
            jax.device_put(jnp.asarray(noise, jnp.float32), batch),
            jax.device_put(jnp.asarray(labels, jnp.int32), batch),
        )

    def compiled(self, params: Params, noise: jax.Array, labels: jax.Array) -> jax.Array:
        """All steps in one XLA program (``jit`` + ``lax.fori_loop``); blocks until done."""
        return self._compiled(params, noise, labels).block_until_ready()

    def per_step(self, params: Params, noise: jax.Array, labels: jax.Array) -> jax.Array:
        """The same steps with one dispatch per step from Python (the control)."""
        x = noise
        for i in range(self.steps):
            x = self._step(params, x, labels, jnp.int32(i))
        return jnp.clip(x, -1.0, 1.0).block_until_ready()

    def compilations(self) -> int:
        """How many programs ``compiled`` has built so far (one per distinct input shape)."""
        return int(self._compiled._cache_size())  # type: ignore[attr-defined]


def data_mesh(devices: Sequence[Any] | None = None) -> Mesh:
    """A 1-D mesh named ``"data"`` over ``devices`` (default: all devices)."""
    devs = list(jax.devices() if devices is None else devices)
    return Mesh(np.array(devs), ("data",))


def bucket_size(n: int, buckets: Sequence[int] = DEFAULT_BUCKETS, multiple: int = 1) -> int:
    """The smallest bucket ``>= n`` that is a multiple of ``multiple`` (the mesh size)."""
    if n < 1:
        raise ValueError(f"batch size must be >= 1, got {n}")
    for b in sorted(buckets):
        if b >= n and b % multiple == 0:
            return b
    top = -(-n // multiple) * multiple
    return top


def pad_batch(noise: np.ndarray, labels: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Pad a request to ``size`` rows (zero noise, null label); slice ``[:n]`` off the result."""
    n = noise.shape[0]
    if size < n:
        raise ValueError(f"bucket {size} is smaller than the batch {n}")
    pad_x = np.zeros((size - n, *noise.shape[1:]), dtype=np.float32)
    pad_y = np.full((size - n,), NULL_CLASS, dtype=np.int32)
    return (
        np.concatenate([np.asarray(noise, np.float32), pad_x]),
        np.concatenate([np.asarray(labels, np.int32), pad_y]),
    )
