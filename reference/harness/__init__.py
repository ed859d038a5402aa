"""The measurement harness shared by all reference implementations.

Modules
-------
* :mod:`~reference.data` - the 16x16 digits: ``load_digits_tensors(split)``.
* :mod:`~reference.harness.sampling` - ``sample(eps_fn, scheduler, noise, ...)``, ``make_noise``,
  ``model_eps_fn``, ``count_nfe`` (one loop for baselines, techniques and controls) and the
  cached standard baseline ``teacher_samples(n, steps)``.
* :mod:`~reference.harness.quality` - ``frechet_digits_distance`` (FDD) with ``fdd_floor`` and
  ``fdd_ceiling``, ``class_accuracy``, ``within_class_diversity``, ``trajectory_deviation``.
* :mod:`~reference.harness.cost` - ``compare_latency`` (interleaved, median + IQR),
  ``count_flops``, ``bytes_saved_for_backward``, ``count_parameters``, ``peak_rss_of``.
* :mod:`~reference.harness.results` - ``BenchmarkResult`` (the result-file schema), ``metrics``,
  ``aim``, ``provenance``, ``write_result``, ``check_results``.
* :mod:`~reference.harness.runner` - ``glossary bench``; the ``TECHNIQUES`` registry.
* :mod:`~reference.harness.plots` - ``save_grid``, ``bar_chart``, ``curve_plot``.
The models come from :mod:`reference.zoo` (``load_teacher()``, ``teacher_scheduler()``, ...).

Writing a technique module
--------------------------
A technique ``reference/<module>.py`` implements the idea in small functions, and exposes
``benchmark(quick: bool) -> BenchmarkResult``. Baseline and technique start from the same noise;
a control spends the technique's compute the plain way (here: fewer DDIM steps)::

    from reference import zoo
    from reference.harness import (BenchmarkResult, Headline, Row, aim, compare_latency,
                                   frechet_digits_distance, make_noise, metrics,
                                   model_eps_fn, output_dir, provenance, sample, class_labels)

    def benchmark(quick: bool) -> BenchmarkResult:
        n, steps = (40, 10) if quick else (300, 50)
        unet = zoo.load_teacher()
        noise, labels = make_noise(n, seed=0), class_labels(n)
        fast_eps = my_technique(unet)                    # the thing this module teaches
        runs = {
            "baseline": lambda: sample(model_eps_fn(unet), zoo.teacher_scheduler(), noise,
                                       steps=steps, labels=labels),
            "technique": lambda: sample(fast_eps, zoo.teacher_scheduler(), noise,
                                        steps=steps, labels=labels),
            "control": lambda: sample(model_eps_fn(unet), zoo.teacher_scheduler(), noise,
                                      steps=steps // 2, labels=labels),
        }
        lat = compare_latency(runs, repeats=3 if quick else 10, warmup=1, threads=2)
        fd = {k: frechet_digits_distance(f()) for k, f in runs.items()}
        rows = [Row(name, role, {"latency_ms": lat.median_ms(k), "fd_digits": fd[k]},
                    {"latency_ms": lat.iqr_ms(k)})
                for k, name, role in [("baseline", f"DDIM {steps}", "baseline"),
                                      ("technique", "my technique", "technique"),
                                      ("control", f"DDIM {steps // 2}", "control")]]
        return BenchmarkResult(
            slug="my-technique", module=__name__, title="...", quick=quick,
            settings={"n": n, "steps": steps, "threads": 2},
            metrics=metrics("latency_ms", "fd_digits"), rows=rows,
            headline=Headline(speedup=lat.speedup["technique"], speedup_limit=2.0,
                              quality_ratio=fd["technique"] / fd["baseline"],
                              quality_metric="fd_digits"),
            aims=[aim(">= 1.5x faster", lat.speedup["technique"], 1.5, ">=")],
            notes=[], figures=[], provenance=provenance([__file__]))

Rules of thumb: compare at equal N (FDD is biased by sample count) and quote ``fdd_floor(n)``;
time with ``compare_latency`` (never two separate loops); keep ``quick`` runs to seconds; write
figures to ``output_dir(quick) / "<slug>.png"`` and list their file names in ``figures``.

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
    "Headline": "results",
    "MetricSpec": "results",
    "Provenance": "results",
    "Row": "results",
    "STANDARD_METRICS": "results",
    "aim": "results",
    "check_results": "results",
    "metrics": "results",
    "output_dir": "results",
    "provenance": "results",
    "read_result": "results",
    "validate_result": "results",
    "write_result": "results",
    # runner
    "TECHNIQUES": "runner",
    "write_and_report": "runner",
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
