"""Real shapes on an accelerator: the real-shape study's comparison where the models are served,
on a CUDA GPU in bfloat16 at 512-pixel shapes.

Idea
====
`reference.realshape` times every inference-time technique on diffusers' production classes on
the reference CPU, where compute decides latency. A user who serves Stable Diffusion 1.5 or
DiT-XL/2 does it on a GPU, where the balance moves back: a bfloat16 step of DiT-XL/2 at batch 1
is a few milliseconds of matrix work against a few milliseconds of kernel launches, so a
technique that removes FLOPs without removing launches (low rank, pruning) can keep less of its
estimate than on the CPU, and one that skips whole network calls (caching, forecasting) keeps
more. The same loops, groups, counterparts and equations (1)-(4) of `reference.realshape.bench`
are measured here, with three changes of configuration:

* ``device="cuda"``, ``dtype="bfloat16"``: every loop ends by waiting for the device, so the
  host clock times the work (`reference.realshape.timing.denoising_loop`); a technique that
  rewrites weights is applied in float32 and cast (`reference.realshape.timing.applied`);
* ``side=64``: 512-pixel images, SD 1.5's published resolution and DiT-XL/2's 512-pixel model
  (its position embeddings are built for 64x64 latents);
* ``repeats=20``, ``warmup=2``: a loop takes tens of milliseconds, so more rounds are cheap,
  and the first runs on a GPU also pay for library handles and kernel selection.

What this measures, and what not
================================
Cost only, at random weights, on one accelerator: its name, driver-visible model and the torch
build are in the result's provenance. Latency at batch 1 in eager mode (compilation aside) is
partly launch overhead on such a chip; that is the regime a batch-1 server is in, not a flaw of
the measurement. Only the shape of the comparison is shared with the CPU study: the two results
are not one series (other hardware, precision and resolution).

Sources: as `reference.realshape.bench`; DiT-XL/2 at 512 pixels: Peebles and Xie 2023
(arXiv:2212.09748), Table 4.
"""

from __future__ import annotations

from dataclasses import replace

from reference.realshape.bench import MATCH, MODELS, OPTIONS, TECHNIQUES, Config
from reference.realshape.bench import QUICK as QUICK
from reference.realshape.bench import demo as demo
from reference.realshape.bench import measure as measure

__all__ = ["CONTRACT", "FULL", "MATCH", "MODELS", "OPTIONS", "QUICK", "TECHNIQUES", "Config"]

CONTRACT = 2
SLUG = "realshape-gpu"
FULL = replace(Config(), side=64, repeats=20, warmup=2, device="cuda", dtype="bfloat16")
"""The standard configuration: a CUDA device, bfloat16, 64x64 latents, 20 rounds."""
