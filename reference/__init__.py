"""Reference implementations of diffusion-efficiency techniques, one module per technique.

Run one with ``python -m reference.<name>``; the shared measurement harness lives in
`reference.harness`.
"""
