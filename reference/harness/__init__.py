"""The measurement harness shared by all reference implementations.

Modules
=======
* `sampling` - ``sample(eps_fn, scheduler, noise, ...)``, ``make_noise``,
  ``model_eps_fn``, ``count_nfe``, the ``EpsFn`` type (one loop for baselines, techniques and
  controls) and the cached standard baseline ``teacher_samples(n, steps)``.
* `quality` - ``frechet_digits_distance`` (FDD), ``kernel_digits_distance``
  (KID), ``real_reference`` (class-balanced real digits at n), ``fdd_ceiling``,
  ``class_accuracy``, ``within_class_diversity``, ``trajectory_deviation``.
* `stats` - ``summarize`` (mean and t interval over seeds),
  ``paired_ratio`` (geometric mean of per-seed ratios), ``bootstrap_interval``.
* `seeds` - ``SEEDS``, ``N_QUALITY``, ``over_seeds`` (paired quality over
  noise seeds into a ``SeedTable``), ``real_reference_row``, ``quality_note``.
* `cost` - ``compare_latency`` (interleaved, median + IQR, bootstrap
  interval of the speedup), ``count_flops``, ``bytes_saved_for_backward``, ``count_parameters``,
  ``peak_rss_of``.
* `results` - what a benchmark returns (``Measurement`` of ``Row``,
  ``Headline``, ``aim``, ``note``, ``Figure``) and the result file the harness writes.
* `schema` - the result schema (JSON Schema + cross-checks), torch-free.
* `provenance` - hashes of all code and weights a result used; the check.
* `cli` - the one technique command line; the technique contract.
* `runner` - ``glossary bench``.
* `plots` - ``save_grid``, ``bar_chart``, ``curve_plot``.

The data come from `reference.data`, the models from `reference.zoo`, the list of
techniques from `reference.registry`.

Writing a technique
===================
A technique is the package ``reference/<slug with underscores>/`` registered in
`reference.registry`: ``__init__.py`` (the teaching docstring and the public API), the
technique in files of at most ~300 lines, ``bench.py`` (the contract of
`reference.harness.entry`: ``CONTRACT = 2``, ``Config``, ``FULL``, ``QUICK``, ``OPTIONS``,
``measure(cfg, staging)`` and ``demo(cfg, out)``), ``locale/<lang>/LC_MESSAGES/<slug>.po`` (the
words of its results, in es, ru and en) and the two-line ``__main__.py``
(`reference.harness.launch`). ``measure`` returns the declared comparison's outcome.

The measurement rules every benchmark follows:

* **Quality over paired seeds.** Every quality figure is measured on ``cfg.seeds`` (default
  `SEEDS`, five) at ``N_QUALITY`` (256) samples by
  `over_seeds`: on each seed, baseline, technique and control
  start from the same noise and labels. Rows carry the mean, the 95% interval and the per-seed
  values (``SeedTable.row_fields``); quality ratios are paired (``SeedTable.ratio``). Report the
  FDD and the KID; add `real_reference_row` and
  `quality_note`.
* **Latency** with `compare_latency`: one process, interleaved, at
  least 15 warmed-up rounds, the run's thread count (2 for standard runs); every speedup carries
  its bootstrap interval.
* **Aims** are claims, judged on intervals (``aim(..., interval=...)`` gives met, missed or
  inconclusive). A fact that holds by construction (a parameter count, the FLOP ratio of a
  fixed architecture) is a note, not an aim. Every approximate technique has a timed control
  that spends the same compute the plain way, and an aim against it.
* **Limits** come from the work the run actually did; ``limit_kind="bound"`` only for a true
  upper bound of the measured quantity (a speedup above it is flagged as an anomaly),
  ``"estimate"`` otherwise (a FLOP or NFE ratio is not a bound on a latency ratio).

A sketch:

    def benchmark(cfg: Config, out: Path) -> Measurement:
        unet = frozen(zoo.load_teacher())
        labels = class_labels(cfg.n)
        samplers = {k: (lambda seed, k=k: run(k, make_noise(cfg.n, seed), labels)) for k in KEYS}
        q = over_seeds(samplers, lambda key, x, same: quality_report(x, labels), cfg.seeds)
        lat = compare_latency(timed_runs, repeats=cfg.repeats, warmup=2)
        rows = [Row(k, CONFIGS[k], ROLES[k], *q.row_fields(k)) for k in KEYS]
        ratio = q.ratio("fast", "base", "fd_digits")
        return Measurement(
            settings=settings_of(cfg), metrics=metrics("latency_ms", "fd_digits", "kid_digits"),
            rows=[*rows, real_reference_row(cfg.n)],
            headline=speedup_headline("fast", lat, limit=2.0, limit_kind="estimate",
                                      quality_ratio=ratio.value, quality_interval=ratio.interval),
            aims=[aim("quality-vs-control", q.ratio("fast", "ctrl", "fd_digits").value, 1.0,
                      "<=", interval=q.ratio("fast", "ctrl", "fd_digits").interval)],
            notes=[quality_note(cfg.n, cfg.seeds), latency_note(cfg.repeats, cfg.batch)],
            figures=[])

The harness adds slug, module, options and provenance, validates and writes the file.
``QUICK`` keeps to seconds (two seeds, a few samples).

Names are imported lazily, so ``import reference.harness`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # data
    "load_digits_tensors": "reference.data",
    "NULL_CLASS": "reference.data",
    "NUM_CLASSES": "reference.data",
    "to_unit_range": "reference.data",
    # sampling
    "EpsFn": "sampling",
    "NFECounter": "sampling",
    "class_labels": "sampling",
    "count_nfe": "sampling",
    "guided_eps": "sampling",
    "make_noise": "sampling",
    "model_eps_fn": "sampling",
    "sample": "sampling",
    "teacher_samples": "sampling",
    "IMAGE_SHAPE": "sampling",
    "LATENT_SHAPE": "sampling",
    # quality
    "FeatureStats": "quality",
    "class_accuracy": "quality",
    "classifier_features": "quality",
    "fdd_ceiling": "quality",
    "kernel_digits_distance": "quality",
    "kernel_distance": "quality",
    "real_reference": "quality",
    "RealReference": "quality",
    "feature_stats": "quality",
    "frechet_digits_distance": "quality",
    "frechet_distance": "quality",
    "mse_per_sample": "quality",
    "psnr_per_sample": "quality",
    "quality_report": "quality",
    "real_diversity": "quality",
    "reference_stats": "quality",
    "trajectory_deviation": "quality",
    "within_class_diversity": "quality",
    # statistics over seeds
    "Summary": "stats",
    "bootstrap_interval": "stats",
    "mean_interval": "stats",
    "paired_ratio": "stats",
    "summarize": "stats",
    "N_QUALITY": "seeds",
    "SEEDS": "seeds",
    "SeedTable": "seeds",
    "over_seeds": "seeds",
    "quality_note": "seeds",
    "real_reference_row": "seeds",
    # cost
    "LatencyComparison": "cost",
    "LatencyStats": "cost",
    "bytes_saved_for_backward": "cost",
    "compare_latency": "cost",
    "count_flops": "cost",
    "count_parameters": "cost",
    "parameter_bytes": "cost",
    "peak_rss_bytes": "cost",
    "peak_rss_of": "cost",
    # results
    "Aim": "results",
    "BenchmarkResult": "results",
    "Figure": "results",
    "Headline": "results",
    "Measurement": "results",
    "Metric": "results",
    "Note": "results",
    "Row": "results",
    "STANDARD_METRICS": "results",
    "aim": "results",
    "metrics": "results",
    "note": "results",
    "read_result": "results",
    "settings_of": "results",
    "speedup_headline": "results",
    "write_result": "results",
    # schema
    "aim_state": "schema",
    "validate_result": "schema",
    # provenance
    "check_results": "provenance",
    # bounds of a Config
    "at_least": "bounds",
    "check_seeds": "bounds",
    # plots
    "bar_chart": "plots",
    "curve_plot": "plots",
    "save_grid": "plots",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reference.harness' has no attribute {name!r}")
    path = module if module.startswith("reference.") else f"{__name__}.{module}"
    value = getattr(importlib.import_module(path), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
