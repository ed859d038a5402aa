"""``python -m reference.pruning``: see ``--help``."""

from .bench import main

raise SystemExit(main())
