"""The real-shape study on a CUDA accelerator: the same comparison as `reference.realshape`, at
the models' 512-pixel shapes in bfloat16, where a data-centre GPU serves them.

See `reference.realshape_gpu.bench`; ``glossary bench realshape-gpu`` runs it on a machine with a
CUDA device and writes ``reference/results/realshape-gpu.json`` (elsewhere it says so and runs
nothing).
"""
