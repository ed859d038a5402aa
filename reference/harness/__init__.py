"""The measurement harness shared by all reference implementations.

Modules
-------
* :mod:`~reference.harness.sampling` - ``sample(eps_fn, scheduler, noise, ...)``, ``make_noise``,
  ``model_eps_fn``, ``count_nfe``, the ``EpsFn`` type (one loop for baselines, techniques and
  controls) and the cached standard baseline ``teacher_samples(n, steps)``.
* :mod:`~reference.harness.quality` - ``frechet_digits_distance`` (FDD) with ``fdd_floor`` and
  ``fdd_ceiling``, ``class_accuracy``, ``within_class_diversity``, ``trajectory_deviation``.
* :mod:`~reference.harness.cost` - ``compare_latency`` (interleaved, median + IQR, bootstrap
  interval of the speedup), ``count_flops``, ``bytes_saved_for_backward``, ``count_parameters``,
  ``peak_rss_of``.
* :mod:`~reference.harness.results` - what a benchmark returns (``Measurement`` of ``Row``,
  ``Headline``, ``aim``, ``note``, ``Figure``) and the result file the harness writes.
* :mod:`~reference.harness.schema` - the result schema (JSON Schema + cross-checks), torch-free.
* :mod:`~reference.harness.provenance` - hashes of all code and weights a result used; the check.
* :mod:`~reference.harness.cli` - the one technique command line; the technique contract.
* :mod:`~reference.harness.runner` - ``glossary bench``.
* :mod:`~reference.harness.plots` - ``save_grid``, ``bar_chart``, ``curve_plot``.

The data come from :mod:`reference.data`, the models from :mod:`reference.zoo`, the list of
techniques from :mod:`reference.registry`.

Writing a technique
-------------------
A technique is the package ``reference/<slug with underscores>/`` registered in
:mod:`reference.registry`: ``__init__.py`` (the teaching docstring and the public API), the
technique in files of at most ~300 lines, ``bench.py`` (the contract of
:mod:`reference.harness.cli`: ``Config``, ``FULL``, ``QUICK``, ``OPTIONS``, ``benchmark(cfg, out)``
and ``demo(cfg, out)``), ``locale/<lang>/LC_MESSAGES/<slug>.po`` (the words of its results, in
es, ru and en) and the two-line ``__main__.py``. ``benchmark`` returns a ``Measurement``; baseline,
technique and control start from the same noise; a control spends the technique's compute the
plain way (for example fewer DDIM steps)::

    def benchmark(cfg: Config, out: Path) -> Measurement:
        unet = zoo.load_teacher()
        noise, labels = make_noise(cfg.n, seed=0), class_labels(cfg.n)
        runs = {"base": ..., "fast": ..., "ctrl": ...}          # zero-argument samplers
        lat = compare_latency(runs, repeats=cfg.repeats, warmup=1)
        fd = {k: frechet_digits_distance(f()) for k, f in runs.items()}
        rows = [Row("base", {"method": "ddim", "steps": 50}, "baseline", {...}), ...]
        return Measurement(
            settings={"n": cfg.n}, metrics=metrics("latency_ms", "fd_digits"), rows=rows,
            headline=Headline("fast", speedup=lat.speedup["fast"],
                              speedup_interval=lat.speedup_interval("fast"),
                              speedup_limit=2.0, limit_kind="bound"),
            aims=[aim("speedup", lat.speedup["fast"], 1.5, ">=",
                      interval=lat.speedup_interval("fast"))],
            notes=[note("matched-cost", steps=25)], figures=[])

The harness adds slug, module, options and provenance, validates and writes the file. Rules of
thumb: compare at equal N (FDD is biased by sample count) and quote ``fdd_floor(n)``; time with
``compare_latency`` (never two separate loops); keep ``QUICK`` to seconds.

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
    "fdd_floor": "quality",
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
    # command line
    "Option": "cli",
    "at_least": "cli",
    "float_tuple": "cli",
    "int_tuple": "cli",
    "name_tuple": "cli",
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
