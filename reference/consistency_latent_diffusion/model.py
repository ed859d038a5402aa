"""The committed consistency model of the zoo, read back for sampling.

The zoo stores an epsilon-output latent U-Net; the consistency function is read through the
boundary-condition parametrisation f(x, t) = c_skip(t) x + c_out(t) x0(x, t) (Song et al., 2023,
arXiv:2303.01469), which `reference.consistency_latent_diffusion.core` applies. Kept apart from
the benchmark so that code which only samples (the stacking study, a user's script) imports
neither the benchmark nor its command line.

Pitfall: the model works in the VAE's latent space; decode its samples with the zoo VAE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .train import ZOO_NAME

if TYPE_CHECKING:
    import torch


def load_consistency_model() -> torch.nn.Module:
    """The committed zoo consistency model: an epsilon-output U-Net read through c_skip/c_out."""
    from reference import zoo

    return zoo.load(ZOO_NAME)
