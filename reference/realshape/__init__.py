"""The real-shape study: each inference-time technique on diffusers' production classes at their
published shapes (Stable Diffusion 1.5's U-Net, DiT-XL/2), random weights, timed at batch 1.

See `reference.realshape.bench` for what is compared and how; ``python -m reference.realshape
--bench`` runs it and writes ``reference/results/realshape.json``.
"""
