"""The measurements of [`reference.tpu_deployment.bench`][reference.tpu_deployment.bench]: five ways
to run the same DDIM loop.

``torch`` (the harness sampler on the diffusers U-Net, eager), ``compiled`` (the whole loop as one
XLA program), ``per-step`` (a jitted step dispatched from Python), and with ``full_rows`` the whole
loop sharded over the host devices and in bfloat16; plus a stream of requests served with and
without batch buckets. Everything runs on JAX's **CPU** backend.
[`quality_samplers`][reference.tpu_deployment.measure.quality_samplers] gives the samplers whose
quality the benchmark measures on paired noise seeds (torch, the compiled loop and, with
``full_rows``, its bfloat16 variant).
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
class Runs:
    """Raw outcome of [`measure`][reference.tpu_deployment.measure.measure] (latencies in ms,
    compile times in s)."""

    n: int
    steps: int
    latency: Any
    samples: dict[str, Any]
    compile_s: dict[str, float]
    max_abs: dict[str, float]
    stream: dict[str, dict[str, float]] = field(default_factory=dict)
    devices: int = 1


def _first_call(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


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


def measure(
    n: int,
    steps: int,
    guidance_scale: float,
    repeats: int,
    warmup: int,
    full_rows: bool,
    stream: Sequence[int] = (),
    buckets: Sequence[int] = (),
) -> Runs:
    """Run torch eager, the compiled JAX loop, per-step dispatch (and sharded/bf16 rows)."""
    require_jax()
    import jax.numpy as jnp
    import numpy as np
    import torch

    from reference import zoo
    from reference.harness import class_labels, compare_latency, make_noise, model_eps_fn, sample

    from .sampler import Sampler, data_mesh, ddim_tables
    from .unet import cast_params, nchw_to_nhwc, nhwc_to_nchw

    params, ucfg = load_teacher_params()
    unet = zoo.load_teacher()
    noise_t, labels_t = make_noise(n, seed=0), class_labels(n)
    noise, labels = nchw_to_nhwc(noise_t.numpy()), labels_t.numpy()
    tables = ddim_tables(zoo.teacher_scheduler(), steps)
    g = guidance_scale

    def torch_run() -> Any:
        eps = model_eps_fn(unet)
        return sample(
            eps, zoo.teacher_scheduler(), noise_t, steps=steps, labels=labels_t, guidance_scale=g
        )

    plain = Sampler(ucfg, tables, guidance_scale=g)
    placed = plain.place(params, noise, labels)
    runs: dict[str, Callable[[], Any]] = {
        "torch": torch_run,
        "compiled": lambda: plain.compiled(*placed),
        "per-step": lambda: plain.per_step(*placed),
    }
    devices = 1
    if full_rows:
        mesh = data_mesh()
        devices = mesh.size
        sharded = Sampler(ucfg, tables, guidance_scale=g, mesh=mesh)
        placed_sh = sharded.place(params, noise, labels)
        bf16 = Sampler(ucfg, tables, guidance_scale=g, compute_dtype=jnp.bfloat16)
        placed_bf = bf16.place(cast_params(params, jnp.bfloat16), noise, labels)
        runs["sharded"] = lambda: sharded.compiled(*placed_sh)
        runs["bf16"] = lambda: bf16.compiled(*placed_bf)

    samples: dict[str, Any] = {}
    first: dict[str, float] = {}
    for name, run in runs.items():
        with torch.inference_mode():
            out, first[name] = _first_call(run)
        samples[name] = (
            out if name == "torch" else torch.from_numpy(np.array(nhwc_to_nchw(np.asarray(out))))
        )
    with torch.inference_mode():
        lat = compare_latency(runs, repeats=repeats, warmup=warmup)
    compile_s = {k: max(first[k] - lat.median_ms(k) / 1000, 0.0) for k in runs if k != "torch"}
    ref = samples["torch"]
    max_abs = {k: float((v - ref).abs().max()) for k, v in samples.items()}
    served: dict[str, dict[str, float]] = {}
    if full_rows and stream:

        def factory() -> Any:
            return Sampler(ucfg, tables, guidance_scale=g)

        for policy, sizes in (("exact", ()), ("buckets", buckets)):
            served[policy] = serve_stream(factory, params, stream, sizes)
    return Runs(n, steps, lat, samples, compile_s, max_abs, served, devices)


def quality_samplers(
    n: int, steps: int, guidance_scale: float, full_rows: bool
) -> dict[str, Callable[[int], Any]]:
    """``{row: seed -> samples}``: torch, the compiled JAX loop and (``full_rows``) its bfloat16
    variant, each sampling ``n`` images NCHW from ``make_noise(n, seed)`` with balanced labels
    (the same noise for every row on a seed). The loops are new programs for this batch shape."""
    require_jax()
    import jax.numpy as jnp
    import numpy as np
    import torch

    from reference import zoo
    from reference.harness import class_labels, make_noise, model_eps_fn, sample

    from .sampler import Sampler, ddim_tables
    from .unet import cast_params, nchw_to_nhwc, nhwc_to_nchw

    params, ucfg = load_teacher_params()
    unet, labels = zoo.load_teacher(), class_labels(n)
    tables = ddim_tables(zoo.teacher_scheduler(), steps)

    def torch_run(seed: int) -> Any:
        with torch.inference_mode():
            eps = model_eps_fn(unet)
            sched = zoo.teacher_scheduler()
            noise = make_noise(n, seed)
            return sample(
                eps, sched, noise, steps=steps, labels=labels, guidance_scale=guidance_scale
            )

    def jax_run(sampler: Sampler, weights: Any) -> Callable[[int], Any]:
        def run(seed: int) -> Any:
            x = nchw_to_nhwc(make_noise(n, seed).numpy())
            out = sampler.compiled(*sampler.place(weights, x, labels.numpy()))
            return torch.from_numpy(np.array(nhwc_to_nchw(np.asarray(out))))

        return run

    runs: dict[str, Callable[[int], Any]] = {
        "torch": torch_run,
        "compiled": jax_run(Sampler(ucfg, tables, guidance_scale=guidance_scale), params),
    }
    if full_rows:
        bf16 = Sampler(ucfg, tables, guidance_scale=guidance_scale, compute_dtype=jnp.bfloat16)
        runs["bf16"] = jax_run(bf16, cast_params(params, jnp.bfloat16))
    return runs


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
