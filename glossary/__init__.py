"""The diffusion-efficiency glossary: entries in es, ru and en, their schema, lookup and exports.

This package must stay light: importing it (and running the ``glossary`` command's lookup path)
never imports torch, numpy or diffusers.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
