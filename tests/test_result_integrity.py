"""Result integrity (`reference.harness.integrity`): every committed result's derived figures
agree with their recomputation, and each hand edit of issue 25 is refused in one line, by the
check (``glossary bench --check``) and by the site."""

from __future__ import annotations

import copy
import functools
import json
import math
import statistics
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from glossary.site import results as site
from reference.harness import integrity as I
from reference.harness.provenance import RESULTS_DIR, check_one
from reference.registry import get
from reference.stacking import integrity as stacking_integrity

COMMITTED = sorted(p.stem for p in RESULTS_DIR.glob("*.json"))
FIGURES = {
    "accelerate-method": 228,
    "async-pipeline": 88,
    "baseline-sanity": 84,
    "classifier-guidance": 239,
    "consistency-latent-diffusion": 125,
    "conv-fusion": 327,
    "feature-caching": 174,
    "gradient-checkpointing": 35,
    "grid-search": 72,
    "low-rank-inference": 165,
    "mixture-of-experts": 65,
    "pruning": 162,
    "realshape": 170,
    "scheduler-tradeoff": 163,
    "stacking": 1380,
    "stochastic-reparameterization": 34,
    "timestep-distillation": 176,
    "tpu-deployment": 69,
}
"""How many figures the check recomputes in each committed result (a rerun that changes a
result's rows updates its count here). Gradient checkpointing keeps no per-seed values, so
little of it is derivable; the stacking study's matrices are most of its count."""


def _committed(slug: str) -> dict[str, Any]:
    return json.loads((RESULTS_DIR / f"{slug}.json").read_text(encoding="utf-8"))


def _write(folder: Path, slug: str, data: dict[str, Any] | str) -> Path:
    path = folder / f"{slug}.json"
    text = data if isinstance(data, str) else json.dumps(data, indent=2)
    path.write_text(text, encoding="utf-8")
    return path


def _one_line_each(lines: list[str]) -> None:
    assert lines and all("\n" not in line for line in lines)


# --- every committed result passes, and not vacuously ---------------------------------------


def test_every_result_is_counted() -> None:
    assert sorted(FIGURES) == COMMITTED  # 15 techniques and the three studies


@pytest.mark.parametrize("slug", COMMITTED)
def test_every_committed_result_agrees_with_its_recomputation(slug: str) -> None:
    data, problems = I.read_checked(RESULTS_DIR / f"{slug}.json")
    assert data is not None and problems == []
    assert I.audit(data).figures == FIGURES[slug]


def test_the_check_reads_results_without_torch_or_scipy() -> None:
    code = (
        "import sys\n"
        "from reference.harness.integrity import read_checked\n"
        "from reference.harness.provenance import RESULTS_DIR\n"
        "assert all(read_checked(p)[1] == [] for p in RESULTS_DIR.glob('*.json'))\n"
        "assert 'torch' not in sys.modules and 'scipy' not in sys.modules\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert out.returncode == 0, out.stderr


# --- the statistics are the benchmarks' ------------------------------------------------------


def test_t_quantile_equals_scipys() -> None:
    from scipy.stats import t

    for dof in range(1, 120):
        # the root of (6) is found to the last bit; scipy's to about 1e-15 relative
        assert I.t_quantile(dof) == pytest.approx(float(t.ppf(0.975, dof)), rel=1e-12)


def test_t_interval_and_paired_ratio_equal_the_harness_stats() -> None:
    from reference.harness import stats

    a, b = [8.1, 9.4, 7.7, 10.2, 8.8], [7.0, 8.9, 7.1, 9.0, 8.3]
    mean, span = I.t_interval(a)
    want = stats.mean_interval(a)
    # same float64 formulas; only the t quantile comes from (6) instead of scipy
    assert mean == want[0] and span == pytest.approx(want[1], rel=1e-13)
    ratio, ratio_span = I.paired_ratio(a, b)
    summary = stats.paired_ratio(a, b)
    assert ratio == pytest.approx(summary.value, rel=1e-14)
    assert ratio_span == pytest.approx(summary.interval, rel=1e-13)


def test_round_figures_equal_the_latency_comparison() -> None:
    from reference.harness.cost import LatencyComparison, _stats

    base = [101.0, 99.5, 103.2, 98.7, 100.4, 102.1, 99.9, 100.8]
    fast = [60.2, 58.9, 61.5, 59.3, 60.0, 62.4, 58.1, 59.8]
    stats = {"base": _stats(base), "fast": _stats(fast)}
    speedup = {k: stats["base"].median_ms / s.median_ms for k, s in stats.items()}
    lat = LatencyComparison("base", stats, speedup, 1, len(base), 0, ["base", "fast"])
    got = I.round_figures(fast, base)
    # the same statistics module and the same seeded bootstrap: bit for bit
    assert got["latency_ms"] == lat.median_ms("fast") and got["spread"] == lat.iqr_ms("fast")
    assert got["speedup"] == lat.speedup["fast"]
    assert got["interval"] == lat.speedup_interval("fast")


def test_the_study_enumeration_is_the_studys(monkeypatch: pytest.MonkeyPatch) -> None:
    from reference.stacking import bench, study

    monkeypatch.setattr(study, "compose", lambda members, cfg: None)  # no pipelines: ids only
    recorded = _committed("stacking")["settings"]
    for cfg in (
        bench.Config(
            elements=tuple(recorded["elements"]),
            variants=tuple((e, k) for e, k in recorded["variants"]),
            control_steps=tuple(recorded["control_steps"]),
        ),
        bench.QUICK,
    ):
        settings = {
            "elements": list(cfg.elements),
            "variants": [list(v) for v in cfg.variants],
            "control_steps": list(cfg.control_steps),
        }
        assert stacking_integrity.phase1_ids(settings) == [c.id for c in study.phase1_configs(cfg)]


# --- the defects of issue 25, each on a copy -------------------------------------------------


def _refused(tmp_path: Path, slug: str, data: dict[str, Any] | str) -> tuple[list[str], str]:
    """What the check says of ``data`` written as ``<slug>.json``, and the site's one line."""
    check_dir, site_dir = tmp_path / "check", tmp_path / "site"
    check_dir.mkdir()
    site_dir.mkdir()
    path = _write(check_dir, slug, data)
    _write(site_dir, slug, data)
    _, problems = I.read_checked(path)
    with pytest.raises(site.SiteGenError) as caught:
        site.load_results(site_dir)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{site_dir / (slug + '.json')}: ")
    _one_line_each(problems)
    assert all(line.startswith(f"{path}: ") for line in problems)
    return [line.removeprefix(f"{path}: ") for line in problems], message


def test_a_hand_set_headline_speedup_is_named(tmp_path: Path) -> None:
    """A schema-4 result: the digest of the body fails first, then the edited figure, named
    with the value it is recomputed to from the row's raw rounds."""
    data = _committed("feature-caching")
    measured = next(r for r in data["rows"] if r["id"] == "dc3")["values"]["speedup"]
    data["headline"]["speedup"] = 9.99
    problems, message = _refused(tmp_path, "feature-caching", data)
    assert problems[0].startswith("digest: recorded ") and len(problems) == 2
    assert problems[1] == (
        f"headline.speedup: recorded 9.99, recomputed {measured} (dc3.values.speedup)"
    )
    assert "digest: recorded" in message


def test_a_changed_row_value_is_named(tmp_path: Path) -> None:
    data = _committed("feature-caching")
    row = data["rows"][1]
    mean = row["values"]["fd_digits"]
    edited = round(mean * 1.05, 3)
    row["values"]["fd_digits"] = edited
    problems, _ = _refused(tmp_path, "feature-caching", data)
    assert problems[0].startswith("digest: recorded ")
    assert problems[1:] == [f"rows[1].values.fd_digits: recorded {edited}, recomputed {mean}"]


def test_a_changed_seed_moves_its_mean_and_interval(tmp_path: Path) -> None:
    data = _committed("pruning")
    data["rows"][0]["seeds"]["fd_digits"][2] += 0.5
    problems, _ = _refused(tmp_path, "pruning", data)
    # a schema-4 result: the digest of the body fails first, then each derived figure
    assert problems[0].startswith("digest: recorded ")
    assert problems[1].startswith("rows[0].values.fd_digits: recorded ")
    assert problems[2].startswith("rows[0].intervals.fd_digits: recorded ")


def test_another_techniques_body_under_this_slug_is_named(tmp_path: Path) -> None:
    data = _committed("pruning")
    own = _committed("feature-caching")
    data.update({k: own[k] for k in ("slug", "module", "provenance")})
    problems, _ = _refused(tmp_path, "feature-caching", data)
    # pruning's body keeps its own digest, which no longer matches under another slug
    assert len(problems) == 2 and problems[0].startswith("digest: recorded ")
    assert problems[1].startswith("catalog: message ") and "feature-caching" in problems[1]


def test_the_check_of_a_technique_names_the_edit_and_keeps_staleness(tmp_path: Path) -> None:
    data = _committed("feature-caching")
    data["headline"]["speedup"] = 9.99
    data["provenance"]["files"]["reference/feature_caching/deepcache.py"] = "0" * 64
    _write(tmp_path, "feature-caching", data)
    lines = check_one(get("feature-caching"), tmp_path)
    _one_line_each(lines)
    assert any("headline.speedup: recorded 9.99" in line for line in lines)
    assert any("deepcache.py changed since it was measured" in line for line in lines)
    assert all(line.endswith("rerun: glossary bench feature-caching") for line in lines)


@pytest.mark.parametrize("row", ["fusion", "ddim-16", "student8", "pruned.lowrank"])
def test_a_deleted_stacking_row_is_named(tmp_path: Path, row: str) -> None:
    data = _committed("stacking")
    data["rows"] = [r for r in data["rows"] if r["id"] != row]
    data["aims"] = [a for a in data["aims"] if row not in (a["row"], a["against"])]
    problems, _ = _refused(tmp_path, "stacking", data)
    assert problems[0].startswith("digest: recorded ")  # schema 4: the body's digest first
    assert problems[1] == f"rows: recorded 66 configurations, recomputed 67 (missing {row!r})"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("speedup", "values.speedup: recorded 9.99"),  # recomputed from the raw rounds
        ("baseline_ms", "values.baseline_ms: recorded"),  # its group baseline's latency
        ("vs_counterpart", "values.vs_counterpart: recorded"),  # (4), from both rows' rounds
    ],
)
def test_a_hand_edit_of_the_real_shape_study_is_named(field: str, expected: str) -> None:
    data = _committed("realshape")
    rid = "sd15.forecasting"
    i, row = next((i, r) for i, r in enumerate(data["rows"]) if r["id"] == rid)
    row["values"][field] = 9.99 if field == "speedup" else 2 * row["values"][field]
    problems = I.audit(data).problems
    assert problems[0].startswith("digest: recorded ")  # schema 4: the body's digest first
    named = (f"rows[{i}].{expected}", f"rows[{rid}].{expected}")
    assert any(p.startswith(named) for p in problems[1:]), problems


def test_the_stacking_matrices_and_frontier_are_recomputed() -> None:
    data = _committed("stacking")
    interaction, pareto = data["settings"]["interaction"][0][1], data["settings"]["pareto"]
    data["settings"]["interaction"][0][1] = 2.0
    data["settings"]["pareto"] = pareto[1:]
    problems = I.audit(data).problems  # (the file stays schema-valid: its schema is not rerun)
    assert problems[0].startswith("digest: recorded ")  # schema 4: the body's digest first
    head, _, recomputed = problems[1].partition(", recomputed ")
    assert head == "settings.interaction[0][1]: recorded 2.0"
    # The recomputed figure is the committed one, within the check's relative tolerance of 1e-9.
    assert float(recomputed.split()[0]) == pytest.approx(interaction, rel=1e-9)
    assert problems[2].startswith(f"settings.pareto: recorded [{pareto[1]!r}")


def test_a_stacking_result_without_the_settings_it_enumerates_from_is_named() -> None:
    data = _committed("stacking")
    del data["settings"]["variants"]
    problems = I.audit(data).problems
    assert problems[0].startswith("digest: recorded ")  # schema 4: the body's digest first
    assert problems[1:] == ["settings.variants: missing or not a list (the study records it)"]


@pytest.mark.parametrize(
    ("literal", "says"),
    [
        ("NaN", "NaN is not a finite number"),
        ("Infinity", "Infinity is not a finite number"),
        ("1e308", "1e+308 is out of range (at most 1e+15 in size)"),
    ],
)
def test_a_number_out_of_range_is_named_with_its_field(
    tmp_path: Path, literal: str, says: str
) -> None:
    text = (RESULTS_DIR / "feature-caching.json").read_text(encoding="utf-8")
    value = _committed("feature-caching")["rows"][0]["values"]["latency_ms"]
    edited = text.replace(f'"latency_ms": {value!r}', f'"latency_ms": {literal}', 1)
    assert edited != text
    problems, _ = _refused(tmp_path, "feature-caching", edited)
    assert problems == [f"rows[0].values.latency_ms: {says}"]


def test_deep_nesting_is_refused_before_the_parser_recurses(tmp_path: Path) -> None:
    text = (RESULTS_DIR / "pruning.json").read_text(encoding="utf-8")
    nested = "[" * 100_000 + "]" * 100_000
    problems, _ = _refused(tmp_path, "pruning", text.rstrip()[:-1] + f', "x": {nested}}}')
    assert problems == ["cannot read result: nested deeper than 32 levels"]
    assert I.nesting_depth('{"a": "[[[[", "b": [[1]]}') == 3  # brackets in strings do not count


# --- schema 4: raw rounds and a digest --------------------------------------------------------


def _v4() -> dict[str, Any]:
    """A small schema-4 result built with the harness's own statistics (a fresh copy)."""
    return copy.deepcopy(_built_v4())


@functools.cache
def _built_v4() -> dict[str, Any]:
    """Two rows with per-seed FDD and interleaved timing rounds, the headline and two aims
    derived from them by `reference.harness.stats` and `reference.harness.cost`."""
    from reference.harness import stats
    from reference.harness.cost import LatencyComparison, _stats
    from reference.harness.results import aim

    own = _committed("feature-caching")
    fd = {"ddim50": [8.4, 9.1, 8.8, 9.6, 8.2], "dc3": [8.9, 9.8, 9.1, 10.3, 8.6]}
    rounds = {
        "ddim50": [1250.0, 1241.5, 1262.3, 1238.9, 1255.0, 1249.1, 1260.8, 1244.4],
        "dc3": [715.2, 709.8, 731.0, 704.4, 720.9, 712.3, 725.7, 711.1],
    }
    stats_ = {k: _stats(v) for k, v in rounds.items()}
    speedup = {k: stats_["ddim50"].median_ms / s.median_ms for k, s in stats_.items()}
    lat = LatencyComparison("ddim50", stats_, speedup, 1, 8, 0, ["ddim50", "dc3"])
    quality = stats.paired_ratio(fd["dc3"], fd["ddim50"])
    rows = []
    for r in own["rows"]:
        if r["id"] not in fd:
            continue
        summary = stats.summarize(fd[r["id"]])
        k = r["id"]
        rows.append(
            {
                "id": k,
                "config": r["config"],
                "role": r["role"],
                "values": {
                    "fd_digits": summary.value,
                    "latency_ms": lat.median_ms(k),
                    "speedup": speedup[k],
                },
                "intervals": {
                    "fd_digits": list(summary.interval),
                    "speedup": list(lat.speedup_interval(k)),
                },
                "spread": {"latency_ms": lat.iqr_ms(k)},
                "seeds": {"fd_digits": fd[k]},
                "rounds": {"against": "ddim50", "latency_ms": rounds[k]},
            }
        )
    span = lat.speedup_interval("dc3")
    aims = [
        aim("speedup", speedup["dc3"], 1.6, ">=", span, row="dc3", against="ddim50", interval_n=3),
        aim(
            "quality",
            quality.value,
            1.15,
            "<=",
            quality.interval,
            row="dc3",
            against="ddim50",
            interval_n=3,
        ),
    ]

    data = {
        **{k: own[k] for k in ("slug", "module", "standard", "quick", "options", "settings")},
        "schema_version": 4,
        "metrics": {k: own["metrics"][k] for k in ("latency_ms", "speedup", "fd_digits")},
        "rows": rows,
        "headline": {
            **own["headline"],
            "quality_metric": "fd_digits",
            "speedup": speedup["dc3"],
            "speedup_interval": list(span),
            "quality_ratio": quality.value,
            "quality_interval": list(quality.interval),
        },
        "aims": [json.loads(json.dumps(asdict(a))) for a in aims],
        "anomalies": [],
        "notes": [],
        "figures": [],
        "provenance": own["provenance"],
    }
    return I.seal(data)


def test_a_sealed_v4_result_passes_the_check_and_the_site(tmp_path: Path) -> None:
    data = _v4()
    assert data["digest"].startswith("sha256:") and len(data["digest"]) == 7 + 64
    assert I.schema_problems(data) == []
    assert I.check_result(data, "x.json") == []
    assert I.audit(data).figures >= 20  # rows (7)-(10) and (1)-(3), headline, aims, digest
    path = _write(tmp_path, "feature-caching", data)
    assert I.read_checked(path) == (data, [])
    assert check_one(get("feature-caching"), tmp_path) == []  # glossary bench --check
    assert "feature-caching" in site.load_results(tmp_path).by_slug


def test_the_digest_is_of_the_canonical_body() -> None:
    data = _v4()
    assert I.seal(data) == data  # sealing again changes nothing
    shuffled = dict(reversed(list(data.items())))
    assert I.digest(shuffled) == data["digest"]  # key order does not matter
    again = json.loads(json.dumps(data, indent=2, ensure_ascii=False))
    assert I.digest(again) == data["digest"]  # a written and read file keeps its digest
    assert '"digest"' not in I.canonical(data)


def test_an_edited_round_fails_the_digest(tmp_path: Path) -> None:
    data = _v4()
    data["rows"][1]["rounds"]["latency_ms"][0] = 815.2
    problems, _ = _refused(tmp_path, "feature-caching", data)
    assert problems[0] == f"digest: recorded {data['digest']!r}, recomputed {I.digest(data)!r}"
    # the round also moved the median, which the recomputation names after the digest
    assert problems[1].startswith("rows[1].values.latency_ms: recorded 713.75, recomputed ")


def test_an_edited_and_resealed_figure_fails_its_recomputation(tmp_path: Path) -> None:
    data = _v4()
    speed = data["rows"][1]["values"]["speedup"]
    data["rows"][1]["values"]["speedup"] = 1.9
    problems, _ = _refused(tmp_path, "feature-caching", I.seal(data))
    assert problems[0] == f"rows[1].values.speedup: recorded 1.9, recomputed {speed}"
    assert not any(p.startswith("digest") for p in problems)


def test_an_edited_and_resealed_round_moves_the_median(tmp_path: Path) -> None:
    data = _v4()
    rounds = data["rows"][1]["rounds"]["latency_ms"]
    rounds[:] = [x * 1.1 for x in rounds]
    problems, _ = _refused(tmp_path, "feature-caching", I.seal(data))
    want = statistics.median(rounds)
    assert problems[0].endswith(f"recomputed {want}")
    assert problems[0].startswith("rows[1].values.latency_ms: recorded ")


def test_v4_rounds_must_name_a_row_with_as_many_rounds(tmp_path: Path) -> None:
    data = _v4()
    data["rows"][1]["rounds"]["against"] = "nope"
    problems = I.schema_problems(I.seal(data))
    assert problems == ["rows[1].rounds.against: no row 'nope' with rounds"]
    assert math.isfinite(I.t_quantile(3))


def test_a_member_dropped_from_the_stacking_result_is_named_in_one_line(tmp_path: Path) -> None:
    """Dropping a member from ``settings.element_slugs`` of stacking.json (a hand edit that used
    to be reported as 9 to 65 lines about missing files) is one line naming the field, after the
    line of the body's digest."""
    from reference.stacking.provenance import check_stacking

    data = _committed("stacking")
    data["settings"]["element_slugs"].remove("pruning")
    (tmp_path / "stacking.json").write_text(json.dumps(data, indent=2))
    lines = check_stacking(tmp_path)
    assert len(lines) == 2 and "digest: recorded " in lines[0], lines
    assert "settings.element_slugs: not one entry per element" in lines[1], lines
