"""The declared comparison (`reference.harness.compare`): what a benchmark declares, the harness
measures and derives the same way every time; the derived figures follow from the raw ones
kept in the body."""

from __future__ import annotations

import statistics
import time

import pytest
import torch

from reference.harness import compare as cmp
from reference.harness.results import Metric
from reference.harness.stats import paired_ratio

SEEDS = (0, 1, 2)


def _noise(seed: int) -> torch.Tensor:
    return torch.randn(8, 4, generator=torch.Generator().manual_seed(seed))


def _score(x: torch.Tensor, same_seed: dict) -> dict[str, float]:
    return {"size": float(x.abs().mean()) + 1.0}


def _sleeper(seconds: float):
    return lambda: time.sleep(seconds)


SEEN: list[tuple[str, int]] = []
"""(variant, seed) of every sample call of the latest `_comparison`."""


def _comparison(**over) -> cmp.Comparison:
    seen = SEEN
    seen.clear()

    def sampler(id: str, scale: float):
        def sample(seed: int) -> torch.Tensor:
            seen.append((id, seed))
            return scale * _noise(seed)

        return sample

    kw = dict(
        variants=(
            cmp.Variant(
                "base",
                {"method": "base"},
                "baseline",
                sampler("base", 1.0),
                _sleeper(0.004),
                {"params_m": 2.0},
            ),
            cmp.Variant(
                "fast", {"method": "fast"}, "technique", sampler("fast", 1.5), _sleeper(0.001)
            ),
            cmp.Variant("ctl", {"method": "ctl"}, "control", sampler("ctl", 3.0), _sleeper(0.002)),
        ),
        metrics={"size": Metric("", "lower")},
        score=_score,
        seeds=SEEDS,
        aims=(
            cmp.QualityAim("quality", "fast", "base", "size", "<=", 10.0),
            cmp.SpeedupAim("speed", "fast", "base", ">", 1.0),
            cmp.SpeedupAim("vs-control", "fast", "ctl", ">", 1.0),
        ),
        headline=cmp.HeadlineSpec("fast", quality="size", limit=4.0, limit_kind="estimate"),
        repeats=5,
        warmup=1,
    )
    kw.update(over)
    return cmp.Comparison(**kw)


@pytest.fixture(scope="module")
def measured() -> tuple[cmp.Measured, list[tuple[str, int]]]:
    m = cmp.measure(_comparison())
    return m, list(SEEN)


def test_every_variant_samples_every_seed(measured) -> None:
    _, seen = measured
    assert sorted(seen) == sorted((v, s) for v in ("base", "fast", "ctl") for s in SEEDS)


def test_rows_are_derived_from_the_seeds_and_the_rounds(measured) -> None:
    measured = measured[0]
    rows = {r.id: r for r in measured.rows}
    for r in rows.values():
        per_seed = r.seeds["size"]
        assert len(per_seed) == len(SEEDS)
        assert r.values["size"] == pytest.approx(statistics.fmean(per_seed), rel=1e-12)  # (1)
        lo, hi = r.intervals["size"]
        assert lo < r.values["size"] < hi  # (2)
    lat = measured.latency
    assert lat is not None
    base = rows["base"]
    assert base.values["params_m"] == 2.0 and "speedup" not in base.intervals
    for id in ("fast", "ctl"):
        expected = statistics.median(lat.stats["base"].samples_ms) / statistics.median(
            lat.stats[id].samples_ms
        )
        assert rows[id].values["speedup"] == pytest.approx(expected, rel=1e-12)  # (4)
    # The sleeps (4, 1, 2 ms) order the speedups whatever the machine's overhead.
    assert rows["fast"].values["speedup"] > rows["ctl"].values["speedup"] > 1.0


def test_aims_and_headline_follow_the_declaration(measured) -> None:
    measured = measured[0]
    aims = {a.id: a for a in measured.aims}
    assert set(aims) == {"quality", "speed", "vs-control"}
    q = aims["quality"]
    expected = paired_ratio(
        measured.table.per_seed("fast", "size"), measured.table.per_seed("base", "size")
    )
    assert q.measured == pytest.approx(expected.value) and (q.row, q.against) == ("fast", "base")
    assert q.state == "met"  # a ratio near 1.4 against a target of 10
    assert aims["vs-control"].against == "ctl"
    h = measured.headline
    assert h is not None and h.row == "fast" and h.quality_metric == "size"
    assert h.speedup == pytest.approx(aims["speed"].measured)
    assert h.speedup_limit == 4.0 and h.limit_kind == "estimate"


def test_outcome_keeps_the_raw_rounds_and_no_envelope(measured) -> None:
    measured = measured[0]
    out = cmp.outcome(measured, settings={"steps": 3}, notes=[], figures=[])
    body = out.body
    assert not set(cmp.ENVELOPE) & set(body)
    rows = {r["id"]: r for r in body["rows"]}
    lat = measured.latency
    assert lat is not None
    for id, row in rows.items():
        assert row["rounds"]["against"] == "base"
        assert row["rounds"]["latency_ms"] == lat.stats[id].samples_ms
        assert len(row["rounds"]["latency_ms"]) == 5
    assert body["headline"]["row"] == "fast" and body["settings"] == {"steps": 3}


def test_fidelity_is_measured_against_the_solution_of_the_same_noise() -> None:
    c = _comparison(solution=lambda seed: _noise(seed), aims=(), headline=cmp.HeadlineSpec("fast"))
    m = cmp.measure(c)
    rows = {r.id: r for r in m.rows}
    # base samples the solution's own noise: distance 0; fast is 1.5x it: RMS 0.5 x RMS(noise)
    assert rows["base"].values[cmp.FIDELITY] == 0.0
    rms = [float(_noise(s).pow(2).mean(dim=1).sqrt().mean()) for s in SEEDS]
    assert rows["fast"].seeds[cmp.FIDELITY] == pytest.approx([0.5 * r for r in rms], rel=1e-6)
    body = cmp.outcome(m, settings={}, notes=[], figures=[]).body
    assert cmp.FIDELITY in body["metrics"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"headline": cmp.HeadlineSpec("nope")}, "headline row 'nope'"),
        ({"aims": (cmp.SpeedupAim("x", "fast", "nope", ">", 1.0),)}, "unknown row 'nope'"),
    ],
)
def test_a_declaration_naming_unknown_rows_is_refused(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _comparison(**change)


def test_duplicate_ids_no_baseline_and_a_stray_pair_are_refused() -> None:
    base, fast, _ = _comparison().variants
    with pytest.raises(ValueError, match="duplicate variant ids"):
        _comparison(variants=(base, base))
    lone = cmp.Variant("t", {}, "technique", base.sample)
    with pytest.raises(ValueError, match="one variant must be the baseline"):
        _comparison(variants=(lone,), aims=(), headline=cmp.HeadlineSpec("t"))
    stray = cmp.Variant("f2", {}, "technique", base.sample, base.timed, against="nowhere")
    with pytest.raises(ValueError, match="timed against 'nowhere'"):
        _comparison(variants=(base, fast, stray))


def test_each_variant_is_timed_against_its_own_pair() -> None:
    """A sweep holds one baseline per batch size: a variant naming its pair gets its row's
    speedup, interval, raw rounds and the headline against that pair, not the first baseline."""
    small = cmp.Variant("b1-base", {"method": "base"}, "baseline", timed=_sleeper(0.004))
    big = cmp.Variant("b8-base", {"method": "base"}, "baseline", timed=_sleeper(0.002))
    fast = cmp.Variant(
        "b8-fast", {"method": "fast"}, "technique", timed=_sleeper(0.001), against="b8-base"
    )
    c = _comparison(
        variants=(small, big, fast),
        aims=(cmp.SpeedupAim("speed", "b8-fast", "b8-base", ">", 1.0),),
        headline=cmp.HeadlineSpec("b8-fast"),
        repeats=3,
    )
    m = cmp.measure(c)
    rows = {r.id: r for r in m.rows}
    own = m.latency.speedup_over("b8-fast", "b8-base")
    assert rows["b8-fast"].values["speedup"] == own
    assert rows["b8-fast"].intervals["speedup"] == m.latency.speedup_interval(
        "b8-fast", against="b8-base"
    )
    assert (m.headline.speedup, m.aims[0].measured) == (own, own)
    body = cmp.outcome(m, settings={}, notes=(), figures=()).body
    pairs = {r["id"]: r["rounds"]["against"] for r in body["rows"]}
    assert pairs == {"b1-base": "b1-base", "b8-base": "b1-base", "b8-fast": "b8-base"}


def test_a_training_variant_is_timed_with_autograd_and_the_others_without() -> None:
    seen: dict[str, bool] = {}

    def probe(id: str):
        return lambda: seen.__setitem__(id, torch.is_grad_enabled())

    base = cmp.Variant("base", {}, "baseline", timed=probe("base"))
    train = cmp.Variant("train", {}, "technique", timed=probe("train"), grad=True)
    c = _comparison(variants=(base, train), aims=(), headline=cmp.HeadlineSpec("train"))
    cmp.measure(c)
    assert seen == {"base": False, "train": True}


def test_a_bounded_metric_keeps_its_interval_in_range() -> None:
    """(7): two seeds of an accuracy at 0.96 and 1.0 give a t interval reaching 1.23; the row
    shows [lo, 1], and the result records the range the check clips with."""
    values = {0: 0.96, 1: 1.0}

    def accuracy(x: torch.Tensor, same_seed: dict) -> dict[str, float]:
        seed = 0 if torch.equal(x, _noise(0)) else 1
        return {"accuracy": values[seed]}

    base = cmp.Variant("base", {}, "baseline", sample=_noise)
    c = _comparison(
        variants=(base,),
        metrics={"accuracy": Metric("", "higher")},
        score=accuracy,
        seeds=(0, 1),
        aims=(),
        headline=cmp.HeadlineSpec("base"),
    )
    m = cmp.measure(c)
    lo, hi = m.rows[0].intervals["accuracy"]
    assert hi == 1.0 and lo < 0.96
    assert cmp.clip_interval((-0.2, 0.3), (0.0, None)) == (0.0, 0.3)
    assert cmp.clip_interval((1.2, 1.3), (0.0, 1.0)) == (1.0, 1.0)
    body = cmp.outcome(m, settings={}, notes=(), figures=()).body
    assert body["metrics"]["accuracy"]["range"] == [0.0, 1.0]


def test_a_ratio_aim_on_a_non_positive_metric_is_refused() -> None:
    def signed(x: torch.Tensor, same_seed: dict) -> dict[str, float]:
        return {"size": float(x.mean())}  # crosses zero between seeds

    c = _comparison(score=signed, aims=(cmp.QualityAim("q", "fast", "base", "size", "<", 1.0),))
    with pytest.raises(ValueError, match="needs positive values"):
        cmp.measure(c)


def test_a_timed_only_variant_is_timed_and_counted_but_never_sampled() -> None:
    """A variant without ``sample`` (a deployment only timed, a memory saver only counted)
    gets latency and facts in its row, no per-seed values, and a fact aim on its facts."""
    base = cmp.Variant(
        "base", {"method": "base"}, "baseline", timed=_sleeper(0.002), facts={"memory_mb": 40.0}
    )
    lean = cmp.Variant(
        "lean", {"method": "lean"}, "technique", timed=_sleeper(0.003), facts={"memory_mb": 10.0}
    )
    c = _comparison(
        variants=(base, lean),
        aims=(cmp.FactAim("memory", "lean", "base", "memory_mb", "<", 0.5),),
        headline=cmp.HeadlineSpec("lean", memory_ratio=0.25),
        repeats=3,
    )
    m = cmp.measure(c)
    rows = {r.id: r for r in m.rows}
    assert SEEN == []
    assert rows["lean"].seeds == {}
    assert rows["lean"].values["memory_mb"] == 10.0
    assert "latency_ms" in rows["lean"].values and "speedup" in rows["lean"].intervals
    (a,) = m.aims
    assert (a.measured, a.interval, a.state) == (0.25, None, "met")


def test_a_fact_aim_on_a_missing_fact_is_refused() -> None:
    c = _comparison(aims=(cmp.FactAim("memory", "fast", "base", "memory_mb", "<", 0.5),))
    with pytest.raises(ValueError, match="has no fact 'memory_mb'"):
        cmp.measure(c)


def test_aims_of_every_kind_carry_their_parameters() -> None:
    """A value aim judges the row's own mean (1), a difference aim the paired difference, and
    every aim keeps the parameters its message quotes."""
    c = _comparison(
        aims=(
            cmp.QualityAim("own", "fast", None, "size", "<=", 10.0, kind="value", params={"k": 3}),
            cmp.QualityAim("diff", "fast", "base", "size", ">", 0.0, kind="difference"),
            cmp.SpeedupAim("speed", "fast", "base", ">", 1.0, params={"steps": 4}),
        )
    )
    m = cmp.measure(c)
    own, diff, speed = m.aims
    assert own.measured == pytest.approx(statistics.mean(m.table.per_seed("fast", "size")))
    assert own.against is None and own.params == {"k": 3} and speed.params == {"steps": 4}
    fast, base = m.table.per_seed("fast", "size"), m.table.per_seed("base", "size")
    want = statistics.mean(a - b for a, b in zip(fast, base, strict=True))
    assert diff.measured == pytest.approx(want, rel=1e-12)  # one mean, two orders of summation
    assert diff.state == "met"  # 1.5x the same noise is larger on every seed


def test_a_variant_scores_itself_and_counts_while_sampling() -> None:
    """A variant's own ``score`` replaces the comparison's for it, and a sampler that returns
    ``(samples, counted)`` gets those counts as per-seed values of its row."""

    def counting(seed: int):
        return _noise(seed), {"full_steps": float(10 + seed)}

    def own(x: torch.Tensor, same_seed: dict) -> dict[str, float]:
        return {"size": 7.0}

    base = _comparison().variants[0]
    adaptive = cmp.Variant("adaptive", {}, "technique", sample=counting, score=own)
    m = cmp.measure(
        _comparison(variants=(base, adaptive), aims=(), headline=cmp.HeadlineSpec("adaptive"))
    )
    rows = {r.id: r for r in m.rows}
    assert rows["adaptive"].seeds["full_steps"] == [10.0, 11.0, 12.0]
    assert rows["adaptive"].values["size"] == 7.0 and rows["base"].values["size"] != 7.0


def test_a_limit_from_the_measurement_and_comparisons_joined_into_one_result() -> None:
    """A headline limit may be computed from what was measured; a second comparison (other
    seeds, other rounds) joins the result with its rows, aims and raw rounds."""
    main = _comparison(
        headline=cmp.HeadlineSpec(
            "fast", quality="size", limit=lambda m: 2 * m.latency.speedup["fast"]
        )
    )
    m = cmp.measure(main)
    assert m.headline.speedup_limit == pytest.approx(2 * m.headline.speedup)
    layer = cmp.Variant("layer-base", {}, "baseline", timed=_sleeper(0.002))
    layer_fast = cmp.Variant("layer-fast", {}, "technique", timed=_sleeper(0.001))
    other = cmp.measure(
        _comparison(
            variants=(layer, layer_fast),
            aims=(cmp.SpeedupAim("layers", "layer-fast", "layer-base", ">", 1.0),),
            headline=cmp.HeadlineSpec("layer-fast"),
            repeats=3,
        )
    )
    body = cmp.outcome(m, settings={}, notes=(), figures=(), more=(other,)).body
    ids = [r["id"] for r in body["rows"]]
    assert ids == ["base", "fast", "ctl", "layer-base", "layer-fast"]
    assert [a["id"] for a in body["aims"]] == ["quality", "speed", "vs-control", "layers"]
    rounds = {r["id"]: r["rounds"] for r in body["rows"]}
    assert rounds["layer-fast"]["against"] == "layer-base"
    assert len(rounds["layer-fast"]["latency_ms"]) == 3 and len(rounds["fast"]["latency_ms"]) == 5
    assert body["headline"]["row"] == "fast"
    with pytest.raises(ValueError, match="appears twice"):
        cmp.outcome(m, settings={}, notes=(), figures=(), more=(m,))
