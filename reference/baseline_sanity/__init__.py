"""The baseline sanity study: does the baseline sampler converge as it takes more steps?

See `reference.baseline_sanity.bench`; ``python -m reference.baseline_sanity --bench`` writes
``reference/results/baseline-sanity.json``.
"""
