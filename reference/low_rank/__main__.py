"""``python -m reference.low_rank``: see ``--help``."""

from .bench import main

raise SystemExit(main())
