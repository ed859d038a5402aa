"""What benchmarks declare alike (`reference.harness.declared`, `reference.harness.builders`):
columns by direction and unit, a counted row, a held-out comparison, a quick preset,
and a sampling benchmark's ending (settings with the sampler facts, the real-digits row last)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from reference.harness import builders, declared, sizes
from reference.harness import compare as cmp
from reference.harness.results import STANDARD_METRICS, Metric
from reference.harness.sampling import class_labels, make_noise
from reference.harness.scores import real_row


@dataclass(frozen=True)
class _Config(sizes.Scored):
    steps: int = 3


@dataclass(frozen=True)
class _LatencyConfig(sizes.Scored, sizes.Timed):
    pass


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


def test_a_counted_row_samples_every_seed_and_times_the_latency_batch() -> None:
    calls: list[tuple[torch.Tensor, torch.Tensor]] = []

    def run(noise: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, float]:
        calls.append((noise, labels))
        return noise * 0.5, 7

    cfg = _LatencyConfig(n_quality=20, seeds=(0, 1), batch_latency=4)
    v = builders.counted_variant(cfg, "row", {"method": "m"}, "technique", run, counted="nfe")
    assert v.sample is not None and v.timed is not None
    x, counted = v.sample(3)
    assert counted == {"nfe": 7.0}
    assert torch.equal(calls[0][0], make_noise(20, 3))  # (3): the quality seed's noise
    assert torch.equal(calls[0][1], class_labels(20)) and torch.equal(x, 0.5 * calls[0][0])
    v.timed()
    for got, expected in zip(calls[1], sizes.latency_inputs(4), strict=True):
        assert torch.equal(got, expected)  # (4): the one latency batch
    only_timed = builders.counted_variant(
        cfg, "t", {}, "control", run, counted="nfe", sampled=False, facts={"gflops": 1.0}
    )
    assert only_timed.sample is None and only_timed.facts == {"gflops": 1.0}
    untimed = builders.counted_variant(cfg, "u", {}, "control", run, counted="nfe", timed=False)
    assert untimed.timed is None


def test_quick_takes_the_shared_sizes_the_config_has_and_its_own() -> None:
    scored = builders.quick(_Config, steps=1)
    assert (scored.n_quality, scored.seeds, scored.steps) == (sizes.MIN_QUALITY, (0, 1), 1)
    timed = builders.quick(_LatencyConfig, batch_latency=2)
    assert (timed.batch_latency, timed.repeats, timed.warmup) == (2, 2, 0)
    timed.validate()  # the quick sizes are valid sizes
