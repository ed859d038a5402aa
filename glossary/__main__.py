"""``python -m glossary``: the same command line as ``glossary`` (see ``--help``)."""

from glossary.cli import main

raise SystemExit(main())
