"""The shared sizes of `reference.harness.sizes`: bounds derived from the real reference, the
bases' checks and options, and the latency batch."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest
import torch

from reference.harness import sizes
from reference.harness.scores import MAX_REAL_N


def test_the_quality_bounds_follow_the_held_out_reference() -> None:
    assert sizes.MAX_QUALITY % sizes.CLASSES == 0
    assert sizes.MAX_QUALITY <= MAX_REAL_N < sizes.MAX_QUALITY + sizes.CLASSES  # (2)
    assert sizes.MIN_QUALITY == 2 * sizes.CLASSES  # (1): two samples per class


@dataclass(frozen=True)
class _Example(sizes.Scored, sizes.Timed):
    batch_latency: int = 8
    steps: int = 4

    def validate(self) -> None:
        super().validate()
        sizes.check_one_of("steps", self.steps, "steps_grid", (4, 8))


def test_a_config_inherits_the_bases_fields_and_their_checks() -> None:
    names = [f.name for f in fields(_Example)]
    assert names == ["batch_latency", "repeats", "warmup", "n_quality", "seeds", "steps"]
    _Example().validate()
    with pytest.raises(ValueError, match=r"^--n-quality must be a multiple of 10"):
        _Example(n_quality=25).validate()
    with pytest.raises(ValueError, match=r"^--steps 3 is not one of --steps-grid \[4, 8\]$"):
        _Example(steps=3).validate()


def test_the_options_cover_the_bases_fields_with_their_bounds() -> None:
    scored = {o.name for o in sizes.SCORED_OPTIONS}
    timed = {o.name for o in sizes.TIMED_OPTIONS}
    assert scored == {f.name for f in fields(sizes.Scored)}
    assert timed == {f.name for f in fields(sizes.Timed)}


def test_the_latency_batch_is_the_same_for_every_caller_and_class_balanced() -> None:
    noise, labels = sizes.latency_inputs(20)
    again, _ = sizes.latency_inputs(20)
    assert torch.equal(noise, again)
    assert torch.bincount(labels, minlength=10).tolist() == [2] * 10
