"""What benchmarks declare alike (`reference.harness.declared`): columns by direction and unit,
and a sampling benchmark's ending (settings with the sampler facts, the real-digits row last)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from reference.harness import compare as cmp
from reference.harness import declared, sizes
from reference.harness.results import STANDARD_METRICS, Metric
from reference.harness.scores import real_row


@dataclass(frozen=True)
class _Config(sizes.Scored):
    steps: int = 3


def test_columns_carry_their_direction_and_unit() -> None:
    assert declared.lower("a", "b", unit="ms") == {
        "a": Metric("ms", "lower"),
        "b": Metric("ms", "lower"),
    }
    assert declared.higher("gain", unit="x") == {"gain": Metric("x", "higher")}
    assert declared.lower() == {}
    assert all(k in STANDARD_METRICS for k in declared.SAMPLED_COLUMNS)


def test_settings_keep_every_field_the_facts_and_let_a_benchmark_drop_one() -> None:
    cfg = _Config(n_quality=20, seeds=(0, 1))
    s = declared.sampled_settings(cfg, rank=4)
    assert s == {"n_quality": 20, "seeds": (0, 1), "steps": 3, **declared.SAMPLED, "rank": 4}
    latent = declared.sampled_settings(cfg, ode="unclipped-latent", scheduler=None)
    assert latent["ode"] == "unclipped-latent" and "scheduler" not in latent
    assert latent["quality_reference"] == "held-out-half"


def _sample(scale: float):
    return lambda seed: scale * torch.randn(4, 2, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def measured() -> cmp.Measured:
    comparison = cmp.Comparison(
        variants=(
            cmp.Variant("base", {"method": "base"}, "baseline", _sample(1.0), lambda: None),
            cmp.Variant("fast", {"method": "fast"}, "technique", _sample(2.0), lambda: None),
        ),
        metrics={"size": Metric("", "lower")},
        score=lambda x, same_seed: {"size": float(x.abs().mean())},
        seeds=(0, 1),
        aims=(),
        headline=cmp.HeadlineSpec("fast", quality="size"),
        repeats=2,
        warmup=0,
    )
    return cmp.measure(comparison)


def test_the_ending_puts_the_real_digits_row_last_at_the_run_n(measured) -> None:
    cfg = _Config(n_quality=20, seeds=(0, 1))
    extra = real_row(40).as_row(*declared.REAL_METRICS)
    extra.id = "extra"
    out = declared.sampled_outcome(measured, cfg, notes=[], figures=[], extra_rows=[extra], k=1)
    rows = out.body["rows"]
    assert [r["id"] for r in rows] == ["base", "fast", "extra", rows[-1]["id"]]
    expected = real_row(cfg.n_quality).as_row(*declared.REAL_METRICS)
    assert rows[-1]["id"] == expected.id and rows[-1]["values"] == expected.values
    assert rows[-1]["role"] == "reference"
    settings = out.body["settings"]  # JSON-ready: the seeds tuple is a list
    assert settings == {**declared.sampled_settings(cfg, k=1), "seeds": [0, 1]}
    assert out.figures == []
