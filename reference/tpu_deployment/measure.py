"""The ways of running one DDIM loop that the benchmark compares
([`reference.tpu_deployment.bench`][reference.tpu_deployment.bench]): built and compiled here,
measured by the harness (`reference.harness.compare`).

``torch`` (the harness's DDIM on the clipped ODE, `reference.harness.ode.solve`, on the diffusers
U-Net, eager), ``compiled`` (the JAX port's whole loop as one XLA program), ``per-step`` (a jitted
step dispatched from Python) and, with ``full_rows``, the whole loop sharded over the host devices
and in bfloat16. Every way solves the same clipped ODE (equations (1)-(3) of
`reference.harness.ode`, `reference.tpu_deployment.sampler.ddim_update` in JAX).

[`measure`][reference.tpu_deployment.measure.measure] measures what the harness does not: each
program's first call on the timed batch (compilation plus one run), how far the programs that
are only timed land from the torch samples of that batch, and a stream of requests served with
and without batch buckets. It returns the programs ready to time and the samplers of the paired
quality seeds (`Ways`). Everything runs on JAX's **CPU** backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import require_jax


def load_teacher_params(dtype: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(params, cfg)`` of the zoo teacher, read from its verified safetensors file."""
    require_jax()
    import jax.numpy as jnp
    from safetensors.numpy import load_file

    from reference.zoo.store import verified_weights

    from .unet import check_config, convert_state_dict

    entry, path = verified_weights("teacher")
    params = convert_state_dict(load_file(str(path)), dtype or jnp.float32)
    return params, check_config(entry["config"])


@dataclass
class Ways:
    """The programs under comparison: ``timed[row]()`` runs the timed batch of ``n`` images;
    ``sample[row](seed)`` samples ``n_quality`` images NCHW from the noise of ``seed`` (torch,
    the loop and, with ``full_rows``, bfloat16); ``solution(seed)`` is the converged clipped-ODE
    solution from that noise. ``first_s`` is each program's first call on the timed batch
    (seconds), ``max_abs`` the largest pixel deviation of its timed batch from torch's."""

    n: int
    steps: int
    timed: dict[str, Callable[[], Any]]
    sample: dict[str, Callable[[int], Any]]
    solution: Callable[[int], Any]
    first_s: dict[str, float]
    max_abs: dict[str, float]
    stream: dict[str, dict[str, float]] = field(default_factory=dict)
    devices: int = 1


def serve_stream(
    sampler_factory: Callable[[], Any], params: Any, sizes: Sequence[int], buckets: Sequence[int]
) -> dict[str, float]:
    """Serve requests of ``sizes`` with a fresh sampler; pad to ``buckets`` unless empty."""
    import numpy as np

    from .sampler import bucket_size, pad_batch

    sampler = sampler_factory()
    start = time.perf_counter()
    for k, n in enumerate(sizes):
        rng = np.random.default_rng(k)
        noise = rng.standard_normal((n, 16, 16, 1)).astype(np.float32)
        labels = np.arange(n, dtype=np.int32) % 10
        size = bucket_size(n, buckets) if buckets else n
        x, y = pad_batch(noise, labels, size)
        out = sampler.compiled(*sampler.place(params, x, y))
        assert out.shape[0] == size
    return {"seconds": time.perf_counter() - start, "compilations": sampler.compilations()}


def _torch_way(steps: int, g: float) -> Callable[[Any, Any], Any]:
    """``run(noise, labels)``: the torch baseline, DDIM on the clipped ODE."""
    from reference import zoo
    from reference.harness import model_eps_fn
    from reference.harness.ode import solve

    eps = model_eps_fn(zoo.load_teacher())

    def run(noise: Any, labels: Any) -> Any:
        return solve(eps, noise, steps=steps, labels=labels, guidance_scale=g)

    return run


def _jax_way(sampler: Any, weights: Any, per_step: bool = False) -> Callable[[Any, Any], Any]:
    """``run(noise, labels)`` of a JAX program on NCHW torch tensors, returning NCHW torch."""
    import numpy as np
    import torch

    from .unet import nchw_to_nhwc, nhwc_to_nchw

    go = sampler.per_step if per_step else sampler.compiled

    def run(noise: Any, labels: Any) -> Any:
        out = go(*sampler.place(weights, nchw_to_nhwc(noise.numpy()), labels.numpy()))
        return torch.from_numpy(np.array(nhwc_to_nchw(np.asarray(out))))

    return run


def _ways(steps: int, g: float, full_rows: bool) -> tuple[dict[str, Callable[..., Any]], int]:
    """``{row: run(noise, labels)}`` for every row, and the number of devices of the mesh."""
    import jax.numpy as jnp

    from reference.harness.ode import schedule

    from .sampler import Sampler, data_mesh, ddim_tables
    from .unet import cast_params

    params, ucfg = load_teacher_params()
    tables = ddim_tables(schedule(), steps)
    loop = Sampler(ucfg, tables, guidance_scale=g)
    ways = {
        "torch": _torch_way(steps, g),
        "compiled": _jax_way(loop, params),
        "per-step": _jax_way(loop, params, per_step=True),
    }
    if not full_rows:
        return ways, 1
    mesh = data_mesh()
    sharded = Sampler(ucfg, tables, guidance_scale=g, mesh=mesh)
    bf16 = Sampler(ucfg, tables, guidance_scale=g, compute_dtype=jnp.bfloat16)
    ways["sharded"] = _jax_way(sharded, params)
    ways["bf16"] = _jax_way(bf16, cast_params(params, jnp.bfloat16))
    return ways, int(mesh.size)


def _bind(run: Callable[[Any, Any], Any], noise: Any, labels: Any) -> Callable[[], Any]:
    return lambda: run(noise, labels)


def _first_calls(timed: dict[str, Callable[[], Any]]) -> tuple[dict[str, float], dict[str, Any]]:
    """Seconds and output of each program's first call (a JAX program compiles in it)."""
    import torch

    seconds, outputs = {}, {}
    for name, run in timed.items():
        start = time.perf_counter()
        with torch.inference_mode():
            outputs[name] = run()
        seconds[name] = time.perf_counter() - start
    return seconds, outputs


def _quality_samplers(
    ways: dict[str, Callable[..., Any]], n_quality: int
) -> dict[str, Callable[[int], Any]]:
    from reference.harness import class_labels, make_noise

    labels = class_labels(n_quality)
    rows = [r for r in ("torch", "compiled", "bf16") if r in ways]
    return {r: (lambda seed, run=ways[r]: run(make_noise(n_quality, seed), labels)) for r in rows}


def _solution(n_quality: int, g: float, steps: int) -> Callable[[int], Any]:
    """The converged clipped-ODE solution of the torch teacher from the noise of a seed, read
    from the shared cache (`reference.harness.solutions`) when another run solved it before."""
    from reference import zoo
    from reference.harness import class_labels, make_noise
    from reference.harness.solutions import solution

    teacher, labels = zoo.load_teacher(), class_labels(n_quality)
    return lambda seed: solution(
        teacher, make_noise(n_quality, seed), labels=labels, guidance_scale=g, steps=steps
    )


def measure(
    n: int,
    n_quality: int,
    steps: int,
    guidance_scale: float,
    full_rows: bool,
    solution_steps: int,
    stream: Sequence[int] = (),
    buckets: Sequence[int] = (),
) -> Ways:
    """Build every way of running the loop, call each once on the timed batch (compiling the
    JAX programs), serve the request stream (``full_rows``), and return them (`Ways`)."""
    require_jax()
    from reference.harness import sizes

    from .sampler import Sampler, ddim_tables

    ways, devices = _ways(steps, guidance_scale, full_rows)
    noise, labels = sizes.latency_inputs(n)
    timed = {name: _bind(run, noise, labels) for name, run in ways.items()}
    first_s, outputs = _first_calls(timed)
    max_abs = {k: float((v - outputs["torch"]).abs().max()) for k, v in outputs.items()}
    served: dict[str, dict[str, float]] = {}
    if full_rows and stream:
        from reference.harness.ode import schedule

        params, ucfg = load_teacher_params()
        tables = ddim_tables(schedule(), steps)

        def factory() -> Any:
            return Sampler(ucfg, tables, guidance_scale=guidance_scale)

        for policy, sizes in (("exact", ()), ("buckets", buckets)):
            served[policy] = serve_stream(factory, params, stream, sizes)
    return Ways(
        n,
        steps,
        timed,
        _quality_samplers(ways, n_quality),
        _solution(n_quality, guidance_scale, solution_steps),
        first_s,
        max_abs,
        served,
        devices,
    )


def break_even_images(compile_s: float, per_image_other_ms: float, per_image_ms: float) -> float:
    """Images after which ``compile_s`` is repaid by a lower per-image time (inf if never)."""
    if compile_s <= 0:
        return 0.0
    gain_s = (per_image_other_ms - per_image_ms) / 1000.0
    return compile_s / gain_s if gain_s > 0 else float("inf")


def payoff(
    extra_compile_s: float, per_image_other_ms: float, per_image_ms: float
) -> tuple[str, dict[str, float]]:
    """From when an option that costs ``extra_compile_s`` more to compile is ahead, as a note id
    (``payoff-after``, ``payoff-first-image``, ``payoff-never-slower``, ``payoff-lead-only``)
    and the number it quotes."""
    gain_ms = per_image_other_ms - per_image_ms
    if gain_ms > 0:
        if extra_compile_s <= 0:
            return "payoff-first-image", {}
        images = break_even_images(extra_compile_s, per_image_other_ms, per_image_ms)
        return "payoff-after", {"images": images}
    if extra_compile_s < 0:
        lead = -extra_compile_s * 1000.0 / max(-gain_ms, 1e-9)
        return "payoff-lead-only", {"images": lead}
    return "payoff-never-slower", {}
