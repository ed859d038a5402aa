"""The production appliers build their tensors beside the model's weights.

On a model whose parameters live on a GPU, a tensor an applier creates on the CPU (a calibration
input, a zero bias, a ridge, a null class label) stops the application with a device mismatch:
the first accelerator run of the real-shape study stopped so in pruning. CI has no GPU, so
PyTorch's ``meta`` device stands in for one here: an operation that mixes a CPU tensor with a
meta one fails where it would fail on a CUDA model, and meta tensors need no memory.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from reference.zoo import shapes

META = torch.device("meta")


def test_example_inputs_follow_the_model_device_and_dtype() -> None:
    model = shapes.tiny("unet2d-condition").to(META)
    inputs = shapes.example_inputs(model)
    assert {v.device for v in inputs.values() if isinstance(v, torch.Tensor)} == {META}
    half = shapes.tiny("dit").to(torch.bfloat16)
    placed = shapes.example_inputs(half)
    assert placed["hidden_states"].dtype == torch.bfloat16
    assert placed["class_labels"].dtype == torch.long  # labels and timesteps keep theirs
    assert torch.equal(
        shapes.example_inputs(shapes.tiny("dit"))["class_labels"], placed["class_labels"]
    )


def test_a_batchnorm_folds_into_a_bias_free_convolution_on_its_device() -> None:
    from reference.conv_fusion.fold import fold_bn_weights

    bn = nn.BatchNorm2d(4).eval().to(META)
    w, b = fold_bn_weights(torch.empty(4, 3, 3, 3, device=META), None, bn)
    assert w.device == b.device == META


def test_groupnorm_folds_stay_on_the_device() -> None:
    from diffusers.models.attention_processor import Attention

    from reference.conv_fusion.groupnorm import fold_attention_norm_affine, frozen_groupnorm

    gn = nn.GroupNorm(2, 4, affine=False).to(META)
    frozen = frozen_groupnorm(gn, torch.empty(1, 4, 3, 3, device=META))
    assert all(t.device == META for t in frozen.buffers())
    attn = Attention(query_dim=8, heads=2, dim_head=4, norm_num_groups=2, bias=False).to(META)
    fold_attention_norm_affine(attn)
    assert attn.to_q.bias is not None and attn.to_q.bias.device == META


def test_the_whitened_factorisation_stays_on_the_device() -> None:
    from reference.low_rank_inference.factorize import spectrum

    layer = nn.Linear(6, 5).to(META)
    try:
        found = spectrum(layer, torch.empty(6, 6, device=META))
    except NotImplementedError as exc:  # a linear-algebra kernel without a meta version
        pytest.skip(f"meta has no kernel for this factorisation here: {exc}")
    assert found.s.device == META


def test_the_null_class_of_guidance_is_on_the_device() -> None:
    from reference.classifier_guidance.production import unconditional_inputs

    model = shapes.tiny("dit").to(META)
    assert unconditional_inputs(model, None)["class_labels"].device == META


def test_pruning_calibrates_beside_the_model() -> None:
    from reference.pruning.production import stand_in_loss

    model = shapes.tiny("unet2d-condition").to(META)
    loss = stand_in_loss(batch=1, t_max=1000, seed=0)(model)
    assert loss.device == META
