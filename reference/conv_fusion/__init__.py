"""Convolution fusion: fold BatchNorm (and fuse ReLU) into the preceding convolution.

Idea
====
At inference a ``BatchNorm`` layer no longer computes statistics: it applies the **frozen**
running mean ``mu`` and variance ``var`` it collected during training (Ioffe & Szegedy 2015,
arXiv:1502.03167). A frozen BatchNorm is therefore a per-channel affine map, and an affine map
after a convolution (itself linear in its input) is absorbed by rescaling the convolution's
filters and shifting its bias. For output channel ``c`` with ``s_c = gamma_c / sqrt(var_c +
eps)``:

    BN(conv(x))_c = s_c * (W_c * x + b_c - mu_c) + beta_c
                  = (s_c W_c) * x + (s_c (b_c - mu_c) + beta_c)
                  =      W'_c * x + b'_c

One convolution with ``W' = s W`` and ``b' = s (b - mu) + beta`` computes exactly what the pair
computed (up to float rounding), so the whole BatchNorm pass - one read and one write of the
activation tensor, plus one operator dispatch - disappears. The ReLU that usually follows cannot
be folded into weights (it is not linear), but it can run **in place** on the convolution's
fresh output, and graph compilers fuse it into the convolution's epilogue. This is the fold
described for integer inference by Jacob et al. 2017 (arXiv:1712.05877, section 3.2) and done by
every deployment tool chain (TensorRT, ONNX Runtime, TFLite, OpenVINO).

How it is implemented here ==========================
[`fuse_conv_bn_relu`][reference.conv_fusion.fuse_conv_bn_relu] is a ``torch.fx`` graph rewrite (Reed
et al. 2021, arXiv:2112.08429) over any eval-mode model that ``torch.fx.symbolic_trace`` can trace:
it finds the pattern ``conv -> BatchNorm [-> ReLU]`` in the traced graph (wherever the modules live,
not only inside ``nn.Sequential``), checks that the convolution's output feeds nothing but the
BatchNorm, swaps the convolution for the folded one
([`fold_conv_bn`][reference.conv_fusion.fold_conv_bn], written from the formula above), erases the
BatchNorm node and, when a ReLU follows, replaces conv + ReLU by
[`ConvReLU`][reference.conv_fusion.ConvReLU] (convolution, then ``relu_`` in place). It is checked
against the two maintained PyTorch APIs: ``torch.nn.utils.fusion.fuse_conv_bn_eval`` (the weight
fold) and ``torch.ao.quantization.fuse_modules`` (module-level fusion of named Conv-BN-ReLU groups).

Why GroupNorm cannot be folded ============================== Diffusion U-Nets (DDPM, Stable
Diffusion, the zoo teacher) normalise with **GroupNorm** (Wu & He 2018, arXiv:1803.08494). Its mean
and variance are computed from the current input, per sample and group, at inference too: they are
not constants, so no fixed ``(W', b')`` reproduces them.
[`groupnorm_fold_error`][reference.conv_fusion.groupnorm_fold_error] (one layer) and
[`freeze_groupnorms`][reference.conv_fusion.freeze_groupnorms] (the whole U-Net) demonstrate it:
GroupNorm statistics frozen on one input (what folding would need) are exact on that input and wrong
on any other. What *can* be fused in such networks:

* the GroupNorm's own affine ``gamma, beta`` into a **linear** map that directly follows it - in
  diffusers' attention block ``group_norm -> to_q / to_k / to_v`` with nothing in between
  ([`fold_attention_norm_affine`][reference.conv_fusion.fold_attention_norm_affine]; the
  normalisation itself stays);
* consecutive linear maps that read the same input, e.g. the Q, K and V projections, into one wider
  matrix multiplication (diffusers' ``Attention.fuse_projections`` + ``FusedAttnProcessor2_0``;
  [`fuse_unet_attention`][reference.conv_fusion.fuse_unet_attention] applies both to a
  ``UNet2DModel``, which, unlike the transformer models, has no ``fuse_qkv_projections()`` method in
  diffusers 0.42).

When to use it, and pitfalls
============================
* Always for BatchNorm networks at inference (CNN classifiers, BN denoisers such as DnCNN, Zhang
  et al. 2016, arXiv:1608.03981). Never during training: the statistics must be frozen first
  (``model.eval()``; the rewrite refuses BatchNorm in training mode).
* The fold is exact algebra but not bit-exact arithmetic: rounding differs by ~1e-7 relative.
* Only when the convolution's output feeds the BatchNorm alone; a shared convolution module
  called twice, a BatchNorm before a zero-padded convolution, or a transposed convolution
  (weight layout ``[in, out, ...]``) need other handling and are left untouched here.
* FLOPs do not change (BN is not counted by FLOP counters); the gain is memory traffic and
  operator overhead, so it is largest for narrow layers and small batches, and an optimising
  compiler may already capture it: ``torch.compile`` (Inductor) fuses BN + ReLU into one
  elementwise kernel, and with ``torch._inductor.config.freezing = True`` folds BN into the
  weights itself. The benchmark measures both.

Production APIs: ``torch.ao.quantization.fuse_modules`` / ``torch.nn.utils.fusion``,
``torch.fx.experimental.optimization.fuse``, Inductor's freezing pass, TensorRT and ONNX Runtime
graph optimisations, diffusers' ``fuse_qkv_projections``.

Package
=======
``reference/conv_fusion/``: [`fold`][reference.conv_fusion.fold] (the fold, the fx rewrite and the
public shape ``FusionConfig`` + ``apply_conv_fusion(model, config)``),
[`groupnorm`][reference.conv_fusion.groupnorm] (why GroupNorm cannot be folded; Q/K/V fusion),
[`denoiser`][reference.conv_fusion.denoiser] (the toy BN denoiser and the traffic estimate), and the
benchmark in [`measure`][reference.conv_fusion.measure], [`unet`][reference.conv_fusion.unet],
[`rows`][reference.conv_fusion.rows] and [`bench`][reference.conv_fusion.bench]. Run
``python -m reference.conv_fusion`` for the demo, ``--bench`` for the benchmark (``--help`` for
options):

    from reference import zoo
    from reference.conv_fusion import FusionConfig, apply_conv_fusion

    fused, report = apply_conv_fusion(zoo.load_classifier(), FusionConfig(fuse_relu=True))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.lazy import attributes

if TYPE_CHECKING:  # what a type checker and the documentation read; at run time, lazily
    from .denoiser import (
        ToyBNDenoiser,
        TrafficEstimate,
        batchnorm_pass,
        calibrate_batchnorm,
        make_toy_denoiser,
        traffic_estimate,
    )
    from .fold import (
        TOLERANCE,
        ConvReLU,
        FusionConfig,
        FusionReport,
        apply_conv_fusion,
        conv_bn_relu_groups,
        fold_bn_weights,
        fold_conv_bn,
        fuse_conv_bn_relu,
        fuse_with_torch_ao,
        max_abs_diff,
    )
    from .groupnorm import (
        FrozenGroupNorm,
        GroupNormFoldError,
        fold_attention_norm_affine,
        freeze_groupnorms,
        frozen_groupnorm,
        fuse_unet_attention,
        groupnorm_fold_error,
    )

__all__ = [
    "TOLERANCE",
    "ConvReLU",
    "FrozenGroupNorm",
    "FusionConfig",
    "FusionReport",
    "GroupNormFoldError",
    "ToyBNDenoiser",
    "TrafficEstimate",
    "apply_conv_fusion",
    "batchnorm_pass",
    "calibrate_batchnorm",
    "conv_bn_relu_groups",
    "fold_attention_norm_affine",
    "fold_bn_weights",
    "fold_conv_bn",
    "freeze_groupnorms",
    "frozen_groupnorm",
    "fuse_conv_bn_relu",
    "fuse_unet_attention",
    "fuse_with_torch_ao",
    "groupnorm_fold_error",
    "make_toy_denoiser",
    "max_abs_diff",
    "traffic_estimate",
]

__getattr__ = attributes(__name__)
