"""The dataset every reference implementation uses: scikit-learn's bundled 8x8 digits.

Why this data set
=================
``sklearn.datasets.load_digits`` ships inside scikit-learn (no download ever): 1,797 grey-scale
8x8 images of handwritten digits 0-9 with integer intensities 0..16. It is small enough that a
whole model zoo trains on a 2-core CPU in minutes, yet structured enough that a bad sampler
produces visibly wrong digits and a measurable distribution shift.

Canvas: 16x16 (bilinear upsampling of the 8x8 originals)
========================================================
All images are served on a 16x16 canvas by default. The upsampling adds no information, but it
gives the architectures the shapes that the techniques need:

* a U-Net with three resolution levels (16 -> 8 -> 4), so skip connections, down/up blocks and
  attention at the lowest resolution exist as in real diffusion U-Nets (DeepCache-style feature
  caching, pruning and convolution fusion act on exactly these);
* a DiT with patch size 2 gets 8 x 8 = 64 tokens, enough for attention to matter;
* an autoencoder with 4x downsampling gets a 4x4 latent (the latent-diffusion setting);
* the compute per sample is large enough (4x that of 8x8) that caching, pruning and fusion change
  latency measurably instead of disappearing in Python overhead.

``size=8`` returns the original resolution (no resampling) for anyone who wants it.

Scaling and split
=================
Pixels are mapped linearly from 0..16 to [-1, 1] (``x / 8 - 1``), the range diffusion models are
trained in. Upsampling uses ``torch.nn.functional.interpolate(mode="bilinear",
align_corners=False, antialias=False)``, which keeps values inside [-1, 1].

The split is fixed: ``sklearn.model_selection.train_test_split(test_size=300, stratify=y,
random_state=0)`` -> 1,497 training and 300 test images (29-31 per class). Everything in the zoo is
trained on the training split only; the test split is the reference distribution of the
Fréchet digits distance (`reference.harness.quality`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F

Split = Literal["train", "test"]

NUM_CLASSES = 10
"""Digits 0-9. Conditional models reserve label ``NULL_CLASS`` for "no label"."""
NULL_CLASS = 10
"""The extra label used for unconditional sampling and classifier-free guidance."""
TEST_SIZE = 300
SPLIT_SEED = 0
DEFAULT_SIZE = 16


@lru_cache(maxsize=1)
def _split_arrays() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    images = bunch.images.astype(np.float32)  # (1797, 8, 8), values 0..16
    labels = bunch.target.astype(np.int64)
    idx = np.arange(len(labels))
    train_idx, test_idx = train_test_split(
        idx, test_size=TEST_SIZE, stratify=labels, random_state=SPLIT_SEED
    )
    return {
        "train": (images[np.sort(train_idx)], labels[np.sort(train_idx)]),
        "test": (images[np.sort(test_idx)], labels[np.sort(test_idx)]),
    }


@lru_cache(maxsize=8)
def _tensors(split: Split, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    if split not in ("train", "test"):
        raise ValueError(f"load_digits_tensors: split must be 'train' or 'test', got {split!r}")
    if size < 8:
        raise ValueError(f"load_digits_tensors: size must be >= 8, got {size}")
    images, labels = _split_arrays()[split]
    x = torch.from_numpy(images).unsqueeze(1) / 8.0 - 1.0  # [N, 1, 8, 8] in [-1, 1]
    if size != 8:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.contiguous(), torch.from_numpy(labels)


def load_digits_tensors(
    split: Split, size: int = DEFAULT_SIZE
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(x, y)`` for ``split`` ("train" or "test").

    ``x`` is a float32 tensor ``[N, 1, size, size]`` in [-1, 1], ``y`` an int64 tensor ``[N]`` of
    labels 0..9. Results are cached in-process; each call returns fresh copies, so callers may
    modify them.
    """
    x, y = _tensors(split, size)
    return x.clone(), y.clone()


def to_unit_range(x: torch.Tensor) -> torch.Tensor:
    """Map images from [-1, 1] to [0, 1] (for plotting), clamping out-of-range values."""
    return ((x + 1.0) / 2.0).clamp(0.0, 1.0)


def fingerprint() -> dict[str, str]:
    """What the provenance of a result records about the data: the data set, the split rule and
    the sha256 of the split's images and labels (train, then test), so that a different
    scikit-learn copy of the digits or a changed split is visible in every result."""
    import hashlib

    digest = hashlib.sha256()
    for split in ("train", "test"):
        images, labels = _split_arrays()[split]
        digest.update(np.ascontiguousarray(images).tobytes())
        digest.update(np.ascontiguousarray(labels).tobytes())
    return {
        "dataset": "sklearn.datasets.load_digits",
        "split": f"train_test_split(test_size={TEST_SIZE}, stratify=y, random_state={SPLIT_SEED})",
        "sha256": digest.hexdigest(),
    }
