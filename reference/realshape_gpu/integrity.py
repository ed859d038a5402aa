"""The accelerator study's own figures are the real-shape study's (2)-(4), recomputed the same
way (`reference.realshape.integrity`)."""

from reference.realshape.integrity import check

__all__ = ["check"]
