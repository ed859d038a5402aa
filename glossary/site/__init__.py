"""The site generator, one module per concern, started by :mod:`glossary.mkdocs_hooks`.

* :mod:`~glossary.site.generate`: what is generated where, and :func:`generate` itself;
* :mod:`~glossary.site.markdown`: Markdown/HTML pieces and the escaping of entry text;
* :mod:`~glossary.site.formatting`: numbers, intervals, dates and labels for the locale;
* :mod:`~glossary.site.results`: reading the result files through the shared schema;
* :mod:`~glossary.site.benchmark`: the measured part of a technique page;
* :mod:`~glossary.site.terms`: the page of one entry;
* :mod:`~glossary.site.production`: a technique page's "On a diffusers model" section, its
  classes read from the reference code's constants without importing it;
* :mod:`~glossary.site.indexes` and :mod:`~glossary.site.compare`: the A-Z, category and
  comparison pages;
* :mod:`~glossary.site.downloads`: the exports offered on the downloads page;
* :mod:`~glossary.site.search`: the accent-blind search index, after the build;
* :mod:`~glossary.site.writing`: writing only what changed, through :mod:`glossary.safewrite`.
"""
