"""Low-rank inference: replace Linear and convolution layers by truncated-SVD factor pairs.

Idea
====
A dense layer multiplies by a matrix ``W`` (``out x in``; a k x k convolution is the matrix
``out x (in k k)`` applied to every image patch). If ``W`` is close to a rank-``r`` matrix,
``W ~ B A`` with ``A: r x in`` and ``B: out x r``, then computing ``B (A x)`` costs
``r (in + out)`` multiply-adds per row instead of ``in * out``: cheaper whenever
``r < in * out / (in + out)`` (the *break-even rank*, 47 for a 96 x 96 matrix, 76 for 96 -> 384).

The best rank-``r`` approximation in Frobenius (and spectral) norm is the truncated SVD
(Eckart & Young 1936, doi:10.1007/BF02288367): with ``W = U diag(s) V^T``,
``W_r = U_r diag(s_r) V_r^T`` and the relative error is ``sqrt(sum_{i>r} s_i^2 / sum_i s_i^2)``.
We split it symmetrically, ``A = diag(sqrt s_r) V_r^T`` and ``B = U_r diag(sqrt s_r)``, so a
Linear becomes ``Linear(in, r, bias=False) -> Linear(r, out)`` and a k x k convolution becomes a
k x k convolution to ``r`` channels followed by a 1 x 1 convolution (Denton et al. 2014,
arXiv:1404.0736; Jaderberg et al. 2014, BMVC, doi:10.5244/C.28.88, go further and also split the
k x k filters into k x 1 and 1 x k ones). At ``r = min(in, out)`` nothing is
truncated and the pair reproduces the layer to float rounding (tested).

Weight error is not what matters; output error is. Inputs of a trained layer occupy a few
directions only, so *activation-aware* truncation minimises ``E ||(W - W_r) x||^2`` over
calibration inputs instead: with the input second moment ``C = E[x x^T] = L L^T``, truncate the
SVD of ``W L`` and map back with ``L^{-1}`` (the whitening of SVD-LLM, Wang et al. 2024,
arXiv:2403.07378). Its
singular values then measure output error directly, so an energy threshold or a budget means
what it says.

Choosing ranks
==============
* **Energy threshold** ``tau``: per layer, the smallest ``r`` with ``sum_{i<=r} s_i^2 >= tau sum_i
  s_i^2`` ([`rank_for_energy`][reference.low_rank_inference.rank_for_energy]).
* **Global budget** ``rho``: all layers' singular values compete for ``rho`` times the layers' dense
  multiply-adds, greedily by relative energy per unit cost
  ([`ranks_for_budget`][reference.low_rank_inference.ranks_for_budget]). Layers whose chosen rank
  exceeds the break-even rank stay dense.

LoRA is the other low rank ========================== LoRA (Hu et al. 2021, arXiv:2106.09685) trains
``W + (alpha / r) B A`` with ``W`` frozen: the low rank makes *fine-tuning* cheap, and for inference
the adapter is merged back into ``W`` ([`LoRALinear`][reference.low_rank_inference.lora.LoRALinear],
``merged()``), so it neither speeds up nor slows down the deployed model. Truncated SVD is the
opposite: it changes the deployed architecture to make inference cheaper.

When to use it, and pitfalls
============================
* Useful when layers are wide and their inputs are effectively low-dimensional; pointless below
  the break-even rank's savings. Small matrices (the zoo's 96-wide DiT) are overhead- and
  bandwidth-bound on a CPU: two thin matrix multiplications may not be faster than one square
  one even at half the FLOPs. Measure the factorised layers *and* the whole model (Amdahl: the
  attention, norms and conditioning are untouched).
* Truncation error compounds through depth and sampling steps; check sample quality, not only
  per-layer error. Calibrate activation-aware SVD on inputs from the sampling trajectory (all
  noise levels), not only on clean data.
* Fine-tuning after factorisation recovers quality (SVD-LLM's parameter update); omitted here.
* A sampler has a cheaper, training-free way to spend fewer FLOPs: fewer denoising steps of the
  dense model. At ``S`` steps a factorisation with a fraction ``f`` of the dense FLOPs per forward
  costs what ``round(S f)`` dense steps cost; the benchmark's control is exactly that sampler,
  timed with the others, and low rank is only worth it if it beats that control.

Production: ``torch.linalg.svd`` / ``svd_lowrank``; the factorised layers are ordinary
``nn.Linear`` / ``nn.Conv2d`` pairs that any runtime executes; LoRA via ``peft`` and diffusers'
``load_lora_weights`` / ``fuse_lora``.

Package ======= ``reference/low_rank_inference/``:
[`factorize`][reference.low_rank_inference.factorize] (the matrix view, spectra, the factor-pair
layers, the closed-form output error), [`plan`][reference.low_rank_inference.plan] (rank selection,
model surgery, calibration, and the public shape ``LowRankConfig`` + ``apply_low_rank(model, config,
second_moments)``), [`lora`][reference.low_rank_inference.lora] (the contrast), and the benchmark in
[`measure`][reference.low_rank_inference.measure], [`figures`][reference.low_rank_inference.figures]
and [`bench`][reference.low_rank_inference.bench]. Run ``python -m reference.low_rank_inference``
for the demo, ``--bench`` for the benchmark (``--help`` for options):

    from reference import zoo
    from reference.low_rank_inference import LowRankConfig, apply_low_rank, dit_target_layers

    dit = zoo.load_dit()
    small, plan = apply_low_rank(dit, LowRankConfig(tuple(dit_target_layers(dit)), budget=0.5,
                                                    method="svd"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .factorize import (
        LowRankConv2d,
        LowRankLinear,
        Spectrum,
        break_even_rank,
        factorize_layer,
        input_second_moment,
        max_rank,
        output_error_curve,
        spectrum,
    )
    from .lora import LoRALinear, train_lora_demo
    from .plan import (
        DIT_TARGETS,
        FactorizationPlan,
        LowRankConfig,
        apply_low_rank,
        apply_plan,
        calibrate_second_moments,
        dit_target_layers,
        plan_factorization,
        rank_for_energy,
        ranks_for_budget,
        record_inputs,
    )

__all__ = [
    "DIT_TARGETS",
    "FactorizationPlan",
    "LoRALinear",
    "LowRankConfig",
    "LowRankConv2d",
    "LowRankLinear",
    "Spectrum",
    "apply_low_rank",
    "apply_plan",
    "break_even_rank",
    "calibrate_second_moments",
    "dit_target_layers",
    "factorize_layer",
    "input_second_moment",
    "max_rank",
    "output_error_curve",
    "plan_factorization",
    "rank_for_energy",
    "ranks_for_budget",
    "record_inputs",
    "spectrum",
    "train_lora_demo",
]

__getattr__ = attributes(__name__)
