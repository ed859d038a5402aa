"""``python -m reference.feature_caching``: see ``--help``."""

from .bench import main

raise SystemExit(main())
