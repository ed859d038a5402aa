"""The site generator: one module per concern, called from :mod:`glossary.mkdocs_hooks`."""
