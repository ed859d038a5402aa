"""``python -m glossary``: the same command line as ``glossary`` (see ``--help``)."""

from glossary.console import main

raise SystemExit(main())
